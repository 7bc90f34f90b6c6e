import type { PatchBytes } from '../../workspace/patchBytes.js';
import { treeWithBaseFiles } from '../../workspace/treeWithBaseFiles.js';
import { manifestWithBaseTests, testFileRole } from '../verdicts/testInfrastructure.js';

/**
 * The commit an attempt is judged on when its patch changes tests or their configuration:
 * its code with the base commit's tests (testInfrastructure.ts), or null when it changes none
 * (then its own worktree is judged). `changed` names the files given back, for the report.
 */
export function verdictTree(repo: string, base: string, patch: PatchBytes): Promise<{ commit: string; changed: string[] } | null> {
  return treeWithBaseFiles(repo, base, patch, {
    byPath: (path) => {
      const role = testFileRole(path);
      return role === 'test' ? 'base' : role === 'manifest' ? 'read' : 'keep';
    },
    byContent: (_path, base, attempt) => {
      // A package.json the attempt added is a new package's (its tests are new tests); one it removed comes back.
      if (!base) return 'keep';
      if (!attempt) return 'base';
      const own = attempt.toString('utf8');
      const merged = manifestWithBaseTests(base.toString('utf8'), own);
      return merged === null ? 'base' : merged === own ? 'keep' : { bytes: Buffer.from(merged) };
    },
  });
}

/** How the report says it: the files whose changes the verdict did not use. */
export function baseTestsNote(changed: readonly string[]): string {
  const names = `${changed.slice(0, 5).join(', ')}${changed.length > 5 ? ` and ${changed.length - 5} more` : ''}`;
  return `its tests ran as on the base commit: its changes to ${names} (tests or their configuration) are in its patch for review, not in its verdict`;
}
