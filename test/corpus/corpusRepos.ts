import { execSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { FixReportSchema, type FixReport } from '../../runner/src/protocol/fixReport.js';

/**
 * The corpus: repositories with the shapes real projects have (installed dependencies,
 * lifecycle hooks, workspaces, editable installs), each with a planted bug, its issue and a
 * replay model whose attempts include one that causes a regression and one correct fix.
 */
export const CORPUS = join(process.cwd(), 'test', 'corpus');

export interface CorpusEntry {
  name: string;
  description: string;
  /** The project's ordinary install step, run in the checkout as its developer would. */
  setup: string | null;
  /** The attempt (suffix, e.g. "a1") that must win. */
  winner: string;
  /** A test the regression-causing attempt breaks, as the verdict names it. */
  regression: string;
  /** Programs the set-up and the tests need on the host (and in the docker image). */
  needs?: string[];
  /**
   * Set-up and fix run with a home directory of their own ($HOME), which the set-up fills
   * (e.g. a developer's ~/.m2; $FORGE_CORPUS_REAL_HOME is the machine's home to take it from).
   */
  own_home?: boolean;
  /** A test that fails on the base commit and after the fix (not the issue's): the winner must name it so, and still win. */
  failing_before?: string;
  /** A cache directory its tests write (pytest's): the winner must name it generated, not carry it in its patch. */
  generated?: string;
  /** The providers whose cells have this project's toolchain (default: all). */
  providers?: ('host' | 'docker' | 'qemu')[];
}

export interface PreparedCorpusRepo {
  dir: string;
  /** Its own home directory (own_home), or null: the runner's. */
  home: string | null;
  cleanup: () => void;
}

export function corpusEntries(): CorpusEntry[] {
  return readdirSync(CORPUS, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(CORPUS, e.name, 'corpus.json')))
    .map((e) => ({
      name: e.name,
      ...(JSON.parse(readFileSync(join(CORPUS, e.name, 'corpus.json'), 'utf8')) as Omit<CorpusEntry, 'name'>),
    }));
}

/** A corpus repository as a fresh git checkout with its dependencies installed. */
export function prepareCorpusRepo(entry: CorpusEntry, how: { install?: boolean } = {}): PreparedCorpusRepo {
  const dir = mkdtempSync(join(tmpdir(), `forge-corpus-${entry.name}-`));
  const home = entry.own_home ? mkdtempSync(join(tmpdir(), `forge-corpus-home-${entry.name}-`)) : null;
  const cleanup = () => {
    rmSync(dir, { recursive: true, force: true });
    if (home) rmSync(home, { recursive: true, force: true });
  };
  try {
    cpSync(join(CORPUS, entry.name, 'repo'), dir, { recursive: true });
    const git = (...args: string[]) =>
      execSync(`git -c user.email=corpus@forge.test -c user.name=corpus ${args.join(' ')}`, { cwd: dir, stdio: 'pipe' });
    git('init', '-q', '-b', 'main');
    git('add', '-A');
    git('commit', '-q', '-m', 'base');
    if (entry.setup && how.install !== false) {
      // The set-up may read the entry's own files and keep scratch next to the checkout.
      const scratch = mkdtempSync(join(tmpdir(), `forge-corpus-setup-${entry.name}-`));
      const env = {
        ...process.env,
        FORGE_CORPUS_ENTRY: join(CORPUS, entry.name),
        FORGE_CORPUS_TMP: scratch,
        ...(home ? { HOME: home, FORGE_CORPUS_REAL_HOME: homedir() } : {}),
      };
      try {
        runSetup(entry.name, entry.setup, dir, env);
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    }
    return { dir, home, cleanup };
  } catch (e) {
    cleanup();
    throw e;
  }
}

/** A project's install step in its checkout; throws with the output's last lines when it fails. */
export function runSetup(name: string, setup: string, cwd: string, env: NodeJS.ProcessEnv = process.env): void {
  const r = spawnSync('/bin/sh', ['-c', setup], { cwd, encoding: 'utf8', timeout: 600_000, maxBuffer: 64 * 1024 * 1024, env });
  if (r.status !== 0)
    throw new Error(
      `${name}: setup "${setup}" failed (exit ${r.status ?? r.signal}): ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' | ')}`,
    );
}

export interface CorpusOutcome {
  name: string;
  provider: string;
  fixed: boolean;
  winner: string | null;
  /** Regressions named for each attempt that caused one. */
  regressions: string[];
  seconds: number;
  report: FixReport | null;
  exitCode: number | null;
  stderr: string;
}

/** `forge-runner fix` with default flags (plus the provider and its image) on a prepared repository. */
export function runCorpusFix(
  entry: { name: string; /** Where its issue.md and replay.json are (default: test/corpus/NAME). */ dir?: string },
  prepared: { dir: string; home?: string | null },
  provider: 'host' | 'docker' | 'qemu' | 'swarm',
  image?: string,
  extraArgs: string[] = [],
): CorpusOutcome {
  const started = Date.now();
  const repo = prepared.dir;
  const files = entry.dir ?? join(CORPUS, entry.name);
  // Its own state directory: the corpus leaves nothing in the store other tests read.
  const stateDir = mkdtempSync(join(tmpdir(), 'forge-corpus-state-'));
  const attempts = String((JSON.parse(readFileSync(join(files, 'replay.json'), 'utf8')) as { attempts: unknown[] }).attempts.length);
  const r = spawnSync(
    process.execPath,
    [
      join(process.cwd(), 'dist', 'runner.js'),
      'fix',
      '--repo',
      repo,
      '--json',
      '--issue-file',
      join(files, 'issue.md'),
      '--model',
      `replay:${join(files, 'replay.json')}`,
      '--attempts',
      attempts,
      '--provider',
      provider,
      ...(image ? ['--image', image] : []),
      ...extraArgs,
    ],
    {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, FORGE_STATE_DIR: stateDir, ...(prepared.home ? { HOME: prepared.home } : {}) },
    },
  );
  rmSync(stateDir, { recursive: true, force: true });
  let report: FixReport | null = null;
  try {
    report = r.stdout ? FixReportSchema.parse(JSON.parse(r.stdout)) : null;
  } catch {
    report = null;
  }
  return {
    name: entry.name,
    provider,
    fixed: report?.status === 'fixed',
    winner: report?.winner?.attempts[0] ?? null,
    regressions: report ? report.attempts.flatMap((a) => a.verdict?.regressions ?? []) : [],
    seconds: (Date.now() - started) / 1000,
    report,
    exitCode: r.status,
    stderr: r.stderr,
  };
}
