'use strict';

const { words } = require('./words');

/**
 * Splits `text` into chunks of at most `size` characters, breaking only between words.
 * A word longer than `size` is a chunk of its own.
 */
function chunkText(text, size) {
  if (!Number.isInteger(size) || size < 1) throw new RangeError('size must be a positive integer');
  const chunks = [];
  let current = '';
  for (const word of words(text)) {
    if (current === '') {
      current = word;
    } else if (current.length + word.length + 1 < size) {
      current += ' ' + word;
    } else {
      chunks.push(current);
      current = word;
    }
  }
  if (current !== '') chunks.push(current);
  return chunks;
}

module.exports = { chunkText };
