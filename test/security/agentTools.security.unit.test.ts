// Each test tries to make the agent's file tools (which run on the host, as the runner) read
// or write outside the attempt's worktree or into git metadata, or use unbounded memory.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  ftruncateSync,
} from 'node:fs';
import { join } from 'node:path';
import { constants } from 'node:fs';
import { mkdirAt, O_PATH, openDirectoryAt, replaceAt } from '../../runner/src/hostguard/beneath.js';
import { editFile, listFiles, readFile, searchFiles, TOOL_LIMITS, writeFile } from '../../runner/src/repair/tools/fileTools.js';
import { scratchDir } from '../helpers/gitRepo.js';

describe('agent file tools (each test tries to reach outside the worktree or .git)', function () {
  this.timeout(120_000);
  let wt: ReturnType<typeof scratchDir>;
  let outside: ReturnType<typeof scratchDir>;
  beforeEach(() => {
    wt = scratchDir('forge-tools-wt-');
    outside = scratchDir('forge-tools-outside-');
    writeFileSync(join(wt.dir, '.git'), 'gitdir: /somewhere/.git/worktrees/a\n');
    writeFileSync(join(wt.dir, 'calc.py'), 'x = 1\n');
    writeFileSync(join(outside.dir, 'secret'), 'TOP SECRET\n');
  });
  afterEach(() => {
    // rm works beneath descriptors (Node's rmSync stops at PATH_MAX, which a test's tree passes).
    spawnSync('rm', ['-rf', '--', wt.dir]);
    outside.cleanup();
  });

  it('F1: writing through a symlink to .git (or into it through a linked parent) is refused; .git is unchanged', () => {
    symlinkSync('.git', join(wt.dir, 'gitlink'));
    symlinkSync('.', join(wt.dir, 'here'));
    assert.throws(() => writeFile(wt.dir, { path: 'gitlink', content: 'gitdir: evil\n' }), /git metadata/);
    assert.throws(() => writeFile(wt.dir, { path: 'here/.git', content: 'gitdir: evil\n' }), /git metadata/);
    assert.throws(() => editFile(wt.dir, { path: 'gitlink', old_string: 'gitdir', new_string: 'x' }), /git metadata/);
    assert.equal(readFileSync(join(wt.dir, '.git'), 'utf8'), 'gitdir: /somewhere/.git/worktrees/a\n');
  });

  it('a .git directory planted by a cell is not writable through the tools either', () => {
    mkdirSync(join(wt.dir, 'sub', '.git'), { recursive: true });
    symlinkSync('sub/.git', join(wt.dir, 'hooks-link'));
    assert.throws(() => writeFile(wt.dir, { path: 'sub/.git/config', content: '[core]\n\tfsmonitor = x\n' }), /git metadata/);
    assert.throws(() => writeFile(wt.dir, { path: 'hooks-link/config', content: 'x' }), /git metadata/);
    assert.equal(existsSync(join(wt.dir, 'sub', '.git', 'config')), false);
  });

  it('symlinked parents that leave the worktree are refused for reading, writing and listing', () => {
    symlinkSync(outside.dir, join(wt.dir, 'out'));
    symlinkSync('../../../../../../../../..', join(wt.dir, 'up'));
    mkdirSync(join(wt.dir, 'a', 'b'), { recursive: true });
    symlinkSync('../../..', join(wt.dir, 'a', 'b', 'escape'));
    for (const path of ['out/secret', 'up/etc/passwd', 'a/b/escape/secret']) {
      assert.throws(() => readFile(wt.dir, { path }), /outside the repository/, path);
      assert.throws(() => writeFile(wt.dir, { path: `${path}-planted`, content: 'x' }), /outside the repository/, path);
    }
    assert.throws(() => listFiles(wt.dir, { path: 'out' }), /outside the repository/);
    assert.throws(() => searchFiles(wt.dir, { pattern: 'SECRET', path: 'out' }), /outside the repository/);
    // Links are not followed by search or list either.
    assert.match(searchFiles(wt.dir, { pattern: 'SECRET' }), /no matches/);
    assert.equal(readFileSync(join(outside.dir, 'secret'), 'utf8'), 'TOP SECRET\n');
  });

  it('links that stay inside are followed', () => {
    mkdirSync(join(wt.dir, 'pkg'));
    symlinkSync('pkg', join(wt.dir, 'alias'));
    symlinkSync(join(wt.dir, 'calc.py'), join(wt.dir, 'abs-link'));
    writeFile(wt.dir, { path: 'alias/mod.py', content: 'y = 2\n' });
    assert.equal(readFileSync(join(wt.dir, 'pkg', 'mod.py'), 'utf8'), 'y = 2\n');
    assert.equal(readFile(wt.dir, { path: 'abs-link' }), '1: x = 1\n2: ');
  });

  it('a hard link to a file outside does not carry writes out: the entry is replaced, the other file is untouched', () => {
    linkSync(join(outside.dir, 'secret'), join(wt.dir, 'hard'));
    writeFile(wt.dir, { path: 'hard', content: 'overwritten\n' });
    assert.equal(readFileSync(join(wt.dir, 'hard'), 'utf8'), 'overwritten\n');
    assert.equal(readFileSync(join(outside.dir, 'secret'), 'utf8'), 'TOP SECRET\n');
    editFile(wt.dir, { path: 'hard', old_string: 'overwritten', new_string: 'edited' });
    assert.equal(readFileSync(join(outside.dir, 'secret'), 'utf8'), 'TOP SECRET\n');
  });

  it('rename race: a directory swapped for a link to outside while the tools write never lets a write land outside', async () => {
    mkdirSync(join(wt.dir, 'd'));
    // Another process swaps d between a real directory and a symlink to outside, atomically
    // (renameat2 RENAME_EXCHANGE) and as fast as it can.
    const swapper = spawn(
      'python3',
      [
        '-c',
        [
          'import ctypes, os',
          `wt, out = ${JSON.stringify(wt.dir)}, ${JSON.stringify(outside.dir)}`,
          "os.symlink(out, os.path.join(wt, 'dlink'))",
          'libc = ctypes.CDLL(None, use_errno=True)',
          "a, b = os.path.join(wt, 'd').encode(), os.path.join(wt, 'dlink').encode()",
          'while True:',
          '    libc.renameat2(-100, a, -100, b, 2)',
        ].join('\n'),
      ],
      { stdio: 'ignore' },
    );
    try {
      await new Promise((r) => setTimeout(r, 200));
      let wrote = 0;
      for (let i = 0; i < 3000; i++) {
        try {
          writeFile(wt.dir, { path: `d/planted-${i}`, content: 'x' });
          wrote++;
        } catch {
          /* refused or raced: fine */
        }
      }
      assert.ok(wrote > 0, 'no write succeeded at all: the race did not run');
    } finally {
      swapper.kill('SIGKILL');
    }
    const leaked = spawnSync('sh', ['-c', `ls ${outside.dir} | grep -c planted`], { encoding: 'utf8' }).stdout.trim();
    assert.equal(leaked, '0', `${leaked} writes landed outside the worktree`);
  });

  it('search in a tree deeper than PATH_MAX answers in bounded size, paths cut from the front (red team, issue 28)', () => {
    // Made through descriptors: the path is far longer than any path the kernel takes.
    let fd = openSync(wt.dir, O_PATH | constants.O_DIRECTORY);
    const opened = [fd];
    for (let level = 0; level < 400; level++) {
      mkdirAt(fd, 'd'.repeat(255), 0o755);
      fd = openDirectoryAt(fd, 'd'.repeat(255));
      opened.push(fd);
      if (level >= 150) replaceAt(fd, 'm', Buffer.from('NEEDLE\n'), 0o644);
    }
    for (const f of opened) closeSync(f);
    const answer = searchFiles(wt.dir, { pattern: 'NEEDLE' });
    assert.ok(answer.length <= TOOL_LIMITS.searchOutputBytes + 200, `${answer.length} characters`);
    assert.match(answer, /^\.\.\.[d/]+\/m:1: NEEDLE$/m);
    assert.match(answer, /search stopped after \d+ characters of matches|more matches not shown/);
  });

  it('names are shown as bytes the model can see: a newline cannot forge a match line, a non-UTF-8 name is not another file (red team, issue 28)', () => {
    writeFileSync(join(wt.dir, 'x\nsrc:evil.py:1: NEEDLE'), 'nothing here\n');
    writeFileSync(Buffer.concat([Buffer.from(`${wt.dir}/raw`), Buffer.from([0xff])]), 'NEEDLE in raw\n');
    writeFileSync(join(wt.dir, 'raw\uFFFD'), 'NEEDLE in the decoded name\n');
    const answer = searchFiles(wt.dir, { pattern: 'NEEDLE' });
    assert.doesNotMatch(answer, /^src:evil\.py/m);
    assert.match(answer, /^raw\\xff:1: NEEDLE in raw$/m);
    assert.match(answer, /^raw\uFFFD:1: NEEDLE in the decoded name$/m);
    const listed = listFiles(wt.dir, {});
    assert.match(listed, /^x\\x0asrc:evil\.py:1: NEEDLE$/m);
    assert.match(listed, /^raw\\xff$/m);
  });

  it('F6: a FIFO is refused at once, not read (which would block the runner)', () => {
    spawnSync('mkfifo', [join(wt.dir, 'pipe')]);
    assert.throws(() => readFile(wt.dir, { path: 'pipe' }), /not a regular file/);
    assert.throws(() => editFile(wt.dir, { path: 'pipe', old_string: 'a', new_string: 'b' }), /not a regular file/);
    assert.match(searchFiles(wt.dir, { pattern: 'x = 1' }), /calc\.py/);
  });

  it('F6: reading and searching a 1 GiB file keeps the runner small (bounded reads)', () => {
    const big = join(wt.dir, 'big.log');
    const fd = openSync(big, 'w');
    ftruncateSync(fd, 1024 * 1024 * 1024);
    closeSync(fd);
    // Measured in a child process: the peak resident size of reading it with each tool.
    const probe = `
      import { readFile, searchFiles } from ${JSON.stringify(join(process.cwd(), 'runner/src/repair/tools/fileTools.ts'))};
      try { readFile(${JSON.stringify(wt.dir)}, { path: 'big.log' }); } catch (e) { process.stderr.write(String(e.message) + '\\n'); }
      searchFiles(${JSON.stringify(wt.dir)}, { pattern: 'needle' });
      process.stdout.write(String(process.resourceUsage().maxRSS));
    `;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', probe], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const peakMiB = Number(r.stdout) / 1024;
    console.log(`      peak RSS reading and searching a 1 GiB file: ${peakMiB.toFixed(0)} MiB`);
    assert.ok(peakMiB < 400, `peak RSS ${peakMiB.toFixed(0)} MiB`);
    rmSync(big);
  });
});
