import { applyPatchFile } from './applyPatch.js';
import { locateRepository } from './attemptWorktree.js';
import type { PatchBytes } from './patchBytes.js';

/**
 * Whether the checkout holds an attempt's whole change: its patch taken back (git apply -R
 * --check, through the safe view) applies, so every hunk is in. Parts applied one after
 * another can add up to the whole; the run is then applied, not "partly applied". False on
 * any doubt (a file edited since, an error): the run then stays open, as after a part.
 */
export async function wholeChangeIn(repo: string, patch: PatchBytes): Promise<boolean> {
  try {
    const loc = await locateRepository(repo);
    return await applyPatchFile(loc, patch, (git, file) =>
      git(['apply', '-R', '--check', '--whitespace=nowarn', file]).then(
        () => true,
        () => false,
      ),
    );
  } catch {
    return false;
  }
}
