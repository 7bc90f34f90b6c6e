/** Amounts are integer cents; these helpers keep them that way. */

/** Splits `cents` into `n` parts that differ by at most one cent and add up to `cents`. */
export function allocate(cents, n) {
  if (!Number.isInteger(cents) || !Number.isInteger(n) || n < 1) throw new RangeError('allocate needs integer cents and n >= 1');
  const base = Math.floor(cents / n);
  const extra = cents - base * n;
  return Array.from({ length: n }, (_, i) => base + (i < extra ? 1 : 0));
}

/** "12.34" for 1234 cents; negative amounts keep their sign. */
export function formatCents(cents) {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

/** Percentage of an amount, rounded half away from zero to whole cents. */
export function percentOf(cents, percent) {
  const exact = (cents * percent) / 100;
  return Math.sign(exact) * Math.round(Math.abs(exact));
}
