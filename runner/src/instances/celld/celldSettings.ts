import { readFileSync } from 'node:fs';
import { InputError } from '../../protocol/inputError.js';

export interface CelldSettings {
  /** Base URL of the InstanceCell worker (Celld public listener, or local workerd). */
  url: string;
  secret: string;
  timeoutMs: number;
}

const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['', '0', 'false', 'no', 'off']);

/**
 * Celld is off unless FORGE_CELLD_ENABLED says otherwise; while off, nothing here reads a
 * URL or a secret, and no Celld endpoint is ever contacted.
 */
export function celldSettingsFromEnv(env: NodeJS.ProcessEnv): CelldSettings | null {
  const flag = (env.FORGE_CELLD_ENABLED ?? '').trim().toLowerCase();
  if (FALSE.has(flag)) return null;
  if (!TRUE.has(flag)) throw new InputError(`FORGE_CELLD_ENABLED=${env.FORGE_CELLD_ENABLED}: expected 1/true/on or 0/false/off (unset = off)`);
  const url = env.FORGE_CELLD_URL;
  if (!url || !/^https?:\/\//.test(url)) throw new InputError('FORGE_CELLD_ENABLED is on but FORGE_CELLD_URL is not an http(s) URL; set it to the InstanceCell worker, or unset FORGE_CELLD_ENABLED');
  let secret = env.FORGE_CELLD_SECRET ?? '';
  if (!secret && env.FORGE_CELLD_SECRET_FILE) {
    try {
      secret = readFileSync(env.FORGE_CELLD_SECRET_FILE, 'utf8').trim();
    } catch (e) {
      throw new InputError(`cannot read FORGE_CELLD_SECRET_FILE: ${(e as Error).message}`);
    }
  }
  if (secret.length < 32) throw new InputError('FORGE_CELLD_SECRET (or FORGE_CELLD_SECRET_FILE) must hold a shared secret of at least 32 characters');
  const timeoutMs = env.FORGE_CELLD_TIMEOUT_MS ? Number(env.FORGE_CELLD_TIMEOUT_MS) : 10_000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 100) throw new InputError('FORGE_CELLD_TIMEOUT_MS must be a whole number of milliseconds >= 100');
  return { url: url.replace(/\/+$/, ''), secret, timeoutMs };
}
