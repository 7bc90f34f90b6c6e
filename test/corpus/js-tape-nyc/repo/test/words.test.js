'use strict';

const test = require('tape');
const { words } = require('../src/words');

test('splits on any whitespace', (t) => {
  t.deepEqual(words(' one\ttwo\n three  '), ['one', 'two', 'three']);
  t.end();
});
