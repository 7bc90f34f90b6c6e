/**
 * Pure: a list of names said in one line: the first `shown`, then how many more ("a, b, c and 4
 * more"), so a progress line or an ending stays short whatever a test suite names.
 */
export function someNames(names: readonly string[], shown = 3): string {
  const head = names.slice(0, shown).join(', ');
  return names.length > shown ? `${head} and ${names.length - shown} more` : head;
}
