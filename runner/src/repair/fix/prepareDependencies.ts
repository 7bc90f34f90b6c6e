import { InputError } from '../../protocol/inputError.js';
import { type AttemptWorktree, createAttemptWorktree } from '../../workspace/attemptWorktree.js';
import { closedToCellUser, detectSharedDeps, FORGE_CONFIG_FILE } from '../dependencies/detectSharedDeps.js';
import { testOutputOf } from '../verdicts/testRunOutput.js';
import { type RunScope, throwIfCancelled } from './fixRun.js';
import type { RunCells } from './runCells.js';
import { installRegistries } from './runNetwork.js';
import { deniedEgressLine, deniedEgressOf } from '../verdicts/deniedEgress.js';

export interface DependenciesInput extends RunScope {
  cells: RunCells;
}

/**
 * Dependencies: the checkout's, or what --install-cmd installs once for the run; said before
 * the baseline. Returns the install's worktree, which must outlive every cell that shares
 * what it installed (the caller removes it at the end of the run); null without an install.
 */
export async function prepareDependencies(input: DependenciesInput): Promise<AttemptWorktree | null> {
  const { request, deps, cells } = input;
  const depsWt = await installOnce(input);
  if (request.shared_deps === false) deps.progress('dependencies: not shared (--no-shared-deps)');
  else if (cells.dependencies.length === 0)
    deps.progress(`dependencies: none installed in the checkout (install them there, or pass --install-cmd; --share DIR names more)`);
  for (const d of cells.dependencies) {
    deps.progress(`dependencies: ${d.shared}`);
    // Detected directories only: a configured one may be a host directory whose entries are not the repository's to learn.
    const closed = (process.getuid?.() ?? 0) === 0 && d.kind !== 'configured' ? closedToCellUser(d.source) : null;
    if (closed)
      deps.progress(
        `dependencies: warning: the cells' user cannot read ${closed}, so its tools will not find what is there; make it readable (chmod -R o+rX ${d.source}) or run forge-runner as its owner`,
      );
  }
  return depsWt;
}

/**
 * The install step runs once for the run, in a cell on its own checkout of the base whose
 * only network is the stack's package registries; what it installed (node_modules, a
 * .venv...) is then shared with every cell the same way as a checkout's own.
 */
async function installOnce({ run, request, deps, cells }: DependenciesInput): Promise<AttemptWorktree | null> {
  const { installCmd, repo } = run;
  if (!installCmd) return null;
  const hosts = installRegistries(repo);
  deps.progress(
    `install: ${installCmd} (once for the run; network: ${hosts.length > 0 ? hosts.join(', ') : 'none'}${request.allow_net.length ? ` and ${request.allow_net.join(', ')}` : ''}${request.deny_net.length ? `, never ${request.deny_net.join(', ')}` : ''})`,
  );
  const depsWt = await createAttemptWorktree(repo, run.base, `${run.runId}-deps`, { include: run.trust.include, onSkipped: deps.progress });
  try {
    const r = await cells.cell(depsWt.path, installCmd, 'install', null, { allowNet: hosts, noDeps: true });
    throwIfCancelled(deps.signal);
    if (r.exit_code !== 0) {
      const tail = testOutputOf(r)
        .text.trim()
        .split('\n')
        .slice(-3)
        .map((l) => l.trim())
        .join(' | ');
      const denied = deniedEgressLine(deniedEgressOf(r.egress_denied), 'it');
      throw new InputError(
        `install command failed (exit ${r.exit_code}${r.timed_out ? ', timed out' : ''}): ${tail}; ${denied ? `${denied}, or ` : ''}fix --install-cmd (or install in your checkout: its dependencies are shared)`,
      );
    }
    // The install step ran in this checkout: what it names is resolved there, no link followed.
    const installed = detectSharedDeps(depsWt.path, repo, { env: process.env, share: run.trust.share, exclude: run.trust.exclude });
    // What the install made replaces the checkout's own at the same place; caches outside stay.
    const targets = new Set(installed.deps.map((d) => d.target));
    const shared = run.shared;
    cells.useDeps(
      { deps: [...installed.deps, ...shared.deps.filter((d) => !targets.has(d.target))], env: { ...shared.env, ...installed.env } },
      'from the install',
    );
    if (installed.deps.length === 0)
      deps.progress(
        `install: it made no dependency directory to share (node_modules, .venv...); name yours with --share DIR (or in ${FORGE_CONFIG_FILE}, dependencies.share)`,
      );
    return depsWt;
  } catch (e) {
    await cells.cleanUp(depsWt);
    throw e;
  }
}
