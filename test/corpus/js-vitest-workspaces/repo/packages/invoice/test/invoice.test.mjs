import { describe, expect, it } from 'vitest';
import { render, totals } from '../src/index.mjs';

const lines = [
  { description: 'pens', unitCents: 105, quantity: 1 },
  { description: 'paper', unitCents: 105, quantity: 1 },
];

describe('totals', () => {
  it('sums the lines', () => {
    expect(totals(lines, 0)).toEqual({ subtotal: 210, tax: 0, total: 210 });
  });
  it('applies tax once to the subtotal', () => {
    // 10% of 2.10 is 0.21; line by line it would be 0.11 + 0.11.
    expect(totals(lines, 10).tax).toBe(21);
  });
});

describe('render', () => {
  it('prints every line and the totals', () => {
    expect(render([{ description: 'pens', unitCents: 250, quantity: 2 }], 0)).toEqual([
      'pens x2: 5.00', 'subtotal: 5.00', 'tax 0%: 0.00', 'total: 5.00',
    ]);
  });
});
