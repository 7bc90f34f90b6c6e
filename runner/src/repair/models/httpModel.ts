/** One JSON POST to a model endpoint; every failure becomes an Error naming the endpoint. */
export async function postJson(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal?: AbortSignal,
  timeoutMs = 180_000,
): Promise<unknown> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: combined,
    });
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`model endpoint ${url} unreachable: ${cause?.code ?? cause?.message ?? (e as Error).message}`);
  }
  const text = await response.text();
  if (!response.ok) throw new Error(`model endpoint ${url} answered ${response.status}: ${text.slice(0, 300).replace(/\s+/g, ' ')}`);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`model endpoint ${url} answered with something that is not JSON: ${text.slice(0, 120)}`);
  }
}

/** Tool arguments arrive as a JSON string; a model that garbles them gets told so by the tool. */
export function parseArguments(raw: unknown): Record<string, unknown> {
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) return raw as Record<string, unknown>;
  if (typeof raw !== 'string' || raw.trim() === '') return {};
  try {
    const v = JSON.parse(raw) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { __unparsable: raw };
  } catch {
    return { __unparsable: raw };
  }
}

/** A token count from an endpoint's answer (untrusted): a non-negative whole number, else not reported (null). */
export function reportedCount(raw: unknown): number | null {
  return typeof raw === 'number' && Number.isSafeInteger(raw) && raw >= 0 ? raw : null;
}
