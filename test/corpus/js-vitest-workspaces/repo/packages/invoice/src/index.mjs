import { formatCents, percentOf } from '@billing/money';

/**
 * Totals of an invoice: lines are { description, unitCents, quantity }, tax is a percentage
 * applied to the subtotal once (not line by line, which would round each line).
 */
export function totals(lines, taxPercent) {
  const subtotal = lines.reduce((sum, l) => sum + l.unitCents * l.quantity, 0);
  const tax = lines.reduce((sum, l) => sum + percentOf(l.unitCents * l.quantity, taxPercent), 0);
  return { subtotal, tax, total: subtotal + tax };
}

/** The printable lines of an invoice. */
export function render(lines, taxPercent) {
  const t = totals(lines, taxPercent);
  return [
    ...lines.map((l) => `${l.description} x${l.quantity}: ${formatCents(l.unitCents * l.quantity)}`),
    `subtotal: ${formatCents(t.subtotal)}`,
    `tax ${taxPercent}%: ${formatCents(t.tax)}`,
    `total: ${formatCents(t.total)}`,
  ];
}
