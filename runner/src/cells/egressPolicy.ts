/**
 * Pure: may a cell with this allowlist reach `host`? Entries are exact host names, or
 * "*.example.com" for any subdomain (not example.com itself). Case-insensitive; a trailing
 * dot is ignored. IP literals match only when listed exactly.
 */
export function hostAllowed(host: string, allowlist: readonly string[]): boolean {
  const h = normalize(host);
  if (h === '') return false;
  return allowlist.some((entry) => {
    const e = normalize(entry);
    if (e.startsWith('*.')) return h.endsWith(e.slice(1)) && h.length > e.length - 1;
    return h === e;
  });
}

function normalize(name: string): string {
  return name
    .trim()
    .toLowerCase()
    .replace(/\.$/, '')
    .replace(/^\[(.*)\]$/, '$1');
}

/** Pure: "host:port" of a CONNECT request -> parts, or null when malformed. */
export function parseConnectTarget(target: string): { host: string; port: number } | null {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(target);
  if (!m) return null;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return null;
  return { host: m[1]!.replace(/^\[(.*)\]$/, '$1'), port };
}

/** Pure: the cell id and token of a "Proxy-Authorization: Basic ..." header, or null. */
export function parseProxyAuthorization(header: string | undefined): { cellId: string; token: string } | null {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header?.trim() ?? '');
  if (!m) return null;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return null;
  return { cellId: decoded.slice(0, colon), token: decoded.slice(colon + 1) };
}
