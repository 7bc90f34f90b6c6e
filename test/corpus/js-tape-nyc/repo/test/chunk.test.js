'use strict';

const test = require('tape');
const { chunkText } = require('../src');

test('keeps short text whole', (t) => {
  t.deepEqual(chunkText('hello world', 20), ['hello world']);
  t.end();
});

test('fills a chunk up to exactly its size', (t) => {
  t.deepEqual(chunkText('aaa bbb ccc', 7), ['aaa bbb', 'ccc']);
  t.end();
});

test('no chunk is longer than its size', (t) => {
  t.deepEqual(chunkText('abc de', 5), ['abc', 'de']);
  t.end();
});

test('never breaks a word', (t) => {
  t.deepEqual(chunkText('alpha beta gamma', 6), ['alpha', 'beta', 'gamma']);
  t.end();
});

test('a long word is a chunk of its own', (t) => {
  t.deepEqual(chunkText('a supercalifragilistic b', 5), ['a', 'supercalifragilistic', 'b']);
  t.end();
});

test('rejects a size below one', (t) => {
  t.throws(() => chunkText('x', 0), RangeError);
  t.end();
});
