/**
 * A patch is bytes, exactly as git wrote them, from capture to store to apply: decoding it as
 * UTF-8 would replace invalid sequences (a Latin-1 source file, say) with U+FFFD, and what
 * ground truth tests and what a user applies would differ from what the attempt committed.
 * Headers are ASCII, so structural inspection reads it as Latin-1 (one char per byte).
 */
export type PatchBytes = Buffer;

export const EMPTY_PATCH: PatchBytes = Buffer.alloc(0);

/** A patch from the store: bytes (BLOB) or, from stores written before, text. */
export function patchFromStore(value: Buffer | Uint8Array | string | null | undefined): PatchBytes {
  if (value === null || value === undefined) return EMPTY_PATCH;
  return typeof value === 'string' ? Buffer.from(value, 'utf8') : Buffer.from(value);
}

/** One char per byte: safe for looking at patch structure (headers, +/- lines), never for display. */
export function patchStructure(patch: PatchBytes | string): string {
  return typeof patch === 'string' ? patch : patch.toString('latin1');
}

export function isEmptyPatch(patch: PatchBytes): boolean {
  return patchStructure(patch).trim() === '';
}
