/**
 * HMAC-SHA256 request/response signing between the runner's Celld adapter and the
 * InstanceCell worker. WebCrypto only, so the same code runs in Node and in workerd/Celld.
 * A request signs (timestamp, method, path, body hash); the response signs the same
 * timestamp and path with its own body, so an answer cannot be replayed onto another request.
 */
export const HEADER_TIMESTAMP = 'x-forge-timestamp';
export const HEADER_SIGNATURE = 'x-forge-signature';
/** Requests older or newer than this are refused (clock skew plus transit). */
export const MAX_SKEW_MS = 5 * 60 * 1000;

const encoder = new TextEncoder();

function hex(buf: ArrayBuffer): string {
  return [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

async function sha256Hex(text: string): Promise<string> {
  return hex(await crypto.subtle.digest('SHA-256', encoder.encode(text)));
}

async function hmacHex(secret: string, message: string): Promise<string> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return hex(await crypto.subtle.sign('HMAC', key, encoder.encode(message)));
}

export async function signRequest(secret: string, timestamp: string, method: string, path: string, body: string): Promise<string> {
  return hmacHex(secret, `forge-celld-request\n${timestamp}\n${method.toUpperCase()}\n${path}\n${await sha256Hex(body)}`);
}

export async function signResponse(secret: string, timestamp: string, path: string, status: number, body: string): Promise<string> {
  return hmacHex(secret, `forge-celld-response\n${timestamp}\n${path}\n${status}\n${await sha256Hex(body)}`);
}

/** Constant-time over equal lengths: the comparison does not leak where they differ. */
export function sameSignature(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

export type VerifyFailure = 'missing_signature' | 'stale_timestamp' | 'bad_signature';

export async function verifyRequest(secret: string, headers: { get(name: string): string | null }, method: string, path: string, body: string, now: number): Promise<VerifyFailure | null> {
  const ts = headers.get(HEADER_TIMESTAMP);
  const sig = headers.get(HEADER_SIGNATURE);
  if (!ts || !sig) return 'missing_signature';
  const t = Number(ts);
  if (!Number.isFinite(t) || Math.abs(now - t) > MAX_SKEW_MS) return 'stale_timestamp';
  return sameSignature(sig, await signRequest(secret, ts, method, path, body)) ? null : 'bad_signature';
}

export async function sha256OfText(text: string): Promise<string> {
  return sha256Hex(text);
}
