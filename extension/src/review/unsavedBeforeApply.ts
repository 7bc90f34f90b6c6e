import { realpathSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import * as vscode from 'vscode';

/** What the check needs of an open document (vscode.TextDocument has it). */
export interface OpenDocument {
  readonly uri: { readonly scheme: string; readonly fsPath: string };
  readonly isDirty: boolean;
  readonly isUntitled: boolean;
}

/**
 * Pure: the open documents whose unsaved text an apply would go behind. Apply writes the files
 * on disk (the runner merges into them); an editor holding unsaved text of one of them keeps
 * showing that text, and saving it later overwrites the attempt's change while the run says
 * applied. Counted: dirty, a file on disk (a file: URI, not untitled), inside the repository,
 * and, when the apply's files are known (repo-relative), one of them. `real` resolves a path
 * (symlinks) so a document opened through a link still matches its repository.
 */
export function unsavedInRepo<T extends OpenDocument>(
  docs: readonly T[],
  repo: string,
  touched?: readonly string[],
  real: (p: string) => string = resolve,
): { doc: T; path: string }[] {
  const root = real(repo);
  const wanted = touched ? new Set(touched.map((p) => p.split(sep).join('/').replace(/^\.\//, ''))) : undefined;
  const out: { doc: T; path: string }[] = [];
  for (const doc of docs) {
    if (!doc.isDirty || doc.isUntitled || doc.uri.scheme !== 'file') continue;
    const rel = relative(root, real(doc.uri.fsPath));
    // Out of the repository is `..` or `../…`; a file named `..env.py` is in it.
    if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) continue;
    const path = rel.split(sep).join('/');
    if (wanted && !wanted.has(path)) continue;
    out.push({ doc, path });
  }
  return out;
}

/** Pure: the modal's text, naming at most three files ("a, b, c and 2 more"). */
export function unsavedWarning(paths: readonly string[]): string {
  const verb = paths.length === 1 ? 'has' : 'have';
  // As runner/src/repair/verdicts/someNames.ts says names (the extension imports only the runner's protocol).
  const names = paths.length > 3 ? `${paths.slice(0, 3).join(', ')} and ${paths.length - 3} more` : paths.join(', ');
  return `${names} ${verb} unsaved changes. Forge applies to the files on disk: save them first so the attempt is merged with your edits.`;
}

export const SAVE_AND_APPLY = 'Save and Apply';

/** A path's real location (symlinks resolved); a path that is not on disk (yet) as it is. */
function realPath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

/**
 * Before an apply into `repo`: when an open editor holds unsaved text of a file the apply
 * touches (`touched`, repo-relative; absent, or it fails: any file of the repository), a modal
 * asks to save them first. Save and Apply saves exactly those documents and goes on only when
 * every save succeeded; Cancel (or closing the modal) applies nothing. True: go on with the
 * apply. `touched` may be a lookup: it is asked only when some file of the repo is unsaved.
 */
export async function saveUnsavedBeforeApply(
  repo: string,
  touched?: readonly string[] | (() => Promise<readonly string[]>),
): Promise<boolean> {
  // A notebook's unsaved cells are no text document (they are vscode-notebook-cell: ones): its
  // file is a notebook document, saved as one.
  const docs: (OpenDocument & { save(): Thenable<boolean> })[] = [
    ...vscode.workspace.textDocuments,
    ...(vscode.workspace.notebookDocuments ?? []),
  ];
  if (unsavedInRepo(docs, repo, undefined, realPath).length === 0) return true;
  const files = typeof touched === 'function' ? await touched().catch(() => undefined) : touched;
  const unsaved = unsavedInRepo(docs, repo, files, realPath);
  if (unsaved.length === 0) return true;
  const choice = await vscode.window.showWarningMessage(
    unsavedWarning(unsaved.map((u) => u.path)),
    { modal: true, detail: 'Cancel applies nothing.' },
    SAVE_AND_APPLY,
  );
  if (choice !== SAVE_AND_APPLY) return false;
  for (const { doc, path } of unsaved) {
    // save() resolves false (or leaves the document dirty) when the write failed or was refused.
    const saved = await doc.save().then(
      (ok) => ok && !doc.isDirty,
      () => false,
    );
    if (!saved) {
      void vscode.window.showErrorMessage(`Forge: could not save ${path}; nothing was applied. Save it yourself, then apply again.`);
      return false;
    }
  }
  return true;
}
