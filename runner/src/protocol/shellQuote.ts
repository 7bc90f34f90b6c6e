/** Pure: one word for /bin/sh (and shlex), single-quoted: nothing inside is interpreted, any byte but NUL survives exactly. */
export function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
