import { lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { rememberCheckoutOwners } from '../hostguard/checkoutOwnership.js';
import { applyPatchFile } from './applyPatch.js';
import { locateRepository } from './attemptWorktree.js';
import { describeUnrestored, type UndoRecord, pathInCheckout, restoreCheckout, saveCheckout, writeRecord } from './checkoutUndo.js';
import { numstatNames } from './gitPaths.js';
import { isEmptyPatch, type PatchBytes } from './patchBytes.js';
import { listPatchFiles, renameSources } from './patchHunks.js';
import { replaceFile } from './replaceFile.js';

export interface CheckoutApplyFile {
  path: string;
  ok: boolean;
  reason: string | null;
}

export interface CheckoutApplyOutcome {
  applied: boolean;
  /** clean: the patch applied as it is; three-way: merged with your edits; conflicts: merged, some files hold conflict markers. */
  mode: 'clean' | 'three-way' | 'conflicts' | 'none';
  files: CheckoutApplyFile[];
  /**
   * Files with conflicts, each with the saved copy of what your checkout held and of the side
   * the attempt (or the chosen part of it) merged in: written with conflict markers, or
   * (conflicts: 'yours') merged with your lines kept where the two conflict.
   */
  conflicts: { path: string; before: string; theirs: string }[];
  undo: UndoRecord | null;
}

export interface CheckoutApplyRequest {
  repo: string;
  runId: string;
  attempt: number;
  /** The run's base commit: the merge's common ancestor. */
  baseCommit: string;
  /** The tree the (chosen part of the) patch makes of the base: the merge's other side. */
  theirsTree: string;
  patch: PatchBytes;
  /** Where the saved checkout goes (checkoutUndo.undoRoot). */
  undoRoot: string;
  /** Merge with edits in the checkout when the patch does not apply as it is. */
  merge: boolean;
  /**
   * What a file whose merge conflicts gets: conflict markers (a shell user resolves them, as
   * after git merge), or the merge with your lines where the two conflict (`yours`: the editor
   * resolves it in VS Code's merge editor, which resets a file holding markers to the base's
   * lines and can save that over your edit; with yours kept, no state of the file on disk loses
   * what you wrote, and the attempt's lines that do not conflict are in).
   */
  conflicts?: 'markers' | 'yours';
}

const ANY_CONFLICT_COUNT = Array.from({ length: 128 }, (_, i) => i);

/**
 * Applies a patch to the user's checkout all or nothing, through the safe git view (no
 * filters, attributes or drivers of the repository act). When it does not apply as it is and
 * `merge` is asked, each file that does not is merged 3-way (base commit, your file, the
 * attempt's file) with `git merge-file`, conflicts left as markers; every file is computed
 * before any is written, what the checkout held is saved first, and a failure while writing
 * puts it back, so the checkout is never half applied.
 */
export async function applyIntoCheckout(req: CheckoutApplyRequest): Promise<CheckoutApplyOutcome> {
  if (isEmptyPatch(req.patch)) return { applied: true, mode: 'clean', files: [], conflicts: [], undo: null };
  const loc = await locateRepository(req.repo);
  return applyPatchFile(loc, req.patch, async (git, file) => {
    // Exact names (NUL-separated bytes; one not valid UTF-8 is refused here, before anything is written).
    const paths = numstatNames((await git(['apply', '--numstat', '-z', file])).stdout);
    const listed = listPatchFiles(req.patch);
    // A rename removes its source: undo must put it back, so it is saved too.
    const touched = [...paths, ...renameSources(req.patch)];
    const check = (include?: string) =>
      git(['apply', '--check', '--whitespace=nowarn', ...(include ? [`--include=${literalPattern(include)}`] : []), file]).then(
        () => null,
        (e: Error) => conflictReason(e.message),
      );
    const write = async (clean: string[], merged: Map<string, Buffer>): Promise<UndoRecord> => {
      const undo = saveCheckout(req.undoRoot, loc.top, req.runId, req.attempt, touched);
      // A root runner writes new inodes as root: they go back to their owners afterwards.
      const restoreOwners = rememberCheckoutOwners(loc.top, touched);
      try {
        // All clean: the patch as it is; else only the clean files (the merged ones are written below).
        if (merged.size === 0 && clean.length === paths.length) await git(['apply', '--whitespace=nowarn', file]);
        else if (clean.length > 0) await git(['apply', '--whitespace=nowarn', ...clean.map((p) => `--include=${literalPattern(p)}`), file]);
        // A new file renamed over the old: never written through a hard link to a file outside.
        for (const [path, bytes] of merged) replaceFile(pathInCheckout(loc.top, path), bytes, null);
      } catch (e) {
        const why = (e as Error).message.split('\n')[0];
        const back = restoreCheckout(undo);
        try {
          restoreOwners();
        } catch {
          // Best effort: an owner that could not be given back does not hide what happened.
        }
        const dir = join(req.undoRoot, undo.id);
        if (back.failed.length === 0) {
          rmSync(dir, { recursive: true, force: true });
          throw new Error(`the apply failed while writing and was undone, nothing changed: ${why}`);
        }
        // No record is written (Undo must not pick a failed apply); the saved copies stay for the user.
        throw new Error(
          `the apply failed while writing (${why}); putting your checkout back failed for ${describeUnrestored(back.failed)}; what they held is saved in ${dir}/files`,
        );
      }
      restoreOwners();
      writeRecord(req.undoRoot, undo);
      return undo;
    };

    if ((await check()) === null) {
      const undo = await write(paths, new Map());
      return { applied: true, mode: 'clean', files: paths.map((path) => ({ path, ok: true, reason: null })), conflicts: [], undo };
    }
    const files: CheckoutApplyFile[] = [];
    for (const path of paths) {
      const reason = await check(path);
      files.push({ path, ok: reason === null, reason });
    }
    if (!req.merge) return { applied: false, mode: 'none', files, conflicts: [], undo: null };

    // Only a text file both sides still have can be merged line by line.
    const kinds = new Map(listed.map((f) => [f.path, f.whole]));
    const merged = new Map<string, Buffer>();
    const conflicted: string[] = [];
    const theirsOf = new Map<string, Buffer>();
    const scratch = mkdtempSync(join(tmpdir(), 'forge-merge-'));
    try {
      for (const f of files) {
        if (f.ok) continue;
        const whole = kinds.get(f.path);
        if (whole !== null) {
          f.reason = `${f.reason ?? 'does not apply'}; a ${whole ?? 'renamed file'} cannot be merged line by line`;
          continue;
        }
        const full = pathInCheckout(loc.top, f.path);
        const st = lstatSync(full, { throwIfNoEntry: false });
        if (!st?.isFile()) {
          f.reason = `${f.reason ?? 'does not apply'}; it is ${st ? 'not a regular file' : 'gone'} in your checkout, so it cannot be merged`;
          continue;
        }
        const ours = join(scratch, 'ours');
        const base = join(scratch, 'base');
        const theirs = join(scratch, 'theirs');
        writeFileSync(ours, readFileSync(full));
        writeFileSync(base, (await git(['cat-file', 'blob', `${req.baseCommit}:${f.path}`])).stdout);
        writeFileSync(theirs, (await git(['cat-file', 'blob', `${req.theirsTree}:${f.path}`])).stdout);
        const out = await runMergeFile(git, ours, base, theirs, req.attempt, false);
        if (out.conflicts > 0) conflicted.push(f.path);
        const keepYours = out.conflicts > 0 && req.conflicts === 'yours';
        merged.set(f.path, keepYours ? (await runMergeFile(git, ours, base, theirs, req.attempt, true)).bytes : out.bytes);
        if (out.conflicts > 0) theirsOf.set(f.path, readFileSync(theirs));
        f.ok = true;
        f.reason =
          out.conflicts === 0
            ? 'merged with your edits'
            : keepYours
              ? `${out.conflicts} conflict(s): your lines are kept there, the rest of the attempt's change is merged in`
              : `${out.conflicts} conflict(s) to resolve`;
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    if (files.some((f) => !f.ok)) return { applied: false, mode: 'none', files, conflicts: [], undo: null };
    const clean = files.filter((f) => !merged.has(f.path)).map((f) => f.path);
    const undo = await write(clean, merged);
    const before = new Map(undo.files.map((u) => [u.path, u.before ?? '']));
    return {
      applied: true,
      mode: conflicted.length > 0 ? 'conflicts' : 'three-way',
      files,
      conflicts: conflicted.map((path) => ({
        path,
        before: before.get(path) ?? '',
        theirs: saveTheirs(req.undoRoot, undo, path, theirsOf.get(path)!),
      })),
      undo,
    };
  });
}

/** `keepOurs`: a conflicting region takes your lines (git merge-file --ours) instead of markers. */
async function runMergeFile(
  git: (args: string[], opts?: { okExitCodes?: number[] }) => Promise<{ stdout: Buffer; exitCode: number }>,
  ours: string,
  base: string,
  theirs: string,
  attempt: number,
  keepOurs: boolean,
): Promise<{ bytes: Buffer; conflicts: number }> {
  const labels = ['-L', 'your checkout', '-L', 'base', '-L', `attempt ${attempt}`];
  const r = await git(['merge-file', '-p', ...(keepOurs ? ['--ours'] : []), ...labels, ours, base, theirs], {
    okExitCodes: ANY_CONFLICT_COUNT,
  });
  return { bytes: r.stdout, conflicts: r.exitCode };
}

/**
 * The side merged in (the attempt's file, or what the chosen part makes of the base) beside
 * the saved checkout: the merge editor shows exactly what was merged, not the whole attempt.
 */
function saveTheirs(root: string, undo: UndoRecord, path: string, bytes: Buffer): string {
  const dir = join(root, undo.id, 'theirs');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const saved = undo.files.find((u) => u.path === path)?.before;
  const file = join(dir, saved ? basename(saved) : `${undo.files.length}`);
  writeFileSync(file, bytes, { mode: 0o600 });
  return file;
}

/** --include takes a wildmatch pattern: a path with * ? [ or \\ in its name must match only itself. */
export function literalPattern(path: string): string {
  return path.replace(/[*?[\]\\]/g, '\\$&');
}

function conflictReason(gitError: string): string {
  const m = /error: (.*)$/.exec(gitError);
  return (m?.[1] ?? gitError).slice(0, 300);
}
