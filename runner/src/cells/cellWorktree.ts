import type { CellSpec } from '../protocol/cellSpec.js';
import type { CellResult } from '../protocol/cellResult.js';
import { captureWorktreeDiff, emptyDiff } from '../workspace/captureWorktreeDiff.js';
import { type CellWorktree, resolveCellWorktree } from '../workspace/inspectWorktree.js';
import { HOST_PATH_MAX } from '../hostguard/neutralizeHazards.js';
import { neutralizeOrWithhold } from '../workspace/withholdWorktree.js';
import { type CellUser, cellUserFor, dedicatedCellUser } from '../hostguard/cellUser.js';
import { probeSandboxLayout } from './sandboxLayout.js';
import { refuseWorktreeLocation } from '../hostguard/worktreeLocation.js';
import { type CellMountPlan, planCellMounts, refuseMountPlan, refuseSharedSource } from './cellMounts.js';
import { type MountedDependencies, mountDependencyLayers } from './dependencyLayers.js';
import { lstatSync } from 'node:fs';
import { lstatAt } from '../hostguard/beneath.js';
import { dirname, isAbsolute, join, normalize, relative } from 'node:path';
import { isInside } from '../hostguard/pathInside.js';
import { untrustedDirectory, untrustedStep } from '../hostguard/pathTrust.js';
import { withPinnedDirectory } from '../hostguard/pinnedDirectory.js';
import { statDirectoryBeneath } from '../hostguard/openBeneath.js';
import { InputError } from '../protocol/inputError.js';

export interface PreparedWorktree {
  worktree: CellWorktree | null;
  user: CellUser;
}

/**
 * Before a cell, on every provider: the worktree resolved and vetted (no system or masked
 * path, git data the cell cannot write) and the unprivileged user the command runs as.
 * Throws InputError, with nothing run, when either is refused.
 */
export async function prepareCellWorktree(
  spec: Pick<CellSpec, 'worktree' | 'capture_diff'>,
  env: NodeJS.ProcessEnv,
  stateDir: string,
): Promise<PreparedWorktree> {
  const worktree = await resolveCellWorktree(spec, (top) => {
    const layout = probeSandboxLayout(env);
    return refuseWorktreeLocation(top, { masked: [...layout.tmpfsMasks, ...layout.nullMasks], runnerHome: env.HOME, stateDir });
  });
  if (worktree) refuseUntrustedPath(worktree, env);
  return { worktree, user: cellUserFor(worktree?.top ?? null, env) };
}

/**
 * The host steps after a cell (hazards, diff) name the worktree by path and run as the
 * runner's user: a directory above it that another user could rename would let that user
 * point them at any directory (a root runner clearing setuid bits in /usr). Such a worktree
 * is refused before the cell, like sudo and sshd refuse files on a path others control.
 * A root runner also trusts its dedicated cell user above the worktree: that user's processes
 * are cells, which see nothing above their own worktree (their .git read-only), and no two
 * running cells share a tree or nest (worktreeClaims.ts), so none renames anything here.
 */
function refuseUntrustedPath(worktree: CellWorktree, env: NodeJS.ProcessEnv): void {
  const uid = process.geteuid?.() ?? 0;
  const trusted = new Set([0, uid, ...(uid === 0 ? [dedicatedCellUser(env).uid] : [])]);
  let found = withPinnedDirectory(worktree.top, worktree.identity, (_fd, steps) => untrustedStep(steps, trusted));
  // The git data the diff reads by name (index, refs, objects and their alternates): its own
  // directories too, and never the cell user's (refused earlier as cell-made).
  const loc = worktree.source?.location;
  if (!found && loc) {
    const owners = new Set([0, uid]);
    const seen: { path: string; dev: number; ino: number }[] = [];
    for (const dir of new Set([dirname(loc.indexFile), loc.commonDir, loc.objectsDir])) {
      found = withPinnedDirectory(
        dir,
        undefined,
        (_fd, steps) => {
          const last = steps.at(-1)!;
          seen.push({ path: dir, dev: last.dev, ino: last.ino });
          return untrustedDirectory(steps, trusted, owners);
        },
        'the git directory',
      );
      if (found) break;
    }
    worktree.gitDataIdentity = seen;
  }
  if (found)
    throw new InputError(
      `worktree ${worktree.top}: ${found.path} ${found.why}, so another user could redirect what the runner (uid ${uid}) reads and changes there after the cell; keep the worktree and its git data under directories only root${uid === 0 ? '' : ` or uid ${uid}`} can change, or run forge-runner as that user`,
    );
}

/**
 * Before a cell, on every provider: where the worktree and each shared dependency go, vetted
 * (a source is resolved first, must be a directory, and must not show the cell anything the
 * masks hide), with the writable layers mounted. Throws InputError, with nothing mounted, on
 * a refused plan; the caller releases the layers after the cell.
 */
