import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Observation } from '../../protocol/instanceCell.js';

/**
 * The on-disk shape shared by instance providers that keep one directory per incarnation:
 * a pid file, a journal of effects, and a `destroyed` tombstone.
 */
export function readOr(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** The pid in `pidFile` if that process is alive (not a zombie) and its command line names `marker`. */
export function livePid(pidFile: string, marker: string): number | null {
  const pid = Number(readOr(pidFile).trim());
  if (!Number.isInteger(pid) || pid <= 0) return null;
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    // Whole path components only: .../g1 must not match a process of .../g10.
    const names = args.some((a) => a === marker || a.startsWith(`${marker}/`) || a.includes(`=${marker}/`));
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return names && state !== 'Z' ? pid : null;
  } catch {
    return null;
  }
}

/** absent / removed / running / exited / created, from the directory and a live pid. */
export function observeIncarnation(dir: string, generation: number, pid: number | null, runtimeIdPrefix: string): Observation {
  const base = { generation, runtime_id: null as string | null };
  if (!existsSync(dir)) return { ...base, runtime_state: 'absent' };
  if (existsSync(join(dir, 'destroyed'))) return { ...base, runtime_state: 'removed' };
  if (pid !== null) return { generation, runtime_state: 'running', runtime_id: `${runtimeIdPrefix}:${pid}` };
  return { ...base, runtime_state: existsSync(join(dir, 'journal')) ? 'exited' : 'created' };
}

export function isTombstoned(dir: string): boolean {
  return !existsSync(dir) || existsSync(join(dir, 'destroyed'));
}

/** Keeps the journal (the record of effects) and a tombstone naming the operation; drops the rest. */
export function tombstone(dir: string, operationId: string): void {
  for (const entry of readdirSync(dir)) if (entry !== 'journal') rmSync(join(dir, entry), { recursive: true, force: true });
  writeFileSync(join(dir, 'destroyed'), `${operationId}\n`);
}

export function journalLines(dir: string): string[] {
  return readOr(join(dir, 'journal')).split('\n').filter(Boolean);
}

/**
 * Pure: what `start` does for an incarnation observed in `obs`. Running: nothing (no new
 * effect). Never made or destroyed: refused, a new generation is needed. Otherwise launch.
 */
export function startDecision(obs: Observation, instanceId: string): 'already_running' | 'launch' {
  if (obs.runtime_state === 'running') return 'already_running';
  if (obs.runtime_state === 'absent' || obs.runtime_state === 'removed') {
    throw new Error(
      `instance ${instanceId} generation ${obs.generation} has no runtime (${obs.runtime_state}); provision a new generation`,
    );
  }
  return 'launch';
}
