// "time to verdict": what a user waits for, on published projects (test/corpus-real, fetched
// at bench time by exact version): a whole fix run (K attempts, replay model, so model time is
// ~0) against one bare run of the same test command in the same checkout, before (every
// attempt judged in a verdict cell of its own: --no-reuse-verdicts) and after, side by side.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { runCorpusFix } from '../corpus/corpusRepos.js';
import { prepareRealProject, realProjects } from '../corpus-real/realProjects.js';
import type { BenchLine } from './hostCellOverhead.js';
import { median } from './measure.js';

/** One project of each shape the issue names that the published corpus has (nested npm + tape/nyc, Go module, pnpm + vitest). */
export const TIME_TO_VERDICT_PROJECTS = ['npm-call-bind', 'go-logfmt', 'pnpm-css-what'];

function timed<T>(work: () => T): { ms: number; value: T } {
  const t = performance.now();
  const value = work();
  return { ms: performance.now() - t, value };
}

export function benchTimeToVerdict(names: string[], rounds: number, provider: 'host' | 'docker', image?: string): BenchLine[] {
  const lines: BenchLine[] = [];
  for (const name of names) {
    const p = realProjects().find((x) => x.name === name);
    if (!p) throw new Error(`time to verdict: no project ${name} in test/corpus-real`);
    const fixes: Record<'before' | 'after', number[]> = { before: [], after: [] };
    const cells: Record<'before' | 'after', number[]> = { before: [], after: [] };
    const bare: number[] = [];
    for (let round = 0; round < rounds; round++) {
      // Alternate which goes first: a warm page cache favours whichever runs second.
      const order: ('before' | 'after')[] = round % 2 === 0 ? ['before', 'after'] : ['after', 'before'];
      for (const variant of order) {
        const prepared = prepareRealProject(p);
        try {
          const out = timed(() =>
            runCorpusFix(
              { name: p.name, dir: join(process.cwd(), 'test', 'corpus-real', p.name) },
              prepared,
              provider,
              image,
              variant === 'before' ? ['--no-reuse-verdicts'] : [],
            ),
          );
          const report = out.value.report;
          if (!report || !out.value.fixed || !out.value.winner?.endsWith(`-${p.winner}`) || !out.value.regressions.includes(p.regression))
            throw new Error(
              `time to verdict: ${name} (${variant}) was not fixed by ${p.winner} with "${p.regression}" named: ${out.value.stderr.split('\n').slice(-5).join(' | ')}`,
            );
          fixes[variant].push(out.ms);
          cells[variant].push(report.cells);
          // The same command once, bare, in the same checkout (the planted bug: it fails).
          bare.push(timed(() => spawnSync('sh', ['-c', report.test_cmd], { cwd: prepared.dir, stdio: 'ignore' })).ms);
        } finally {
          prepared.cleanup();
        }
      }
    }
    const suite = median(bare);
    const ratio = (v: 'before' | 'after') => median(fixes[v]) / suite;
    const target = suite >= 5000 ? 3 : 5;
    lines.push(
      { name: `${name}: one bare test run`, value: suite / 1000, unit: 's' },
      { name: `${name}: fix / bare run, before (--no-reuse-verdicts)`, value: ratio('before'), unit: 'x' },
      {
        name: `${name}: fix / bare run, after`,
        value: ratio('after'),
        unit: 'x',
        target: `< ${target}x`,
        met: ratio('after') < target,
      },
      { name: `${name}: test cells, before / after`, value: median(cells.before) / median(cells.after), unit: 'x' },
    );
  }
  return lines;
}
