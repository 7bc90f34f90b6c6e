import { mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../protocol/inputError.js';
import { isInside } from '../workspace/pathInside.js';

/**
 * Pure: whether cells on worktrees `a` and `b` could touch each other's tree: the same
 * directory, or one inside the other (but not inside the other's `.git`, which every cell
 * sees read-only: attempt worktrees live in `<repo>/.git/forge-cells/`).
 */
export function worktreesOverlap(a: string, b: string): boolean {
  if (a === b) return true;
  if (isInside(b, a)) return !isInside(b, join(a, '.git'));
  if (isInside(a, b)) return !isInside(a, join(b, '.git'));
  return false;
}

interface Claim {
  pid: number;
  /** The runner process's start time (field 22 of /proc/<pid>/stat): a reused pid is not it. */
  start: string;
  top: string;
}

/**
 * Registers that a cell of this runner works on `top` (under `dir`, one file per cell) until
 * the returned release is called, and refuses one whose worktree overlaps a running cell's.
 * A cell can rename anything in its worktree: a second cell on the same tree or one inside it
 * could have the runner's by-path steps (the sandbox's bind mount, the diff) redirected
 * outside while they run. The claim is written before the others are read, so of two cells
 * starting at once at least one sees the other. Claims of runners that are gone are removed.
 */
export function claimWorktree(dir: string, cellId: string, top: string): () => void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const mine = join(dir, `${cellId}.json`);
  const claim: Claim = { pid: process.pid, start: processStart(process.pid) ?? '', top };
  writeFileSync(mine, JSON.stringify(claim), { flag: 'wx', mode: 0o600 });
  const release = () => {
    try {
      unlinkSync(mine);
    } catch {
      /* gone already */
    }
  };
  for (const name of readdirSync(dir)) {
    if (name === `${cellId}.json` || !name.endsWith('.json')) continue;
    const other = readClaim(join(dir, name));
    if (!other) continue;
    if (processStart(other.pid) !== other.start) {
      try {
        unlinkSync(join(dir, name));
      } catch {
        /* another runner removed it */
      }
      continue;
    }
    if (worktreesOverlap(top, other.top)) {
      release();
      throw new InputError(
        `worktree ${top} ${top === other.top ? 'is' : 'overlaps'} the worktree ${other.top} of ${name.slice(0, -5)}, a cell still running (runner pid ${other.pid}): cells on one tree (or one inside another) could redirect each other's host steps; wait for it to end or use another worktree`,
      );
    }
  }
  return release;
}

function readClaim(path: string): Claim | null {
  try {
    const c = JSON.parse(readFileSync(path, 'utf8')) as Partial<Claim>;
    return typeof c.pid === 'number' && typeof c.start === 'string' && typeof c.top === 'string' ? (c as Claim) : null;
  } catch {
    return null;
  }
}

function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from the last ")".
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}
