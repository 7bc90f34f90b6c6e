import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { vetCellMounts } from '../../runner/src/cells/cellWorktree.js';
import { mountDependencyLayers } from '../../runner/src/cells/dependencyLayers.js';
import { dedicatedCellUser } from '../../runner/src/hostguard/cellUser.js';
import { runnerStateDir } from '../../runner/src/cells/cellIdentity.js';
import { createAttemptWorktree, destroyAttemptWorktree } from '../../runner/src/workspace/attemptWorktree.js';
import { detectSharedDeps } from '../../runner/src/repair/dependencies/detectSharedDeps.js';
import type { BenchLine } from './hostCellOverhead.js';
import { makeBenchRepo } from './benchRepo.js';
import { interleaved, median, pairedRatio, timeAsync } from './measure.js';

/** An installed node_modules of `packages` packages, `files` files each, as npm leaves it. */
function fakeNodeModules(dir: string, packages: number, files: number): void {
  for (let p = 0; p < packages; p++) {
    const pkg = join(dir, p % 10 === 0 ? `@scope${p}/pkg${p}` : `pkg${p}`);
    mkdirSync(join(pkg, 'lib'), { recursive: true });
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: `pkg${p}`, version: '1.0.0', main: 'lib/index.js' }));
    for (let f = 0; f < files; f++) writeFileSync(join(pkg, 'lib', `m${f}.js`), `module.exports = ${f};\n`.repeat(20));
  }
}

/**
 * An attempt's worktree with the checkout's 200-package node_modules made available the way a
 * fix run does it (detected, vetted, overlay layer mounted and released), against a bare
 * worktree creation; a full copy of node_modules (what users had to do) is shown for scale.
 */
export async function benchSharedDependencies(files: number, packages: number, runs: number): Promise<BenchLine[]> {
  const { repo } = makeBenchRepo('forge-bench-deps-', files);
  fakeNodeModules(join(repo, 'node_modules'), packages, 10);
  writeFileSync(join(repo, '.gitignore'), 'node_modules/\n');
  const stateDir = runnerStateDir(process.env);
  const user = (process.getuid?.() ?? 0) === 0 ? dedicatedCellUser(process.env) : { uid: process.getuid!(), gid: process.getgid!() };
  let n = 0;
  try {
    const samples = await interleaved(
      {
        bare: async () => {
          let wt: Awaited<ReturnType<typeof createAttemptWorktree>> | undefined;
          const t = await timeAsync(async () => {
            wt = await createAttemptWorktree(repo, 'HEAD', `bare${n++}`);
          });
          await destroyAttemptWorktree(wt!);
          return t;
        },
        shared: async () => {
          let wt: Awaited<ReturnType<typeof createAttemptWorktree>> | undefined;
          let release: (() => Promise<void>) | undefined;
          const t = await timeAsync(async () => {
            wt = await createAttemptWorktree(repo, 'HEAD', `shared${n++}`);
            const found = detectSharedDeps(repo, repo, { env: process.env });
            const spec = { mount_at: repo, shared_deps: found.deps.map((d) => ({ source: d.source, target: d.target, layer: d.layer })) };
            const plan = vetCellMounts(spec, { top: wt.path, gitEntry: join(wt.path, '.git'), source: null }, (top) => top, {
              env: process.env,
              stateDir,
            });
            release = (await mountDependencyLayers(plan, join(stateDir, 'layers'), `bench${n}`, user)).release;
          });
          await release!();
          await destroyAttemptWorktree(wt!);
          return t;
        },
        copy: async () => {
          let wt: Awaited<ReturnType<typeof createAttemptWorktree>> | undefined;
          const t = await timeAsync(async () => {
            wt = await createAttemptWorktree(repo, 'HEAD', `copy${n++}`);
            cpSync(join(repo, 'node_modules'), join(wt.path, 'node_modules'), { recursive: true });
          });
          await destroyAttemptWorktree(wt!);
          return t;
        },
      },
      runs,
      1,
      20,
    );
    const ratio = pairedRatio(samples.shared!, samples.bare!);
    const overlay = (process.getuid?.() ?? 0) === 0 ? 'read-only + overlay' : 'read-only';
    return [
      { name: `bare attempt worktree (${files} files)`, value: median(samples.bare!), unit: 'ms' },
      { name: `worktree + ${packages}-package node_modules shared (${overlay})`, value: median(samples.shared!), unit: 'ms' },
      { name: `worktree + node_modules copied (before)`, value: median(samples.copy!), unit: 'ms' },
      { name: 'shared node_modules / bare worktree', value: ratio, unit: 'x', target: '<= 1.1x', met: ratio <= 1.1 },
      { name: 'copied node_modules / bare worktree', value: pairedRatio(samples.copy!, samples.bare!), unit: 'x' },
    ];
  } finally {
    rmSync(repo, { recursive: true, force: true });
  }
}
