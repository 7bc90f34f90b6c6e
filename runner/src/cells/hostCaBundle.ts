import { realpathSync } from 'node:fs';
import { readRegularPath } from '../hostguard/readRegularFile.js';

/** Where a cell (or a bake's install step) finds the host's CA bundle. */
export const CELL_CA_PATH = '/etc/forge/ca.pem';

/**
 * Variables that make the usual clients (Node, npm, OpenSSL, curl, pip, requests) trust the
 * bundle at `path`: networks that inspect TLS, as corporate networks do, sign with a CA only
 * the host's bundle holds.
 */
export function caBundleEnv(path: string = CELL_CA_PATH): Record<string, string> {
  return {
    NODE_EXTRA_CA_CERTS: path,
    SSL_CERT_FILE: path,
    CURL_CA_BUNDLE: path,
    REQUESTS_CA_BUNDLE: path,
    PIP_CERT: path,
    GIT_SSL_CAINFO: path,
  };
}

const MAX_BUNDLE = 16 * 1024 * 1024;

/**
 * The CA bundle the host trusts: the one the runner was told to use ($SSL_CERT_FILE,
 * $NODE_EXTRA_CA_CERTS) or the Debian/Red Hat/Alpine system bundle (host configuration, so a
 * link is followed; the file itself must be regular and hold PEM certificates). Null when none.
 */
export function findHostCaBundle(env: NodeJS.ProcessEnv = process.env): { path: string; pem: Buffer } | null {
  const candidates = [
    env.SSL_CERT_FILE,
    env.NODE_EXTRA_CA_CERTS,
    '/etc/ssl/certs/ca-certificates.crt',
    '/etc/pki/tls/certs/ca-bundle.crt',
    '/etc/ssl/cert.pem',
  ];
  for (const path of candidates) {
    if (!path || !path.startsWith('/')) continue;
    let real: string;
    try {
      real = realpathSync(path);
    } catch {
      continue;
    }
    const pem = readRegularPath(real, MAX_BUNDLE);
    if (Buffer.isBuffer(pem) && pem.includes('-----BEGIN CERTIFICATE-----')) return { path: real, pem };
  }
  return null;
}