export async function prepareCellMounts(
  spec: Pick<CellSpec, 'mount_at' | 'shared_deps'>,
  worktree: CellWorktree | null,
  defaultTarget: (top: string) => string,
  ctx: { env: NodeJS.ProcessEnv; stateDir: string; cellId: string; user: { uid: number; gid: number } },
): Promise<{ plan: CellMountPlan; deps: MountedDependencies }> {
  const plan = vetCellMounts(spec, worktree, defaultTarget, ctx);
  const deps = await mountDependencyLayers(plan, join(ctx.stateDir, 'layers'), ctx.cellId, ctx.user);
  return { plan, deps };
}

/** The checks of prepareCellMounts, without mounting anything. */
export function vetCellMounts(
  spec: Pick<CellSpec, 'mount_at' | 'shared_deps'>,
  worktree: CellWorktree | null,
  defaultTarget: (top: string) => string,
  ctx: { env: NodeJS.ProcessEnv; stateDir: string },
): CellMountPlan {
  const layout = probeSandboxLayout(ctx.env);
  const facts = { masked: [...layout.tmpfsMasks, ...layout.nullMasks], runnerHome: ctx.env.HOME, stateDir: ctx.stateDir };
  // Below a hidden tree only the repository's own directories and the toolchain caches may be shared.
  // The repository an attempt belongs to holds it (<repo>/.git/forge-cells/<id>), and must itself be a place a worktree may be.
  const repoRoot =
    spec.mount_at && worktree && isInside(worktree.top, spec.mount_at) && !refuseWorktreeLocation(spec.mount_at, facts)
      ? spec.mount_at
      : (worktree?.top ?? null);
  const allowedHidden = [...(repoRoot ? [repoRoot] : []), ...toolchainCaches(ctx.env)];
  const shared = spec.shared_deps.map((d) => {
    // Walked from / without following a link: a source is shared as the path it names, never
    // where a link (planted by an install step or a cell) would take it.
    if (!isAbsolute(d.source)) throw new InputError(`shared dependency ${d.source} is not an absolute path`);
    const found = statDirectoryBeneath(normalize(d.source), '');
    if (found.kind === 'absent') throw new InputError(`shared dependency ${d.source} does not exist; install the dependencies or drop it`);
    if (found.kind === 'refused') {
      const link = /^(.*) is a symbolic link$/.exec(found.why)?.[1];
      throw new InputError(
        `shared dependency ${d.source} ${link ? `passes through the symbolic link ${link}` : `cannot be shared (${found.why})`}; share the real directory (no symbolic link on the way)`,
      );
    }
    const real = found.path;
    const why = refuseSharedSource(real, facts);
    if (why) throw new InputError(`${why}; share only installed dependencies`);
    const hidden = [...facts.masked, ...(facts.runnerHome && facts.runnerHome !== '/' ? [facts.runnerHome] : []), ctx.stateDir].find((m) =>
      isInside(real, m),
    );
    if (hidden && !allowedHidden.some((a) => isInside(real, a))) {
      throw new InputError(
        `shared dependency ${d.source} is inside ${hidden}, which cells must not see; share the repository's own dependencies or a toolchain cache`,
      );
    }
    return { ...d, source: real };
  });
  const plan = planCellMounts({ mount_at: spec.mount_at, shared_deps: shared }, worktree, defaultTarget);
  const refused = refuseMountPlan(plan);
  if (refused) throw new InputError(refused);
  // Where the worktree goes must be the path it names: a link on the way (/var/run -> /run)
  // would put it somewhere the checks above never looked.
  if (spec.mount_at) {
    const bad = firstNonDirectory('/', spec.mount_at.split('/').filter(Boolean));
    if (bad?.link) throw new InputError(`mount_at ${spec.mount_at} passes through the link ${bad.path}; give the real path`);
  }
  // The mount points inside the worktree are made by the sandbox as root: none may pass through
  // a link or a file the cell planted (a node_modules -> /usr/bin link would cover setpriv).
  if (plan.worktree) {
    for (const d of plan.deps) {
      if (!isInside(d.target, plan.worktree.target)) continue;
      const bad = firstNonDirectory(plan.worktree.source, relative(plan.worktree.target, d.target).split('/'));
      if (bad)
        throw new InputError(
          `shared dependency target ${d.target} passes through ${bad.path}, which is ${bad.link ? 'a symbolic link' : 'not a directory'} in the worktree; remove it`,
        );
    }
  }
  return plan;
}

/**
 * Walks `parts` down from `base` without following anything: the first existing entry that is
 * not a directory (a link, a file), or null when every existing one is a directory (the walk
 * stops at the first missing entry: the sandbox makes the rest itself).
 */
