import { closeSync, constants, openSync, rmSync } from 'node:fs';
import { entryPath, listDirectory, O_PATH, openDirectoryAt } from '../../hostguard/beneath.js';

/**
 * Stale .pyc files are a known source of wrong verdicts: none survive into a verdict cell.
 * The tree is a cell's work: each directory is entered through its parent's descriptor
 * without following a link, and the walk is bounded.
 */
export async function purgePythonCaches(tree: string): Promise<void> {
  let budget = 200_000;
  let top: number;
  try {
    top = openSync(tree, O_PATH | constants.O_DIRECTORY);
  } catch {
    return;
  }
  const stack = [top];
  try {
    while (stack.length > 0 && budget > 0) {
      const dir = stack.pop()!;
      try {
        const { entries } = listDirectory(dir, budget);
        for (const e of entries) {
          if (--budget <= 0) break;
          const name = e.name.toString('latin1');
          if (!e.isDirectory() || name === '.git' || name === 'node_modules') continue;
          // rm never follows a link it meets inside; the name is resolved from the open parent.
          if (name === '__pycache__') rmSync(entryPath(dir, e.name), { recursive: true, force: true });
          else {
            try {
              stack.push(openDirectoryAt(dir, e.name));
            } catch {
              /* replaced meanwhile: not entered */
            }
          }
        }
      } catch {
        /* unreadable: skipped */
      } finally {
        closeSync(dir);
      }
    }
  } finally {
    for (const fd of stack) closeSync(fd);
  }
}
