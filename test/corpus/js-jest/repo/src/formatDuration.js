'use strict';

const UNITS = [
  ['d', 24 * 60 * 60 * 1000],
  ['h', 60 * 60 * 1000],
  ['m', 60 * 1000],
  ['s', 1000],
];

/**
 * "1h 2m 3s" for 3723000. Units that are zero are left out; below one second the result
 * is "0s". At most `parts` units are shown, the smaller ones dropped (not rounded).
 */
function formatDuration(ms, parts = 3) {
  if (!Number.isFinite(ms) || ms < 0) throw new TypeError('ms must be a non-negative number');
  let rest = Math.floor(ms);
  const out = [];
  for (const [unit, size] of UNITS) {
    const n = Math.floor(rest / size);
    if (n > 0 && out.length <= parts) out.push(`${n}${unit}`);
    rest -= n * size;
  }
  return out.length > 0 ? out.join(' ') : '0s';
}

module.exports = { formatDuration };
