/**
 * The issue as the user gives it: written in a draft editor or read from a file. Pure (no
 * `vscode`): the editor and file I/O are in issueDraft.ts and issueFile.ts.
 */

/** Starts the draft's own comment; only comments starting with it are left out of the issue. */
export const DRAFT_MARKER = '<!-- Forge:';

/** The runner takes at most 200,000 characters (FixRequest.issue); a file this size cannot exceed it. */
export const MAX_ISSUE_FILE_BYTES = 200 * 1024;

/**
 * The untitled draft's text: an empty first line for the cursor, then one comment line saying
 * what to write. The comment goes below so that the editor tab, which VS Code names after an
 * untitled document's first line, shows the issue's title as it is typed. Markdown, so that
 * headings and code blocks in a pasted issue read as such.
 */
export function issueDraftTemplate(untracked: string | null): string {
  const note = untracked ? ` Note: ${untracked}.` : '';
  return (
    `\n\n${DRAFT_MARKER} write the issue above. Its first line names the run; then what is wrong and how to see it: ` +
    `a failing test, or steps to reproduce. Start Fix (▶ in the title bar) sends everything but this comment.${note} -->\n`
  );
}

/** The issue in a draft: its text without the draft's comment and the blank lines around it; newlines inside are kept. */
export function issueFromDraft(text: string): string {
  const withoutComment = text.replace(/\r\n/g, '\n').replace(/<!-- Forge:[\s\S]*?-->[ \t]*\n?/g, '');
  return withoutComment.replace(/^(?:[ \t]*\n)+/, '').trimEnd();
}

export type IssueFileRead = { ok: true; text: string } | { ok: false; error: string };

/** Size check before reading: an issue file larger than this is refused without reading it. */
export function issueFileSizeError(name: string, bytes: number): string | null {
  if (bytes <= MAX_ISSUE_FILE_BYTES) return null;
  return `${name} is ${Math.ceil(bytes / 1024)} KB; an issue file may be at most ${MAX_ISSUE_FILE_BYTES / 1024} KB`;
}

/** An issue file's bytes as text, or why they cannot be an issue (too large, binary, empty). */
export function issueFromFileBytes(name: string, bytes: Uint8Array): IssueFileRead {
  const tooLarge = issueFileSizeError(name, bytes.byteLength);
  if (tooLarge) return { ok: false, error: tooLarge };
  // A NUL byte or bytes that are not UTF-8 mean an image, an archive, or some other encoding.
  let text: string;
  try {
    if (bytes.includes(0)) throw new Error('NUL byte');
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return { ok: false, error: `${name} is not a text file (an issue file is Markdown or plain text in UTF-8)` };
  }
  if (text.trim() === '') return { ok: false, error: `${name} is empty` };
  return { ok: true, text: text.replace(/\r\n/g, '\n') };
}
