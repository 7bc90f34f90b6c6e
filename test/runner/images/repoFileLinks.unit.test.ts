// Every file stack detection, bake and repository discovery read from a checkout, planted as
// what a hostile repository (a committed link) or a cell on the checkout (a FIFO) can leave:
// each call answers promptly with the file treated as absent, never blocking on standard
// input or a FIFO, never growing without bound on /dev/zero, never reading a host file.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What each planted name needs beside it for the code to reach it (the stack that reads it). */
const TABLE: { name: string; with: string[] }[] = [
  { name: 'package.json', with: [] },
  ...['package-lock.json', 'pnpm-lock.yaml', 'yarn.lock', '.npmrc'].map((name) => ({ name, with: ['package.json'] })),
  ...[
    'pyproject.toml',
    'setup.cfg',
    'tox.ini',
    'requirements-dev.txt',
    'requirements-test.txt',
    'poetry.lock',
    'pytest.ini',
    'conftest.py',
  ].map((name) => ({ name, with: ['setup.py'] })),
  ...['requirements.txt', 'setup.py'].map((name) => ({ name, with: ['pyproject.toml'] })),
  { name: 'go.mod', with: [] },
  { name: 'go.sum', with: ['go.mod'] },
  { name: 'Cargo.toml', with: [] },
  { name: 'Cargo.lock', with: ['Cargo.toml'] },
  { name: 'pom.xml', with: [] },
  { name: 'build.gradle', with: [] },
  ...['build.gradle.kts', 'settings.gradle', 'settings.gradle.kts', 'gradle.lockfile', 'gradlew'].map((name) => ({
    name,
    with: ['build.gradle'],
  })),
  ...['CMakeLists.txt', 'Makefile', 'makefile', 'GNUmakefile'].map((name) => ({ name, with: [] })),
  { name: '.venv', with: ['requirements.txt'] },
  { name: '.venv/pyvenv.cfg', with: ['requirements.txt', '.venv/bin/python'] },
  { name: '.git', with: [] },
];

/** What a link can point at, or a FIFO in the file's place. */
const PLANTS = ['/proc/self/fd/0', '/dev/zero', '/etc/shadow', 'fifo'] as const;

interface ProbeRow {
  dir: string;
  files: string[];
  venv: string | null;
  read: string | null;
  stacks: { stack: string; lockfiles: string[] }[];
  bake: { lockfiles: string[]; bytes: string[] } | { error: string };
  repo: { top: string } | { error: string } | null;
  ms: number;
  rssMiB: number;
}

/** Runs the probe with standard input a pipe that stays open and silent; a block is a timeout. */
function probe(rows: { dir: string; name: string }[], timeoutMs: number): Promise<{ lines: string[]; timedOut: boolean; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join('test', 'helpers', 'repoFactsProbe.ts'), JSON.stringify(rows)], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', () => {
      clearTimeout(timer);
      child.stdin.destroy();
      resolve({ lines: out.split('\n').filter(Boolean), timedOut, stderr: err });
    });
  });
}

describe('files a checkout plants as links or FIFOs (stack detection, bake, repository discovery)', function () {
  this.timeout(120_000);
  let scratch: string;
  before(() => (scratch = mkdtempSync(join(tmpdir(), 'forge-repo-links-'))));
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it(`each of ${TABLE.length} files x ${PLANTS.length} plants: answered promptly, the file absent, no host file read`, async () => {
    const rows: { dir: string; name: string; plant: string }[] = [];
    for (const [i, row] of TABLE.entries())
      for (const [j, plant] of PLANTS.entries()) {
        const dir = join(scratch, `r${i}-${j}`);
        mkdirSync(dir);
        for (const w of row.with) {
          mkdirSync(join(dir, w, '..'), { recursive: true });
          writeFileSync(join(dir, w), w === 'setup.py' ? 'from setuptools import setup\n' : '{}\n');
        }
        mkdirSync(join(dir, row.name, '..'), { recursive: true });
        const at = join(dir, row.name);
        if (plant === 'fifo') {
          const made = await new Promise<number | null>((r) => spawn('mkfifo', [at]).on('close', r));
          assert.equal(made, 0, `mkfifo ${at}`);
        } else symlinkSync(plant, at);
        rows.push({ dir, name: row.name, plant });
      }
    const { lines, timedOut, stderr } = await probe(rows, 60_000);
    const started = lines.filter((l) => l.startsWith('{"start"')).length;
    const blocked = rows[started - 1];
    assert.equal(timedOut, false, `blocked on ${blocked?.name} -> ${blocked?.plant}`);
    assert.equal(stderr.trim(), '', stderr);
    let shadow: string | null = null;
    try {
      shadow = readFileSync('/etc/shadow', 'latin1');
    } catch {
      shadow = null;
    }
    const results = lines.filter((l) => !l.startsWith('{"start"')).map((l) => JSON.parse(l) as ProbeRow);
    assert.equal(results.length, rows.length);
    for (const [k, r] of results.entries()) {
      const { name, plant } = rows[k]!;
      const what = `${name} -> ${plant}`;
      assert.ok(r.ms < 10_000, `${what}: took ${r.ms} ms`);
      assert.ok(r.rssMiB < 1024, `${what}: the probe grew to ${r.rssMiB} MiB`);
      assert.equal(r.files.includes(name), false, `${what}: counted as a file of the repository`);
      assert.equal(r.read, null, `${what}: read`);
      if (name.startsWith('.venv')) assert.equal(r.venv, null, `${what}: taken for a virtualenv`);
      for (const s of r.stacks) assert.equal(s.lockfiles.includes(name), false, `${what}: a lockfile of ${s.stack}`);
      if ('lockfiles' in r.bake) {
        assert.equal(r.bake.lockfiles.includes(name), false, `${what}: copied into the bake`);
        if (shadow)
          for (const b of r.bake.bytes) assert.equal(b.includes(shadow.slice(0, 40)), false, `${what}: the bake read /etc/shadow`);
      } else assert.match(r.bake.error, /not a regular file/, `${what}: one clear error`);
      if (r.repo && 'top' in r.repo) assert.fail(`${what}: a repository was found at ${r.repo.top}`);
      if (shadow) assert.equal(JSON.stringify(r).includes(shadow.slice(0, 40)), false, `${what}: /etc/shadow reached the result`);
    }
  });
});
