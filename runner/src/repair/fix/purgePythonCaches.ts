import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Stale .pyc files are a known source of wrong verdicts: none survive into a verdict cell.
 * The tree is a cell's work: links are not followed and the walk is bounded.
 */
export async function purgePythonCaches(tree: string): Promise<void> {
  let budget = 200_000;
  const stack = [tree];
  while (stack.length > 0 && budget > 0) {
    const dir = stack.pop()!;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      if (--budget <= 0) break;
      if (!e.isDirectory() || e.name === '.git' || e.name === 'node_modules') continue;
      const p = join(dir, e.name);
      if (e.name === '__pycache__') rmSync(p, { recursive: true, force: true });
      else stack.push(p);
    }
  }
}
