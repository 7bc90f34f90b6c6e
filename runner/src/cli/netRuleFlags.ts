import { InputError } from '../protocol/inputError.js';
import { parseNetRule } from '../protocol/netRule.js';

/** Pure: the entries of flags that each take a comma-separated list (`--deny-net a,b --deny-net c`). */
export function netRuleList(values: readonly string[]): string[] {
  return values.flatMap((v) => v.split(',')).map((e) => e.trim());
}

/**
 * --allow-net and --deny-net entries, each checked before anything runs: a bad one (a port
 * out of range, an IPv6 address without brackets, an empty entry) is one line naming the flag,
 * the entry and how to write it.
 */
export function checkedNetRules(flag: string, entries: readonly string[]): string[] {
  for (const e of entries) {
    const r = parseNetRule(e);
    if ('error' in r) throw new InputError(`${flag}${e.trim() === '' ? ':' : ''} ${r.error}`);
  }
  return entries.map((e) => e.trim());
}
