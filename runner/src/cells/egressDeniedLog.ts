import { EGRESS_DENIED_KEPT, type EgressDenial } from '../protocol/cellResult.js';
import { netDestination } from '../protocol/netRule.js';

/** What the proxy refused one cell: the CellResult's egress_denied and egress_denied_more. */
export interface EgressDenied {
  denied: EgressDenial[];
  more: number;
}

export const NO_EGRESS_DENIED: EgressDenied = { denied: [], more: 0 };

/**
 * One cell's refused destinations, bounded: a cell may ask for any number of names, so only
 * the first EGRESS_DENIED_KEPT destinations are kept (each counted); requests for any other
 * are one number. Memory stays the same however many names a cell tries.
 */
export class EgressDeniedLog {
  private readonly kept = new Map<string, EgressDenial>();
  private more = 0;

  constructor(private readonly now: () => Date = () => new Date()) {}

  record(host: string, port: number, refusedBy: EgressDenial['refused_by']): void {
    const key = netDestination(host, port);
    const seen = this.kept.get(key);
    if (seen) seen.count++;
    else if (this.kept.size < EGRESS_DENIED_KEPT)
      this.kept.set(key, { host, port, count: 1, first_at: this.now().toISOString(), refused_by: refusedBy });
    else this.more++;
  }

  summary(): EgressDenied {
    return { denied: [...this.kept.values()].map((d) => ({ ...d })), more: this.more };
  }
}

/** Pure: the isolation warning that says what was refused (null: nothing), from the record. */
export function egressDeniedWarning(d: EgressDenied): string | null {
  if (d.denied.length === 0 && d.more === 0) return null;
  const listed = d.denied.map(
    (e) => `${netDestination(e.host, e.port)}${e.refused_by === 'deny_net' ? ' (deny_net)' : ''}${e.count > 1 ? ` x${e.count}` : ''}`,
  );
  const more = d.more > 0 ? `, and ${d.more} request(s) for other destinations` : '';
  return `egress refused (not in allow_net, or in deny_net): ${listed.join(', ')}${more}`;
}
