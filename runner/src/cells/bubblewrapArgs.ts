import { join, relative } from 'node:path';
import { relayStarterArgv, SANDBOX_EGRESS } from './egressRelay.js';
import type { SandboxLayout } from './sandboxLayout.js';

export const CELL_HOME = '/tmp/forge-home';
export const CELL_SCRATCH = '/tmp/forge-work';

export interface BubblewrapPlan {
  layout: SandboxLayout;
  /** Mounted read-write at the same path; unset: the cell works in a private scratch dir. */
  worktree: string | null;
  /** Git metadata inside the worktree (.git dir or file), mounted read-only over its place. */
  gitMetadata: string | null;
  /** Where the cell sees the worktree (the user's repository path in fix runs); default: its own path. */
  worktreeTarget?: string;
  /**
   * What bwrap binds for the worktree and its .git instead of their paths: names of the
   * directories the runner checked and holds open (/proc/<runner>/fd/N), so a path changed
   * since the check cannot make bwrap bind anything else. Root runners only (bwrap as root
   * resolves another process's descriptors).
   */
  held?: { top: string; git: string | null };
  /** Shared dependencies: read-only, or writable when the source is a discarded overlay layer. */
  deps?: { source: string; target: string; writable: boolean }[];
  /**
   * allow_net: the host side of the cell's egress socket and the node binary its relay runs
   * on. The sandbox still gets no host network (its own namespace, only lo): the socket is
   * its one way out. Null or unset: no network at all.
   */
  egress?: { socket: string; node: string } | null;
  /**
   * Size of the cell's own /dev/shm (a tmpfs every user may write, as on a real machine:
   * Python's multiprocessing, pytest-xdist and Chromium need it). Its pages count against the
   * cell's memory limit like any other. Unset: bwrap's /dev/shm, a directory only root may write.
   */
  shmBytes?: number;
  /** The cell's whole environment: bwrap clears its own and sets exactly this. */
  env: Record<string, string>;
  argv: string[];
  /**
   * A root runner's cells: bwrap mounts with root's rights (so it can reach worktrees under
   * /root), then the command runs as this unprivileged user via setpriv, with no capabilities
   * and no_new_privs. Null: bwrap runs as the runner's own (unprivileged) user in a user namespace.
   */
  dropTo?: { uid: number; gid: number; setpriv: string } | null;
}

/** Pure: argv prefix that switches to an unprivileged user for good (no capabilities, no setuid gains). */
export function setprivArgs(to: { uid: number; gid: number; setpriv: string }): string[] {
  return [to.setpriv, `--reuid=${to.uid}`, `--regid=${to.gid}`, '--clear-groups', '--no-new-privs', '--inh-caps=-all', '--'];
}

/**
 * Pure: the command's environment applied only after the switch to the cell user. setpriv
 * still runs as root: a spec's LD_PRELOAD (or any loader variable) in its environment would
 * run the spec's code as root. So setpriv gets PATH alone, and `env -i` (already the cell
 * user) sets the command's whole environment. env would read an argv[0] like "FOO=bar" as
 * one more variable: only then does `sh -c 'exec "$@"'` come between (an exec less per cell
 * otherwise).
 */
export function afterDropArgv(env: Record<string, string>, argv: string[]): string[] {
  const keepName = (argv[0] ?? '').includes('=') ? ['/bin/sh', '-c', 'exec "$@"', 'forge-cell'] : [];
  return ['/usr/bin/env', '-i', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...keepName, ...argv];
}

/** The only variable the root part of a cell's start (setpriv) sees. */
export const ROOT_STAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * Pure: the bwrap command line for one cell. Order matters: bwrap applies mounts in order, so
 * masks come after the read-only root and the worktree comes after the masks (it may live
 * under /tmp or a home directory).
 */
