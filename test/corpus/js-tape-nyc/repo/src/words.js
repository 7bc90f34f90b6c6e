'use strict';

/** The words of a text: runs of non-space characters. */
function words(text) {
  return text.split(/\s+/).filter((w) => w.length > 0);
}

module.exports = { words };
