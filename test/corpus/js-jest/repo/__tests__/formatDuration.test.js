'use strict';

const { formatDuration } = require('../src/formatDuration');

describe('formatDuration', () => {
  test('hours, minutes and seconds', () => {
    expect(formatDuration(3723000)).toBe('1h 2m 3s');
  });

  test('leaves out units that are zero', () => {
    expect(formatDuration(3600000 + 5000)).toBe('1h 5s');
  });

  test('below one second is 0s', () => {
    expect(formatDuration(999)).toBe('0s');
  });

  test('shows at most the number of parts asked for, largest first', () => {
    expect(formatDuration(90061000, 2)).toBe('1d 1h');
  });

  test('a single part', () => {
    expect(formatDuration(61000, 1)).toBe('1m');
  });

  test('rejects negative input', () => {
    expect(() => formatDuration(-1)).toThrow(TypeError);
  });
});
