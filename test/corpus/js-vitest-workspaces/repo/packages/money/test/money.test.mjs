import { describe, expect, it } from 'vitest';
import { allocate, formatCents, percentOf } from '../src/index.mjs';

describe('allocate', () => {
  it('adds up to the amount', () => {
    expect(allocate(100, 3)).toEqual([34, 33, 33]);
  });
  it('gives whole amounts when they divide evenly', () => {
    expect(allocate(90, 3)).toEqual([30, 30, 30]);
  });
});

describe('formatCents', () => {
  it('pads cents', () => {
    expect(formatCents(1205)).toBe('12.05');
  });
  it('keeps the sign', () => {
    expect(formatCents(-5)).toBe('-0.05');
  });
});

describe('percentOf', () => {
  it('rounds half away from zero', () => {
    expect(percentOf(250, 1)).toBe(3);
    expect(percentOf(-250, 1)).toBe(-3);
  });
});
