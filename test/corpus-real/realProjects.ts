import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { runCorpusFix, runSetup } from '../corpus/corpusRepos.js';
import type { FixReport } from '../../runner/src/protocol/fixReport.js';

/**
 * The real-world corpus: published projects fetched at test time by name and exact version
 * (npm package tarballs, Debian's golang-*-dev packages), never committed. Each directory
 * here holds only what we wrote: project.json, the planted bug (bug.patch), changes that make
 * the published tree installable on our machines (prepare.patch, optional), the issue, a
 * replay whose attempts include a regression-causing one, and the lockfile when the package
 * does not publish one.
 */
export const CORPUS_REAL = join(process.cwd(), 'test', 'corpus-real');

const NpmSource = z.strictObject({
  registry: z.literal('npm'),
  package: z.string().regex(/^(@[a-z0-9._-]+\/)?[a-z0-9._-]+$/),
  version: z.string().regex(/^\d+\.\d+\.\d+[\w.+-]*$/),
  /** The registry's dist.integrity (sha512, base64), checked on every fetch and cache hit. */
  integrity: z.string().regex(/^sha512-[A-Za-z0-9+/]+=*$/),
});
const DebianPackage = {
  package: z.string().regex(/^[a-z0-9][a-z0-9.+-]+$/),
  version: z.string().regex(/^[\w.+~:-]+$/),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
};
const inPackage = z
  .string()
  .regex(/^usr\/[\w./+-]+$/)
  .refine((p) => !p.split('/').includes('..'), 'no .. in a path');
const DebianSource = z
  .strictObject({
    registry: z.literal('debian'),
    ...DebianPackage,
    /** The module's directory inside the package, e.g. usr/share/gocode/src/github.com/google/uuid (Go's -dev packages). */
    root: z
      .string()
      .regex(/^usr\/share\/gocode\/src\/[\w./-]+$/)
      .optional(),
    /** Or files and directories of the unpacked packages, each copied to a path of the checkout (a project spread over packages). */
    files: z
      .array(
        z.strictObject({
          from: inPackage,
          to: z
            .string()
            .regex(/^[\w][\w./-]*$/)
            .refine((p) => !p.split('/').includes('..'), 'no .. in a path'),
        }),
      )
      .min(1)
      .optional(),
    /** More packages unpacked beside the first (files may come from any). */
    also: z.array(z.strictObject(DebianPackage)).max(4).default([]),
  })
  .refine((s) => (s.root === undefined) !== (s.files === undefined), 'exactly one of root and files');

export const RealProjectSchema = z.strictObject({
  description: z.string().min(1),
  source: z.discriminatedUnion('registry', [NpmSource, DebianSource]),
  /** python: the standard library's unittest, nothing to install. */
  packageManager: z.enum(['npm', 'pnpm', 'yarn', 'go', 'python']),
  framework: z.string().min(1),
  /** The install step its users run, in the checkout; null when there is nothing to install. */
  setup: z.string().nullable(),
  /** A lockfile we generated and keep beside the patch (the package does not publish one). */
  lockfile: z.enum(['package-lock.json', 'pnpm-lock.yaml', 'yarn.lock']).optional(),
  /** The attempt (suffix, e.g. "a1") that must win. */
  winner: z.string().regex(/^a\d+$/),
  /** A test the regression-causing attempt breaks, as the verdict names it. */
  regression: z.string().min(1),
  /** Tests that fail on the base commit and after the fix here (not the issue's): the winner must name them so, and still win. */
  failing_before: z.array(z.string().min(1)).default([]),
  /** A cache directory its tests write (pytest's): the winner must name it generated, not carry it in its patch. */
  generated: z.string().min(1).optional(),
  /** In the CI subset (npm test); the whole set runs with npm run corpus:real. */
  ci: z.boolean().default(false),
  /** Programs the set-up and tests need on the host. */
  needs: z.array(z.string()).default([]),
});
export type RealProject = z.infer<typeof RealProjectSchema> & { name: string; dir: string };

export function realProjects(): RealProject[] {
  return readdirSync(CORPUS_REAL, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(CORPUS_REAL, e.name, 'project.json')))
    .map((e) => {
      const dir = join(CORPUS_REAL, e.name);
      const parsed = RealProjectSchema.safeParse(JSON.parse(readFileSync(join(dir, 'project.json'), 'utf8')));
      if (!parsed.success) throw new Error(`test/corpus-real/${e.name}/project.json: ${z.prettifyError(parsed.error)}`);
      return { ...parsed.data, name: e.name, dir };
    });
}

/** Where fetched archives are kept, by name, version and digest. */
export function corpusCacheDir(): string {
  return process.env.FORGE_CORPUS_CACHE ?? join(homedir(), '.cache', 'forge-cells', 'corpus-real');
}

