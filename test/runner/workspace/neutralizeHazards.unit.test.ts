import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeScanStop, neutralizeHazards } from '../../../runner/src/hostguard/neutralizeHazards.js';
import { withPinnedDirectory } from '../../../runner/src/hostguard/pinnedDirectory.js';
import { neutralizeOrWithhold } from '../../../runner/src/workspace/withholdWorktree.js';

const ROOT = process.geteuid?.() === 0;
const limits = (maxEntries: number, deadlineMs = 60_000) => ({ maxEntries, deadlineMs, reported: 500 });

function files(dir: string, n: number): void {
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < n; i++) writeFileSync(join(dir, String(i)), '');
}

describe('neutralizeHazards: the walk after a cell', () => {
  let top: string;
  beforeEach(() => (top = mkdtempSync(join(tmpdir(), 'forge-hazards-'))));
  afterEach(() => rmSync(top, { recursive: true, force: true }));

  it('a complete walk clears setuid/setgid bits and removes FIFOs and device nodes, deep or not', () => {
    mkdirSync(join(top, 'a', 'b'), { recursive: true });
    copyFileSync('/bin/true', join(top, 'a', 'b', 'suid'));
    chmodSync(join(top, 'a', 'b', 'suid'), 0o6755);
    assert.equal(spawnSync('mkfifo', [join(top, 'a', 'fifo')]).status, 0);
    if (ROOT) assert.equal(spawnSync('mknod', [join(top, 'null'), 'c', '1', '3']).status, 0);
    const scan = neutralizeHazards(top, { limits: limits(100) });
    assert.equal(scan.incomplete, null);
    assert.deepEqual(scan.neutralized.map((n) => `${n.path} ${n.found} ${n.action}`).sort(), [
      'a/b/suid setid cleared',
      'a/fifo fifo removed',
      ...(ROOT ? ['null device removed'] : []),
    ]);
    assert.equal(statSync(join(top, 'a', 'b', 'suid')).mode & 0o7777, 0o755);
    assert.equal(existsSync(join(top, 'a', 'fifo')), false);
  });

  it('past its entry cap or its deadline the walk says it is incomplete, and why', () => {
    files(join(top, 'many'), 2100);
    const capped = neutralizeHazards(top, { limits: limits(1000) });
    assert.deepEqual(capped.incomplete, { kind: 'entries', limit: 1000 });
    assert.equal(describeScanStop(capped.incomplete!), 'the cell left more than 1000 entries in the worktree');
    const late = neutralizeHazards(top, { limits: limits(10_000, 0) });
    assert.deepEqual(late.incomplete, { kind: 'deadline', seconds: 0 });
    assert.equal(neutralizeHazards(top, { limits: limits(10_000) }).incomplete, null, 'exactly the entries there are: complete');
  });

  it('a runner that is not root: a directory the cell left without read or search for its owner is opened up and walked', function () {
    // Runs the walk as uid 1234, the way a runner that is not root meets its own cell's tree.
    if (!ROOT) this.skip();
    mkdirSync(join(top, 'd'));
    copyFileSync('/bin/true', join(top, 'd', 'suid'));
    for (const p of [top, join(top, 'd'), join(top, 'd', 'suid')]) chownSync(p, 1234, 1234);
    chmodSync(join(top, 'd', 'suid'), 0o6755);
    chmodSync(top, 0o755);
    // Others may still search it (and run what is inside); its owner can neither list nor search it.
    chmodSync(join(top, 'd'), 0o011);
    const script = join(top, '..', `${top.split('/').pop()}-walk.mts`);
    writeFileSync(
      script,
      `import { neutralizeHazards } from ${JSON.stringify(join(process.cwd(), 'runner/src/hostguard/neutralizeHazards.ts'))};\n` +
        `console.log(JSON.stringify(neutralizeHazards(${JSON.stringify(top)})));\n`,
    );
    try {
      const r = spawnSync(
        'setpriv',
        ['--reuid', '1234', '--regid', '1234', '--clear-groups', process.execPath, '--import', 'tsx', script],
        {
          encoding: 'utf8',
          env: { ...process.env, HOME: tmpdir() },
          timeout: 60_000,
        },
      );
      assert.equal(r.status, 0, r.stderr);
      const scan = JSON.parse(r.stdout) as { incomplete: unknown; neutralized: { path: string; found: string }[] };
      assert.equal(scan.incomplete, null);
      assert.deepEqual(
        scan.neutralized.map((n) => `${n.path} ${n.found}`),
        ['d/suid setid'],
      );
      assert.equal(statSync(join(top, 'd', 'suid')).mode & 0o6000, 0);
    } finally {
      rmSync(script, { force: true });
    }
  });

  it('incomplete: the tree is withheld at once through its pinned descriptor (mode 0700, the runner its owner)', function () {
    if (!ROOT) this.skip();
    chownSync(top, 65532, 65532);
    chmodSync(top, 0o755);
    files(join(top, 'many'), 50);
    const id = statSync(top);
    const scan = withPinnedDirectory(top, { dev: id.dev, ino: id.ino }, (fd) => neutralizeOrWithhold(fd, { limits: limits(20) }));
    assert.match(
      scan.withheld ?? '',
      /^the cell left more than 20 entries in the worktree, so it was not checked .*only uid 0 can enter it now/,
    );
    const st = statSync(top);
    assert.equal(st.mode & 0o7777, 0o700);
    assert.equal(st.uid, 0);
    // A complete walk leaves the tree as it was.
    const other = mkdtempSync(join(tmpdir(), 'forge-hazards-'));
    try {
      chmodSync(other, 0o755);
      const o = statSync(other);
      const done = withPinnedDirectory(other, { dev: o.dev, ino: o.ino }, (fd) => neutralizeOrWithhold(fd, { limits: limits(20) }));
      assert.equal(done.withheld, null);
      assert.equal(statSync(other).mode & 0o7777, 0o755);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
