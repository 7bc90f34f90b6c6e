'use strict';
// A tiny lint step, as projects often have before their tests: no tabs, no trailing spaces.
const fs = require('fs');
const path = require('path');

let problems = 0;
for (const dir of ['src', 'test']) {
  for (const name of fs.readdirSync(path.join(__dirname, '..', dir))) {
    const lines = fs.readFileSync(path.join(__dirname, '..', dir, name), 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (/\t/.test(line) || / +$/.test(line)) {
        console.error(`${dir}/${name}:${i + 1}: tab or trailing space`);
        problems++;
      }
    });
  }
}
if (problems > 0) process.exit(1);
console.log('lint: ok');
