// "time to verdict": what a user waits for, on published projects (test/corpus-real, fetched
// at bench time by exact version): a whole fix run (K attempts, replay model, so model time is
// ~0) against one bare run of the same test command in the same checkout, before (every
// attempt judged on the whole suite in a verdict cell of its own, every cell compiling afresh:
// --no-reuse-verdicts --no-failing-first --no-warm-caches), after
// (the defaults), the defaults with the ground truth after selection, and every verdict in its
// own cell with failing tests first, side by side.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCorpusFix } from '../corpus/corpusRepos.js';
import { prepareRealProject, realProjects } from '../corpus-real/realProjects.js';
import type { BenchLine } from './hostCellOverhead.js';
import { median } from './measure.js';

/** One project of each shape the issue names (slow Python unittest suite, nested npm + tape/nyc, Go module, pnpm + vitest). */
export const TIME_TO_VERDICT_PROJECTS = ['deb-python-statistics', 'npm-call-bind', 'go-logfmt', 'pnpm-css-what'];

function timed<T>(work: () => T): { ms: number; value: T } {
  const t = performance.now();
  const value = work();
  return { ms: performance.now() - t, value };
}

type Variant = 'before' | 'after' | 'targeted' | 'late';

/** before: the previous behaviour; after: the defaults; targeted: every verdict in a cell of its own (failing tests first, warm caches). */
const FLAGS: Record<Variant, string[]> = {
  before: ['--no-reuse-verdicts', '--no-failing-first', '--no-warm-caches', '--no-early-ground-truth'],
  after: [],
  targeted: ['--no-reuse-verdicts'],
  // The defaults but the winner's ground truth only after selection (as before this was built).
  late: ['--no-early-ground-truth'],
};

export function benchTimeToVerdict(names: string[], rounds: number, provider: 'host' | 'docker', image?: string): BenchLine[] {
  const lines: BenchLine[] = [];
  for (const name of names) {
    const p = realProjects().find((x) => x.name === name);
    if (!p) throw new Error(`time to verdict: no project ${name} in test/corpus-real`);
    const fixes: Record<Variant, number[]> = { before: [], after: [], targeted: [], late: [] };
    const cells: Record<Variant, number[]> = { before: [], after: [], targeted: [], late: [] };
    const bare: number[] = [];
    const bareCold: number[] = [];
    const barePassing: number[] = [];
    for (let round = 0; round < rounds; round++) {
      // Alternate which goes first: a warm page cache favours whichever runs second.
      const order: Variant[] = round % 2 === 0 ? ['before', 'after', 'late', 'targeted'] : ['targeted', 'late', 'after', 'before'];
      for (const variant of order) {
        const prepared = prepareRealProject(p);
        try {
          const out = timed(() =>
            runCorpusFix(
              { name: p.name, dir: join(process.cwd(), 'test', 'corpus-real', p.name) },
              prepared,
              provider,
              image,
              FLAGS[variant],
            ),
          );
          const report = out.value.report;
          // Failing tests first alone leaves unnamed the other regressions of an attempt red on the baseline's failing tests.
          const regressionNamed = variant === 'targeted' || out.value.regressions.includes(p.regression);
          if (!report || !out.value.fixed || !out.value.winner?.endsWith(`-${p.winner}`) || !regressionNamed)
            throw new Error(
              `time to verdict: ${name} (${variant}) was not fixed by ${p.winner} with "${p.regression}" named: ${out.value.stderr.split('\n').slice(-5).join(' | ')}`,
            );
          // A Go module's bare run reuses the user's build cache (warm from the rounds before);
          // every fix run's first cell starts cold (a run's caches are never another run's).
          if (existsSync(join(prepared.dir, 'go.mod'))) {
            const cache = mkdtempSync(join(tmpdir(), 'forge-bench-gocache-'));
            try {
              const env = { ...process.env, GOCACHE: cache };
              bareCold.push(timed(() => spawnSync('sh', ['-c', report.test_cmd], { cwd: prepared.dir, stdio: 'ignore', env })).ms);
            } finally {
              rmSync(cache, { recursive: true, force: true });
            }
          }
          fixes[variant].push(out.ms);
          cells[variant].push(report.cells);
          // The same command once, bare, in the same checkout (the planted bug: it fails).
          bare.push(timed(() => spawnSync('sh', ['-c', report.test_cmd], { cwd: prepared.dir, stdio: 'ignore' })).ms);
          // And on the winner's tree: what one run that shows the fix costs (a command that
          // chains a type check or a linter after its tests runs them only when they pass).
          const diff = spawnSync('git', ['-C', prepared.dir, 'diff', '--binary', report.base_commit, report.winner!.branch!], {
            maxBuffer: 64 * 1024 * 1024,
          });
          const applied = spawnSync('git', ['-C', prepared.dir, 'apply', '--whitespace=nowarn'], { input: diff.stdout });
          if (diff.status !== 0 || applied.status !== 0)
            throw new Error(`time to verdict: ${name}: the winner's change did not apply to the checkout: ${applied.stderr}`);
          // Its exit is not checked: a posttest hook that asks the registry fails here without the network.
          barePassing.push(timed(() => spawnSync('sh', ['-c', report.test_cmd], { cwd: prepared.dir, stdio: 'ignore' })).ms);
        } finally {
          prepared.cleanup();
        }
      }
    }
    const suite = median(bare);
    const ratio = (v: Variant) => median(fixes[v]) / suite;
    const passingSuite = median(barePassing);
    const target = suite >= 5000 ? 3 : 5;
    lines.push(
      { name: `${name}: one bare test run`, value: suite / 1000, unit: 's' },
      {
        name: `${name}: fix / bare run, before (--no-reuse-verdicts --no-failing-first --no-warm-caches --no-early-ground-truth)`,
        value: ratio('before'),
        unit: 'x',
      },
      {
        name: `${name}: fix / bare run, after`,
        value: ratio('after'),
        unit: 'x',
        target: `< ${target}x`,
        met: ratio('after') < target,
      },
      { name: `${name}: fix / bare run, ground truth after selection (--no-early-ground-truth)`, value: ratio('late'), unit: 'x' },
      {
        name: `${name}: fix / bare run, failing tests first alone (--no-reuse-verdicts)`,
        value: ratio('targeted'),
        unit: 'x',
      },
      { name: `${name}: test cells, before / after`, value: median(cells.before) / median(cells.after), unit: 'x' },
      ...(bareCold.length > 0
        ? [
            { name: `${name}: one bare run with an empty build cache (GOCACHE)`, value: median(bareCold) / 1000, unit: 's' },
            { name: `${name}: fix / bare run with an empty build cache, after`, value: median(fixes.after) / median(bareCold), unit: 'x' },
          ]
        : []),
      { name: `${name}: one bare passing run (the winner's tree)`, value: passingSuite / 1000, unit: 's' },
      { name: `${name}: fix / bare passing run, after`, value: median(fixes.after) / passingSuite, unit: 'x' },
    );
  }
  return lines;
}
