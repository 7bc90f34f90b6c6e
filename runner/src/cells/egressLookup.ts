import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';

/** How long a name the proxy resolved is reused. */
const TTL_MS = 60_000;
const MAX_NAMES = 512;

/**
 * The egress proxy's name lookups, coalesced and kept for a minute. A package manager opens
 * dozens of tunnels to one registry at once; the host's resolver answers a burst of the same
 * question slowly (measured here: past about 23 at once, each waits 5 s), which made an
 * `npm ci` through the proxy take 100 s instead of 8. One lookup per name serves the burst.
 * The allowlist is checked on the name before any lookup; what the name resolves to is the
 * resolver's word either way.
 */
export function cachingLookup(resolve: typeof dnsLookup = dnsLookup, now: () => number = Date.now): LookupFunction {
  const cache = new Map<string, { at: number; addresses: Promise<LookupAddress[]> }>();
  const fetch = (host: string): Promise<LookupAddress[]> => {
    const hit = cache.get(host);
    if (hit && now() - hit.at < TTL_MS) return hit.addresses;
    const addresses = new Promise<LookupAddress[]>((ok, fail) =>
      resolve(host, { all: true }, (err, found) => (err ? fail(err) : ok(found))),
    );
    if (cache.size >= MAX_NAMES) cache.delete(cache.keys().next().value!);
    cache.set(host, { at: now(), addresses });
    // A failure is not kept: the next tunnel asks again.
    addresses.catch(() => cache.delete(host));
    return addresses;
  };
  return (host, options, callback) => {
    fetch(host).then(
      (all) => {
        const wanted = options.family === 4 || options.family === 6 ? all.filter((a) => a.family === options.family) : all;
        if (wanted.length === 0) {
          const err = Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND', hostname: host });
          return callback(err, options.all ? [] : '', 4);
        }
        if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, wanted);
        callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, options.all ? [] : '', 4),
    );
  };
}
