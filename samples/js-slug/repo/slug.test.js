const test = require('node:test');
const assert = require('node:assert');
const { slugify } = require('./src/slug');

test('one space', () => assert.strictEqual(slugify('Hello World'), 'hello-world'));
test('every space', () => assert.strictEqual(slugify('Hello World Again'), 'hello-world-again'));
test('runs of spaces', () => assert.strictEqual(slugify('a  b'), 'a-b'));
