import canonicalize from 'canonicalize';
import { createHash } from 'node:crypto';
import { z } from 'zod';

export const LIFECYCLE_ACTIONS = ['provision', 'start', 'stop', 'destroy'] as const;

/** Every lifecycle command: the request whose hash binds its operation id. */
export const OperationRequestSchema = z
  .object({
    operation_id: z.string().min(1).max(255).describe('Opaque, chosen by the caller; the same id may only ever mean the same request.'),
    instance_id: z.string().min(1).max(255),
    generation: z.number().int().positive(),
    action: z.enum(LIFECYCLE_ACTIONS),
    payload: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();

export type OperationRequest = z.output<typeof OperationRequestSchema>;

/**
 * SHA-256 over the RFC 8785 (JCS) canonical JSON of the request: key order and number
 * formatting cannot make one request hash two ways.
 */
export function requestHash(request: OperationRequest): string {
  const canonical = canonicalize(request);
  if (canonical === undefined) throw new Error('request cannot be canonicalized');
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}
