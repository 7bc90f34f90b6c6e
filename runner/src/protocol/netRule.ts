/**
 * The grammar of allow_net and deny_net entries, shared by the schemas (which refuse a bad
 * entry) and the egress proxy (which matches destinations against them). No Node imports:
 * the extension and the webview load protocol/ too.
 *
 * An entry is HOST or HOST:PORT. HOST is a name (registry.npmjs.org), a wildcard for the
 * subdomains of one (*.example.com, never example.com itself), an IPv4 address, or an IPv6
 * address in brackets ([2001:db8::1]). Without a port the entry covers every port.
 */
export interface NetRule {
  /** Canonical: lower case, no trailing dot; an IP address in its one written form (IPv6 without brackets). */
  host: string;
  /** `*.host`: any name below host. */
  wildcard: boolean;
  /** null: every port. */
  port: number | null;
}

const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const NAME = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`);
const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;
const HOW = 'pass HOST or HOST:PORT, e.g. registry.npmjs.org, *.example.com, 10.0.0.5:8080 or [2001:db8::1]:443';

/**
 * Pure: the host as the WHATWG URL parser writes it (lower case, IDNA, IPv4 in dotted quad:
 * `127.1` and `2130706433` are 127.0.0.1; IPv6 compressed, without brackets), trailing dot
 * kept; null when it is not a host. One form per address, so a rule on an address cannot be
 * stepped around by writing the address another way.
 */
export function canonicalHost(raw: string): string | null {
  let h = raw.trim();
  const bracketed = /^\[(.*)\]$/.exec(h);
  if (bracketed) h = bracketed[1]!;
  if (h === '' || /[\s/?#@\\%[\]]/.test(h)) return null;
  try {
    if (h.includes(':')) return new URL(`http://[${h}]/`).hostname.slice(1, -1);
    if (bracketed) return null;
    return new URL(`http://${h}/`).hostname;
  } catch {
    return null;
  }
}

/** Pure: the matching form of a canonical host (a trailing dot names the same host). */
export function matchingHost(canonical: string): string {
  return canonical.replace(/\.$/, '');
}

/** Pure: an IP address (as canonicalHost writes it), which rules match only exactly. */
export function isIpLiteral(canonical: string): boolean {
  return canonical.includes(':') || IPV4.test(canonical);
}

/** Pure: `host:port` as a person writes it (an IPv6 address in brackets). */
export function netDestination(host: string, port: number | null): string {
  const h = host.includes(':') ? `[${host}]` : host;
  return port === null ? h : `${h}:${port}`;
}

/** Pure: one entry -> its rule, or why it is not one (a line that ends with how to write one). */
export function parseNetRule(entry: string): NetRule | { error: string } {
  const text = entry.trim();
  if (text === '') return { error: `an entry is empty; ${HOW}` };
  if (text.length > 300) return { error: `${text.slice(0, 40)}...: longer than a host and port can be; ${HOW}` };
  let hostPart = text;
  let portPart: string | null = null;
  const v6 = /^(\[[^\]]*\])(?::(.*))?$/.exec(text);
  if (v6) {
    hostPart = v6[1]!;
    portPart = v6[2] ?? null;
  } else if ((text.match(/:/g) ?? []).length > 1) {
    return { error: `${text}: an IPv6 address goes in brackets, e.g. [2001:db8::1] or [2001:db8::1]:443` };
  } else if (text.includes(':')) {
    hostPart = text.slice(0, text.indexOf(':'));
    portPart = text.slice(text.indexOf(':') + 1);
  }
  let port: number | null = null;
  if (portPart !== null) {
    if (!/^\d{1,5}$/.test(portPart) || Number(portPart) < 1 || Number(portPart) > 65535)
      return { error: `${text}: the port must be a number from 1 to 65535 (got "${portPart}"); ${HOW}` };
    port = Number(portPart);
  }
  const wildcard = hostPart.startsWith('*.');
  const bare = wildcard ? hostPart.slice(2) : hostPart;
  const notHost = { error: `${text}: not a host; ${HOW}` };
  // The name itself is checked before the URL parser rewrites it (it would take "a..b" or "ä").
  if (!hostPart.startsWith('[') && !NAME.test(bare.toLowerCase().replace(/\.$/, ''))) return notHost;
  const canonical = canonicalHost(bare);
  if (canonical === null) return notHost;
  const host = matchingHost(canonical);
  if (wildcard && isIpLiteral(host)) return { error: `${text}: a wildcard takes a domain name, not an IP address; ${HOW}` };
  return { host, wildcard, port };
}

/** Pure: every entry parsed, or the first bad one's error. */
export function parseNetRules(entries: readonly string[]): NetRule[] | { error: string } {
  const rules: NetRule[] = [];
  for (const e of entries) {
    const r = parseNetRule(e);
    if ('error' in r) return r;
    rules.push(r);
  }
  return rules;
}
