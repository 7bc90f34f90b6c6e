import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { userExcludesFile } from '../../../runner/src/workspace/repoLocation.js';
import { isValidBranchName } from '../../../runner/src/workspace/safeGit.js';

/** The two git calls that touch no repository (safeGit.ts): the user's own excludes file, a branch name's validity. */
describe("git outside any repository: the user's excludes file and branch names (real git)", () => {
  let home: string;
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'forge-home-'));
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it("the user's core.excludesFile (with ~), else the XDG default, else none", () => {
    const env = { PATH: process.env.PATH, HOME: home };
    assert.equal(userExcludesFile(env), null);
    mkdirSync(join(home, '.config', 'git'), { recursive: true });
    writeFileSync(join(home, '.config', 'git', 'ignore'), '*.log\n');
    assert.equal(userExcludesFile(env), join(home, '.config', 'git', 'ignore'));
    writeFileSync(join(home, 'my-ignore'), '*.tmp\n');
    writeFileSync(join(home, '.gitconfig'), '[core]\n\texcludesFile = ~/my-ignore\n');
    assert.equal(userExcludesFile(env), join(home, 'my-ignore'));
  });

  it("a branch name by git's own rules", () => {
    assert.equal(isValidBranchName('fix/average'), true);
    assert.equal(isValidBranchName('bad..name'), false);
    assert.equal(isValidBranchName('-starts-with-dash'), false);
  });
});