export function buildBubblewrapArgs(plan: BubblewrapPlan): string[] {
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  if (plan.shmBytes) args.push('--perms', '1777', '--size', String(plan.shmBytes), '--tmpfs', '/dev/shm');
  // /tmp and /var/tmp stay world-writable like real ones: the command may run as a user other than bwrap's.
  for (const dir of plan.layout.tmpfsMasks) args.push(...(dir === '/tmp' || dir === '/var/tmp' ? ['--perms', '1777'] : []), '--tmpfs', dir);
  for (const dir of plan.layout.reexposed) {
    // Directories bubblewrap makes on the way inside a mask would be 0700 (root's): the cell user could not pass.
    for (const up of ancestorsBelowMasks(dir, plan.layout.tmpfsMasks)) args.push('--perms', '0755', '--dir', up);
    args.push('--ro-bind', dir, dir);
  }
  // After the re-exposed toolchain dirs, so credential files inside them stay hidden.
  for (const file of plan.layout.nullMasks) args.push('--ro-bind', '/dev/null', file);
  if (!plan.layout.tmpfsMasks.includes('/tmp')) args.push('--perms', '1777', '--tmpfs', '/tmp');
  args.push('--perms', '0777', '--dir', CELL_HOME);
  let workdir = CELL_SCRATCH;
  if (plan.worktree) {
    const target = plan.worktreeTarget ?? plan.worktree;
    // bwrap makes missing parents of a mount point 0700: the cell user could not reach a
    // worktree below a hidden directory (/tmp/repo/.git/forge-cells/x). Make them traversable.
    for (const dir of ancestorsBelowMasks(target, plan.layout.tmpfsMasks)) args.push('--perms', '0755', '--dir', dir);
    args.push('--bind', plan.held?.top ?? plan.worktree, target);
    // The host runs git on this worktree after the cell: a writable .git would let the cell
    // plant hooks or core.fsmonitor commands that the host would then execute.
    if (plan.gitMetadata)
      args.push('--ro-bind', plan.held?.git ?? plan.gitMetadata, join(target, relative(plan.worktree, plan.gitMetadata)));
    workdir = target;
  } else {
    args.push('--perms', '0777', '--dir', CELL_SCRATCH);
  }
  // After the worktree: node_modules and .venv go inside it.
  const inWorktree = (p: string) => workdir !== CELL_SCRATCH && (p === workdir || p.startsWith(`${workdir}/`));
  for (const d of plan.deps ?? []) {
    for (const dir of ancestorsBelowMasks(d.target, plan.layout.tmpfsMasks).filter((a) => !inWorktree(a)))
      args.push('--perms', '0755', '--dir', dir);
    args.push(d.writable ? '--bind' : '--ro-bind', d.source, d.target);
  }
  if (plan.egress) {
    // After every other mount (none can go below /run): the cell's socket and the relay's node.
    if (!plan.layout.tmpfsMasks.includes('/run')) throw new Error('allow_net on host cells needs /run hidden in the sandbox (a tmpfs)');
    args.push('--perms', '0755', '--dir', SANDBOX_EGRESS.dir);
    args.push('--ro-bind', plan.egress.socket, SANDBOX_EGRESS.socket, '--ro-bind', plan.egress.node, SANDBOX_EGRESS.node);
  }
  args.push('--chdir', workdir);
  // Never the host network, with or without allow_net.
  if (plan.dropTo) {
    // No user namespace: its single-uid map would leave no unprivileged uid to switch to.
    args.push('--unshare-ipc', '--unshare-pid', '--unshare-uts', '--unshare-cgroup-try', '--unshare-net');
  } else {
    args.push('--unshare-all');
  }
  args.push('--hostname', 'forge-cell', '--die-with-parent', '--new-session', '--cap-drop', 'ALL');
  // Only what bwrap needs to enter a worktree only its owner may (a 0700 directory) and setpriv
  // needs to switch users; the switch to an unprivileged uid clears them all.
  if (plan.dropTo) args.push('--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID', '--cap-add', 'CAP_DAC_READ_SEARCH');
  if (plan.dropTo) {
    // Last: whatever a mount above covered, the setpriv that runs as root is the host's own.
    args.push('--ro-bind', plan.dropTo.setpriv, plan.dropTo.setpriv);
  }
  args.push('--clearenv');
  if (plan.dropTo) {
    const relay = plan.egress ? relayStarterArgv() : [];
    args.push('--setenv', 'PATH', ROOT_STAGE_PATH, '--', ...setprivArgs(plan.dropTo), ...relay, ...afterDropArgv(plan.env, plan.argv));
  } else if (plan.egress) {
    // The relay starts with PATH alone; the spec's environment is set for the command only.
    args.push('--setenv', 'PATH', ROOT_STAGE_PATH, '--', ...relayStarterArgv(), ...afterDropArgv(plan.env, plan.argv));
  } else {
    for (const [name, value] of Object.entries(plan.env)) args.push('--setenv', name, value);
    args.push('--', ...plan.argv);
  }
  return args;
}

/** Pure: the directories between the deepest tmpfs mask above `path` and `path` itself. */
export function ancestorsBelowMasks(path: string, masks: string[]): string[] {
  const mask = masks.filter((m) => path.startsWith(m.endsWith('/') ? m : `${m}/`)).sort((a, b) => b.length - a.length)[0];
  if (!mask) return [];
  const parts = path
    .slice(mask.length + 1)
    .split('/')
    .filter(Boolean);
  return parts.slice(0, -1).map((_, i) => `${mask}/${parts.slice(0, i + 1).join('/')}`);
}
