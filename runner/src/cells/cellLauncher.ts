import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import type { CellCgroup } from './cgroup.js';

/**
 * The process that becomes a cell. It joins the cell's cgroups from inside (so nothing ever
 * runs unconfined), then waits for its request on stdin: rlimit flag/value pairs, "--", and
 * the argv to exec, NUL-separated. Splitting "join" from "run" lets a launcher be started
 * ahead of need: joining a fresh cgroup can cost a kernel RCU grace period (10-20 ms measured
 * on cgroup v1 after an idle moment), which then happens off the cell's critical path.
 */
export const LAUNCHER_SCRIPT = [
  'exec 2>&1',
  'for f in "$@"; do printf "%s" "$$" > "$f" || exit 125; done',
  // Only 0, 1 and 2 reach the cell: any other descriptor the runner inherited (a shell's
  // `251>>file`) would let the command write to a host file.
  'for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-" 2>/dev/null; done',
  "mapfile -d '' -t req || exit 125",
  // EOF with no request: the runner let this launcher go unused.
  '[ "${#req[@]}" -gt 0 ] || exit 0',
  'i=0',
  'while [ "${req[i]}" != "--" ]; do ulimit "${req[i]}" "${req[i+1]}" || exit 125; i=$((i+2)); done',
  'exec "${req[@]:i+1}"',
].join('\n');

/** Pure: the request a launcher reads. Arguments cannot contain NUL (the CellSpec forbids it). */
export function encodeLaunchRequest(ulimitPairs: string[], argv: string[]): Buffer {
  return Buffer.from([...ulimitPairs, '--', ...argv].map((w) => w + '\0').join(''));
}

export interface CellLauncher {
  readonly child: ChildProcess;
  readonly stdout: Readable;
  readonly cgroup: CellCgroup | null;
  /** Still waiting for its request (not exited, not yet used). */
  idle(): boolean;
  launch(ulimitPairs: string[], argv: string[]): void;
  /** Lets an unused launcher exit and removes its cgroup. */
  dispose(): Promise<void>;
}

export interface LauncherOptions {
  bash: string;
  cgroup: CellCgroup | null;
  env: Record<string, string>;
  cwd: string;
}

export function spawnLauncher(opts: LauncherOptions): CellLauncher {
  const child = spawn(opts.bash, ['--noprofile', '--norc', '-c', LAUNCHER_SCRIPT, 'forge-cell', ...(opts.cgroup?.procsFiles ?? [])], {
    cwd: opts.cwd,
    env: opts.env,
    // Its own process group, so a timeout can kill the whole group at once.
    detached: true,
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  let used = false;
  let exited = false;
  child.once('exit', () => (exited = true));
  // A launcher that fails to start surfaces through 'exit'; never crash the runner on it.
  child.on('error', () => (exited = true));
  (child.stdin as Writable).on('error', () => undefined);
  return {
    child,
    stdout: child.stdout as Readable,
    cgroup: opts.cgroup,
    idle: () => !used && !exited,
    launch(ulimitPairs, argv) {
      used = true;
      (child.stdin as Writable).end(encodeLaunchRequest(ulimitPairs, argv));
    },
    async dispose() {
      used = true;
      if (!exited) {
        const gone = new Promise<void>((r) => child.once('exit', () => r()));
        (child.stdin as Writable).end();
        await Promise.race([gone, new Promise((r) => setTimeout(r, 2000).unref())]);
        if (!exited && child.pid !== undefined) {
          try {
            process.kill(-child.pid, 'SIGKILL');
          } catch {
            /* gone */
          }
        }
      }
      child.stdout?.destroy();
      await opts.cgroup?.release().catch(() => undefined);
    },
  };
}