function firstNonDirectory(base: string, parts: string[]): { path: string; link: boolean } | null {
  let path = base;
  for (const part of parts) {
    path = join(path, part);
    let st;
    try {
      st = lstatSync(path);
    } catch {
      return null;
    }
    if (!st.isDirectory()) return { path, link: st.isSymbolicLink() };
  }
  return null;
}

/** Toolchain caches outside the repository that may be shared although they live in a home directory. */
export function toolchainCaches(env: NodeJS.ProcessEnv): string[] {
  const home = env.HOME && env.HOME !== '/' ? env.HOME : null;
  return [
    ...(env.GOMODCACHE ? [env.GOMODCACHE] : []),
    ...(env.GOPATH
      ? env.GOPATH.split(':')
          .filter(Boolean)
          .map((p) => join(p, 'pkg', 'mod'))
      : []),
    ...(home ? [join(home, 'go', 'pkg', 'mod'), join(home, '.m2', 'repository'), join(home, '.gradle', 'caches')] : []),
  ].filter((p) => p.startsWith('/'));
}

export interface AfterCell {
  diff: CellResult['diff'];
  neutralized: CellResult['neutralized'];
  warnings: string[];
  /** Why the tree was not given back (the hazard walk could not finish), or null. */
  withheld: string | null;
}

/** Throws InputError when the worktree's .git or a git data directory is no longer the one that was checked. */
function sameGitData(topFd: number, worktree: CellWorktree): void {
  if (worktree.gitIdentity) {
    let st: { dev: number; ino: number } | null = null;
    try {
      st = lstatAt(topFd, '.git');
    } catch {
      st = null;
    }
    if (!st || st.dev !== worktree.gitIdentity.dev || st.ino !== worktree.gitIdentity.ino)
      throw new InputError(`the worktree's .git is not the one that was checked`);
  }
  for (const d of worktree.gitDataIdentity ?? []) withPinnedDirectory(d.path, d, () => undefined, 'the git directory');
}

/**
 * After a cell, on every provider, before anything else reads the tree: hazards the cell left
 * (setuid files, device nodes, FIFOs, sockets) are neutralized, then the diff is captured
 * (bounded; never throws: a capture that fails says so in the result). A tree the walk could
 * not finish is withheld (shut to other users) and nothing else reads it.
 */
export async function collectAfterCell(worktree: CellWorktree | null, captureDiff: boolean): Promise<AfterCell> {
  if (!worktree) return { diff: null, neutralized: [], warnings: [], withheld: null };
  // Through a descriptor of the directory that was checked: the walk never starts anywhere else.
  let scan: ReturnType<typeof neutralizeOrWithhold>;
  try {
    scan = withPinnedDirectory(worktree.top, worktree.identity, (fd) =>
      neutralizeOrWithhold(fd, { skip: worktree.gitEntry ? ['.git'] : [], topBytes: Buffer.byteLength(worktree.top) }),
    );
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    const why = `${e.message}: nothing was read from it after the cell`;
    return { diff: captureDiff && worktree.source ? emptyDiff(why) : null, neutralized: [], warnings: [why], withheld: null };
  }
  const warnings: string[] = [];
  if (scan.neutralized.length > 0) {
    warnings.push(
      `the cell left ${scan.neutralized.length} hazardous entr${scan.neutralized.length === 1 ? 'y' : 'ies'} in the worktree (setuid/setgid files, device nodes, FIFOs or sockets); neutralized: ${scan.neutralized
        .slice(0, 5)
        .map((n) => n.path)
        .join(', ')}${scan.neutralized.length > 5 ? ', ...' : ''}`,
    );
  }
  // What the walk did not see is not given back: nothing reads the tree, no diff.
  if (scan.withheld) return { diff: null, neutralized: scan.neutralized, warnings, withheld: scan.withheld };
  // The diff reads the git data by name: the .git and the directories that were checked, or nothing.
  let gitDataChanged: string | null = null;
  if (captureDiff && worktree.source) {
    try {
      withPinnedDirectory(worktree.top, worktree.identity, (fd) => sameGitData(fd, worktree));
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      gitDataChanged = `${e.message}: nothing was read from it after the cell`;
      warnings.push(gitDataChanged);
    }
  }
  const diff =
    captureDiff && worktree.source ? (gitDataChanged ? emptyDiff(gitDataChanged) : await captureWorktreeDiff(worktree.source)) : null;
  // Git names files by path: what lies deeper than PATH_MAX is in no listing it makes.
  if (diff && scan.tooLong > 0)
    diff.incomplete ??= `${scan.tooLong} entr${scan.tooLong === 1 ? 'y has a path' : 'ies have paths'} longer than ${HOST_PATH_MAX} bytes, which git cannot see: the diff does not show them`;
  if (diff?.incomplete) warnings.push(`diff incomplete: ${diff.incomplete}`);
  return { diff, neutralized: scan.neutralized, warnings, withheld: null };
}
