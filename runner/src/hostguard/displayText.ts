import { isUtf8 } from 'node:buffer';

/**
 * Pure: bytes from a tree a cell wrote, as text to show. Valid UTF-8 is shown as it is; a line
 * that is not valid UTF-8 shows its non-ASCII bytes as \xNN, so a reviewer sees the bytes that
 * will be applied (a plain decode would show U+FFFD and hide them).
 */
export function displayText(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  const lines: string[] = [];
  let start = 0;
  while (start <= bytes.length) {
    let end = bytes.indexOf(0x0a, start);
    if (end === -1) end = bytes.length;
    const line = bytes.subarray(start, end);
    lines.push(
      isUtf8(line)
        ? line.toString('utf8')
        : [...line].map((b) => (b < 0x80 ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`)).join(''),
    );
    start = end + 1;
  }
  return lines.join('\n');
}

export function isUtf8Text(bytes: Buffer): boolean {
  return isUtf8(bytes);
}
