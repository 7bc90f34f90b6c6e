import { canonicalHost, isIpLiteral, matchingHost, type NetRule, parseNetRules } from '../protocol/netRule.js';

/** A cell's egress rules, parsed once when the cell is granted the proxy. */
export interface EgressRules {
  allow: readonly NetRule[];
  deny: readonly NetRule[];
}

/** Parses a cell's allow_net and deny_net; throws on a bad entry (the schemas refuse one first). */
export function egressRules(allowNet: readonly string[], denyNet: readonly string[]): EgressRules {
  const allow = parseNetRules(allowNet);
  const deny = parseNetRules(denyNet);
  if ('error' in allow) throw new Error(`allow_net: ${allow.error}`);
  if ('error' in deny) throw new Error(`deny_net: ${deny.error}`);
  return { allow, deny };
}

export type EgressDecision = { allowed: true; host: string } | { allowed: false; host: string | null; refusedBy: 'allow_net' | 'deny_net' };

/**
 * Pure: may a cell with these rules reach `host` on `port`? The deny list is checked first and
 * wins (as anthropic-experimental's sandbox-runtime checks deniedDomains first); then some
 * allow rule must match. A rule matches a name exactly or, as `*.example.com`, any name below
 * example.com (not example.com itself); an IP address only when the rule is that address; a
 * rule with a port only that port. Case-insensitive; a trailing dot is ignored; an address is
 * compared in its one canonical form (127.1 is 127.0.0.1). `host` in the answer is the
 * canonical name to connect to (null: not a host at all, refused).
 */
export function egressDecision(host: string, port: number, rules: EgressRules): EgressDecision {
  const canonical = canonicalHost(host);
  if (canonical === null) return { allowed: false, host: null, refusedBy: 'allow_net' };
  const h = matchingHost(canonical);
  if (h === '') return { allowed: false, host: null, refusedBy: 'allow_net' };
  if (rules.deny.some((r) => ruleMatches(r, h, port))) return { allowed: false, host: canonical, refusedBy: 'deny_net' };
  if (rules.allow.some((r) => ruleMatches(r, h, port))) return { allowed: true, host: canonical };
  return { allowed: false, host: canonical, refusedBy: 'allow_net' };
}

function ruleMatches(rule: NetRule, host: string, port: number): boolean {
  if (rule.port !== null && rule.port !== port) return false;
  if (isIpLiteral(host)) return !rule.wildcard && rule.host === host;
  if (rule.wildcard) return host.endsWith(`.${rule.host}`);
  return host === rule.host;
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
