import { z } from 'zod';
import {
  CapabilityDescriptorSchema,
  type CapabilityDescriptor,
  CommandReplySchema,
  type Evidence,
  EvidenceSchema,
  type InstanceCellState,
  InstanceCellStateSchema,
  PROTOCOL_VERSION,
} from '../../protocol/instanceCell.js';
import type { CellHost, CellStepResult } from '../cellHost.js';
import type { CellInput } from '../core/instanceCellCore.js';
import type { CelldSettings } from './celldSettings.js';
import { HEADER_SIGNATURE, HEADER_TIMESTAMP, sameSignature, signRequest, signResponse } from './signedRequest.js';

/** This adapter's own version, reported beside celld_version and protocol_version. */
export const ADAPTER_VERSION = '1.0.0';

/**
 * The runtime versions this adapter has been qualified against. Anything else fails closed:
 * the pin is Celld v0.2.1 (commit ae8fac053d79f971bfcb996054bb43eb2f9b05da) and workerd as
 * the local reference runtime.
 */
export const COMPATIBLE_CELLD_VERSIONS: ReadonlySet<string> = new Set(['v0.2.1', 'workerd-reference']);
export const COMPATIBLE_PROTOCOLS: ReadonlySet<string> = new Set([PROTOCOL_VERSION]);

export class CelldCompatibilityError extends Error {
  override readonly name = 'CelldCompatibilityError';
}

/** Celld did not answer (down, unreachable, timed out): nothing was decided on its side that we know of. */
export class CelldUnavailableError extends Error {
  override readonly name = 'CelldUnavailableError';
}

export interface CelldVersions {
  adapter_version: string;
  celld_version: string;
  protocol_version: string;
}

const Envelope = z.object({ celld_version: z.string(), protocol_version: z.string() }).passthrough();

/**
 * The owned Celld compatibility adapter: the only code that talks to a Celld (or workerd)
 * InstanceCell worker. Requests are HMAC-signed with a timestamp; responses must carry a
 * valid signature bound to the request and a known celld/protocol version pair.
 */
export class CelldCellHost implements CellHost {
  readonly kind = 'celld' as const;
  versions: CelldVersions | null = null;

  constructor(private readonly settings: CelldSettings) {}

  async read(instanceId: string): Promise<InstanceCellState | null> {
    const body = await this.call('GET', `/v1/cells/${encodeURIComponent(instanceId)}/state`);
    return body.state ? InstanceCellStateSchema.parse(body.state) : null;
  }

  async step(instanceId: string, input: CellInput): Promise<CellStepResult> {
    const body = await this.call('POST', `/v1/cells/${encodeURIComponent(instanceId)}/step`, input);
    return { state: InstanceCellStateSchema.parse(body.state), reply: body.reply ? CommandReplySchema.parse(body.reply) : null };
  }

  /** The Durable Object fires its own alarms. */
  async fireDueAlarms(): Promise<number> {
    return 0;
  }

  async nextAlarmAt(instanceId: string): Promise<number | null> {
    const body = await this.call('GET', `/v1/cells/${encodeURIComponent(instanceId)}/state`);
    return typeof body.next_alarm_at === 'number' ? body.next_alarm_at : null;
  }

  async evidence(instanceId: string, limit = 1000): Promise<Evidence[]> {
    const body = await this.call('GET', `/v1/cells/${encodeURIComponent(instanceId)}/evidence?limit=${limit}`);
    return z.array(EvidenceSchema).parse(body.evidence);
  }

  /** A Durable Object namespace cannot be listed; the inventory lists instances. */
  async list(): Promise<string[]> {
    return [];
  }

  async capabilities(): Promise<CapabilityDescriptor> {
    const body = await this.call('GET', '/v1/capabilities');
    return CapabilityDescriptorSchema.parse(body.capabilities);
  }

  async capabilityProbe(target: string): Promise<Array<{ capability: string; attempt: string; refused: boolean; detail: string }>> {
    const body = await this.call('GET', `/v1/capability-probe?target=${encodeURIComponent(target)}`);
    return z.array(z.object({ capability: z.string(), attempt: z.string(), refused: z.boolean(), detail: z.string() })).parse(body.attempts);
  }

  private async call(method: 'GET' | 'POST', path: string, payload?: unknown): Promise<Record<string, unknown>> {
    const text = payload === undefined ? '' : JSON.stringify(payload);
    const ts = String(Date.now());
    let res: Response;
    try {
      res = await fetch(this.settings.url + path, {
        method,
        body: method === 'GET' ? undefined : text,
        headers: { 'content-type': 'application/json', [HEADER_TIMESTAMP]: ts, [HEADER_SIGNATURE]: await signRequest(this.settings.secret, ts, method, path, text) },
        signal: AbortSignal.timeout(this.settings.timeoutMs),
      });
    } catch (e) {
      throw new CelldUnavailableError(`Celld at ${this.settings.url} did not answer ${method} ${path} (${(e as Error).message}); check FORGE_CELLD_URL, or unset FORGE_CELLD_ENABLED to use the embedded coordinator`);
    }
    const body = await res.text();
    const sig = res.headers.get(HEADER_SIGNATURE) ?? '';
    if (!sig || !sameSignature(sig, await signResponse(this.settings.secret, ts, path, res.status, body))) {
      throw new CelldCompatibilityError(`Celld response to ${method} ${path} is not signed with the shared secret (HTTP ${res.status}); refusing it`);
    }
    let parsed: z.infer<typeof Envelope>;
    try {
      parsed = Envelope.parse(JSON.parse(body));
    } catch {
      throw new CelldCompatibilityError(`Celld response to ${method} ${path} carries no version envelope; refusing it`);
    }
    if (!COMPATIBLE_PROTOCOLS.has(parsed.protocol_version) || !COMPATIBLE_CELLD_VERSIONS.has(parsed.celld_version)) {
      throw new CelldCompatibilityError(
        `incompatible Celld: celld_version ${parsed.celld_version}, protocol_version ${parsed.protocol_version}; adapter ${ADAPTER_VERSION} supports celld ${[...COMPATIBLE_CELLD_VERSIONS].join(', ')} with ${[...COMPATIBLE_PROTOCOLS].join(', ')}. Pin a compatible pair or disable Celld (unset FORGE_CELLD_ENABLED)`,
      );
    }
    this.versions = { adapter_version: ADAPTER_VERSION, celld_version: parsed.celld_version, protocol_version: parsed.protocol_version };
    if (res.status !== 200) throw new Error(`Celld refused ${method} ${path}: HTTP ${res.status} ${String((parsed as { error?: unknown }).error ?? '')}`);
    return parsed as Record<string, unknown>;
  }
}
