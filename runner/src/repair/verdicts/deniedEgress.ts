import type { EgressDenial } from '../../protocol/cellResult.js';
import { netDestination } from '../../protocol/netRule.js';

/** What a verdict keeps of its test cell's egress_denied record (when is the cell's to say). */
export type DeniedEgress = Pick<EgressDenial, 'host' | 'port' | 'count' | 'refused_by'>;

/** Pure: the verdict's copy of a cell's record. */
export function deniedEgressOf(denied: readonly EgressDenial[] | undefined): DeniedEgress[] {
  return (denied ?? []).map(({ host, port, count, refused_by }) => ({ host, port, count, refused_by }));
}

/** How many destinations a sentence names; the rest are counted. */
const NAMED = 3;

const and = (items: string[]) => (items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`);

function named(list: readonly DeniedEgress[], extra: (d: DeniedEgress) => string = () => ''): string {
  const shown = list.slice(0, NAMED).map((d) => `${netDestination(d.host, d.port)}${extra(d)}`);
  return and(list.length > NAMED ? [...shown, `${list.length - NAMED} more`] : shown);
}

/**
 * Pure: what the runner's egress proxy refused a test run, in words, with the way out: hosts
 * outside the allowlist are let through with --allow-net, a host the user's own --deny-net
 * names is theirs to drop from it. `who` starts the sentence ("the tests", "its tests"). Null
 * when nothing was refused.
 */
export function deniedEgressSaid(
  denied: readonly DeniedEgress[],
  who: string,
  at: (d: DeniedEgress) => string = () => '',
): { detail: string; fix: string } | null {
  const notAllowed = denied.filter((d) => d.refused_by === 'allow_net');
  const inDenyList = denied.filter((d) => d.refused_by === 'deny_net');
  const details: string[] = [];
  const fixes: string[] = [];
  if (notAllowed.length > 0) {
    details.push(`${who} tried to reach ${named(notAllowed, at)}, which ${notAllowed.length === 1 ? 'is' : 'are'} not allowed`);
    const hosts = [...new Set(notAllowed.map((d) => netDestination(d.host, null)))].slice(0, NAMED);
    fixes.push(`pass ${hosts.map((h) => `--allow-net ${h}`).join(' ')}`);
  }
  if (inDenyList.length > 0) {
    details.push(`${notAllowed.length > 0 ? 'and' : `${who} tried to reach`} ${named(inDenyList, at)}, which --deny-net refuses`);
    fixes.push('drop it from --deny-net if they need it');
  }
  if (details.length === 0) return null;
  return { detail: details.join(' '), fix: fixes.join(', or ') };
}

/** Pure: the same as one clause: "the tests tried to reach X:443, which is not allowed: pass --allow-net X". */
export function deniedEgressLine(denied: readonly DeniedEgress[], who: string, at?: (d: DeniedEgress) => string): string | null {
  const said = deniedEgressSaid(denied, who, at);
  return said ? `${said.detail}: ${said.fix}` : null;
}

/**
 * Pure: one sentence for a whole run: every destination refused to any of its test runs,
 * each with the runs it was refused to ("baseline", "attempt 1"). Null when none was.
 */
export function runDeniedEgressLine(runs: readonly { who: string; denied: readonly DeniedEgress[] }[]): string | null {
  const merged = new Map<string, { d: DeniedEgress; whos: string[] }>();
  for (const run of runs)
    for (const d of run.denied) {
      const key = `${d.refused_by} ${netDestination(d.host, d.port)}`;
      const m = merged.get(key);
      if (!m) merged.set(key, { d: { ...d }, whos: [run.who] });
      else {
        m.d.count += d.count;
        if (!m.whos.includes(run.who)) m.whos.push(run.who);
      }
    }
  const list = [...merged.values()];
  const whos = new Map(list.map((m) => [m.d, m.whos]));
  return deniedEgressLine(
    list.map((m) => m.d),
    'the tests',
    (d) => ` (${and(whos.get(d) ?? [])})`,
  );
}