function run(cmd: string, args: string[], cwd: string, timeoutMs = 300_000): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 });
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${args.join(' ')} failed (exit ${r.status ?? r.signal}): ${(r.stderr || r.stdout || String(r.error)).trim().split('\n').slice(-3).join(' | ')}`,
    );
  return r.stdout;
}

const sha512Integrity = (file: string) => `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`;
const sha256Hex = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

/**
 * The project's published archive, from the cache when a file of that name, version and
 * digest is there, else fetched from its registry; a digest that does not match is an error.
 */
export function fetchArchive(p: RealProject): string {
  return fetchOne(p.name, p.source);
}

type Fetchable = z.infer<typeof NpmSource> | (z.infer<typeof DebianSource>['also'][number] & { registry: 'debian' });

function fetchOne(name: string, src: Fetchable): string {
  const digest = src.registry === 'npm' ? createHash('sha256').update(src.integrity).digest('hex').slice(0, 16) : src.sha256.slice(0, 16);
  const safe = src.package.replace(/^@/, '').replace(/\//g, '-');
  const cacheDir = join(corpusCacheDir(), src.registry);
  const cached = join(cacheDir, `${safe}-${src.version.replace(/:/g, '_')}-${digest}.${src.registry === 'npm' ? 'tgz' : 'deb'}`);
  const matches = (file: string) => (src.registry === 'npm' ? sha512Integrity(file) === src.integrity : sha256Hex(file) === src.sha256);
  if (existsSync(cached) && matches(cached)) return cached;
  mkdirSync(cacheDir, { recursive: true });
  const scratch = mkdtempSync(join(cacheDir, '.fetch-'));
  try {
    let file: string;
    if (src.registry === 'npm') {
      const out = run('npm', ['pack', `${src.package}@${src.version}`, '--json', '--pack-destination', scratch], scratch);
      const name = (JSON.parse(out) as { filename: string }[])[0]!.filename;
      file = join(scratch, name.replace(/^@/, '').replace(/\//g, '-'));
      if (!existsSync(file)) file = join(scratch, readdirSync(scratch)[0]!);
    } else {
      const spec = `${src.package}=${src.version}`;
      try {
        run('apt-get', ['download', '-q', spec], scratch);
      } catch {
        // A machine whose package lists were never fetched knows no packages yet.
        run('apt-get', ['update', '-qq'], scratch, 600_000);
        run('apt-get', ['download', '-q', spec], scratch);
      }
      file = join(
        scratch,
        readdirSync(scratch).find((f) => f.endsWith('.deb'))!,
      );
    }
    if (!matches(file)) {
      const got = src.registry === 'npm' ? sha512Integrity(file) : sha256Hex(file);
      throw new Error(
        `${name}: ${src.package}@${src.version} from ${src.registry} has digest ${got}, project.json says ${src.registry === 'npm' ? src.integrity : src.sha256}`,
      );
    }
    renameSync(file, cached);
    return cached;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

export interface PreparedRealProject {
  dir: string;
  /** HEAD and `git status --porcelain` of the user's checkout before the fix, to compare after. */
  before: string;
  cleanup: () => void;
}

const GIT = [
  '-c',
  'user.email=corpus@forge.test',
  '-c',
  'user.name=corpus',
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'commit.gpgsign=false',
];

/** The user's state of the checkout: its commit, and every change and untracked file not ignored. */
export function checkoutState(dir: string): string {
  return run('git', [...GIT, 'rev-parse', 'HEAD'], dir) + run('git', [...GIT, 'status', '--porcelain=v1', '-uall'], dir);
}

/**
 * The published tree as a user's checkout: unpacked, our prepare.patch and the planted bug
 * applied, the kept lockfile beside it, committed, then the user's install step run in it.
 */
export function prepareRealProject(p: RealProject, how: { install?: boolean } = {}): PreparedRealProject {
  const archive = fetchArchive(p);
  const dir = mkdtempSync(join(tmpdir(), `forge-real-${p.name}-`));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  try {
    const unpack = mkdtempSync(join(tmpdir(), `forge-real-unpack-${p.name}-`));
    try {
      if (p.source.registry === 'npm') {
        run('tar', ['-xzf', archive, '-C', unpack, '--no-same-owner', '--no-same-permissions'], unpack);
        // Tarballs hold one top directory ("package" for most, another name for some).
        const top = readdirSync(unpack);
        cpSync(join(unpack, top.length === 1 ? top[0]! : 'package'), dir, { recursive: true });
      } else {
        run('dpkg-deb', ['-x', archive, unpack], unpack);
        for (const more of p.source.also) run('dpkg-deb', ['-x', fetchOne(p.name, { registry: 'debian', ...more }), unpack], unpack);
        if (p.source.root) cpSync(join(unpack, p.source.root), dir, { recursive: true, dereference: false });
        for (const f of p.source.files ?? []) {
          mkdirSync(join(dir, f.to, '..'), { recursive: true });
          cpSync(join(unpack, f.from), join(dir, f.to), { recursive: true, dereference: false });
        }
      }
    } finally {
      rmSync(unpack, { recursive: true, force: true });
    }
    for (const patch of ['prepare.patch', 'bug.patch'])
      if (existsSync(join(p.dir, patch))) run('git', ['apply', '--whitespace=nowarn', join(p.dir, patch)], dir);
    if (p.lockfile) cpSync(join(p.dir, p.lockfile), join(dir, p.lockfile));
    // A published tarball has no .gitignore (npm leaves it out); a developer's checkout has one.
    if (!existsSync(join(dir, '.gitignore'))) writeFileSync(join(dir, '.gitignore'), 'node_modules/\ncoverage/\n.nyc_output/\n');
    run('git', [...GIT, 'init', '-q', '-b', 'main'], dir);
    run('git', [...GIT, 'add', '-A'], dir);
    run('git', [...GIT, 'commit', '-q', '-m', `${p.source.package} ${p.source.version} with the planted bug`], dir);
    if (p.setup && how.install !== false) runSetup(p.name, p.setup, dir);
    return { dir, before: checkoutState(dir), cleanup };
  } catch (e) {
    cleanup();
    throw e;
  }
}

export interface RealOutcome {
  name: string;
  /** Fixed, and the expected attempt won. */
  fixedRightWinner: boolean;
  winner: string | null;
  /** The planted regression is among those the verdicts name. */
  regressionNamed: boolean;
  regressions: string[];
  /** The user's checkout has the same commit and the same status after the run. */
  untouched: boolean;
  seconds: number;
  /** Why a row is not all yes, in words. */
  problem: string | null;
}

/** Fetch, install and fix one project with default flags on `provider` cells. */
export function checkRealProject(p: RealProject, provider: 'host' | 'docker' = 'host', image?: string): RealOutcome {
  const started = Date.now();
  const row = (o: Partial<RealOutcome>): RealOutcome => ({
    name: p.name,
    fixedRightWinner: false,
    winner: null,
    regressionNamed: false,
    regressions: [],
    untouched: false,
    seconds: (Date.now() - started) / 1000,
    problem: null,
    ...o,
  });
  let prepared: PreparedRealProject;
  try {
    prepared = prepareRealProject(p);
  } catch (e) {
    return row({ problem: (e as Error).message });
  }
  try {
    const out = runCorpusFix(p, prepared, provider, image);
    const after = checkoutState(prepared.dir);
    const baselineProblem =
      out.report && !out.report.baseline.failing_complete ? `baseline: ${out.report.baseline.failing_incomplete}` : null;
    const fixedRightWinner = out.fixed && (out.winner?.endsWith(`-${p.winner}`) ?? false);
    const regressionNamed = out.regressions.includes(p.regression);
    const untouched = after === prepared.before;
    const problems = [
      out.report === null ? `no report (exit ${out.exitCode}): ${out.stderr.trim().split('\n').at(-1) ?? ''}` : null,
      out.report && !out.fixed ? `status ${out.report.status}` : null,
      out.fixed && !fixedRightWinner ? `winner ${out.winner}, expected ${p.winner}` : null,
      out.report && !regressionNamed
        ? `"${p.regression}" not named (named: ${out.regressions.length ? out.regressions.join('; ') : 'none'}; ${out.report.attempts
            .map(
              (a) =>
                `${a.attempt_id.split('-').at(-1)}: ${a.verdict ? (a.verdict.regressions_unknown ?? `${a.verdict.failed} failing`) : (a.error ?? a.status)}`,
            )
            .join('; ')})`
        : null,
      baselineProblem,
      ...preexistingProblems(p, out.report),
      untouched ? null : 'the user checkout changed',
    ].filter((x): x is string => x !== null);
    return row({
      fixedRightWinner,
      winner: out.winner,
      regressionNamed,
      regressions: out.regressions,
      untouched,
      problem: problems.length ? problems.join('; ') : null,
    });
  } finally {
    prepared.cleanup();
  }
}

/** What the winner must say of tests failing before and after and of a tool's cache (project.json), in words; empty when it does. */
function preexistingProblems(p: RealProject, report: FixReport | null): string[] {
  const winner = report?.winner;
  if (!winner) return [];
  const named = winner.verdict.failing_before;
  const problems = p.failing_before
    .filter((t) => !named.includes(t))
    .map((t) => `"${t}" not named as failing before and after (named: ${named.join('; ') || 'none'})`);
  const won = report.attempts.find((a) => a.attempt_id === winner.attempts[0]);
  if (p.generated && !won?.generated.includes(p.generated))
    problems.push(
      `the winner names no generated ${p.generated} (generated: ${won?.generated.join(', ') || 'none'}, ${won?.diff_size} changed lines)`,
    );
  return problems;
}
