import canonicalize from 'canonicalize';
import { createHash } from 'node:crypto';
import { LIFECYCLE_ACTIONS, type OperationRequest, OperationRequestSchema } from '../protocol/instanceCell.js';

export { LIFECYCLE_ACTIONS, OperationRequestSchema, type OperationRequest };

/**
 * SHA-256 over the RFC 8785 (JCS) canonical JSON of the request: key order and number
 * formatting cannot make one request hash two ways.
 */
export function requestHash(request: OperationRequest): string {
  const canonical = canonicalize(request);
  if (canonical === undefined) throw new Error('request cannot be canonicalized');
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}
