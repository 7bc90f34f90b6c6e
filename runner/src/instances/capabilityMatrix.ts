import type { Capability, CapabilityDescriptor } from '../protocol/instanceCell.js';

type Level = CapabilityDescriptor['capabilities'][Capability];

/**
 * The runtime capability matrix. Every runtime lists every capability: an exclusion is a
 * published `no`, never an omission, so a caller cannot mistake silence for support.
 */
const MATRIX: Record<'qemu' | 'docker' | 'host' | 'worker-celld', { isolation: string; caps: Record<Capability, Level> }> = {
  qemu: {
    isolation: 'hardware virtualized',
    caps: {
      'task.exec': 'yes',
      'session.pty': 'yes',
      'workspace.bind': 'yes',
      'process.spawn': 'yes',
      'worker.fetch': 'no',
      'worker.rpc': 'no',
      'durable.storage': 'no',
      'durable.alarm': 'no',
      'websocket.inbound': 'via agent',
      'network.outbound.fetch': 'policy',
      'wasm.module': 'via OS',
    },
  },
  docker: {
    isolation: 'shared kernel',
    caps: {
      'task.exec': 'yes',
      'session.pty': 'yes',
      'workspace.bind': 'yes',
      'process.spawn': 'yes',
      'worker.fetch': 'no',
      'worker.rpc': 'no',
      'durable.storage': 'no',
      'durable.alarm': 'no',
      'websocket.inbound': 'via agent',
      'network.outbound.fetch': 'policy',
      'wasm.module': 'via OS',
    },
  },
  host: {
    isolation: 'full host access',
    caps: {
      'task.exec': 'yes',
      'session.pty': 'yes',
      'workspace.bind': 'yes',
      'process.spawn': 'yes',
      'worker.fetch': 'no',
      'worker.rpc': 'no',
      'durable.storage': 'no',
      'durable.alarm': 'no',
      'websocket.inbound': 'via agent',
      'network.outbound.fetch': 'policy',
      'wasm.module': 'via OS',
    },
  },
  'worker-celld': {
    isolation: 'shared process/isolate; not hostile multi-tenant',
    caps: {
      'task.exec': 'no',
      'session.pty': 'no',
      'workspace.bind': 'no',
      'process.spawn': 'no',
      'worker.fetch': 'yes',
      'worker.rpc': 'experimental',
      'durable.storage': 'yes',
      'durable.alarm': 'yes',
      'websocket.inbound': 'yes',
      'network.outbound.fetch': 'policy-constrained',
      'wasm.module': 'yes',
    },
  },
};

export type RuntimeName = keyof typeof MATRIX;

export function capabilityDescriptor(runtime: RuntimeName): CapabilityDescriptor {
  const row = MATRIX[runtime];
  return { runtime, isolation: row.isolation, capabilities: { ...row.caps } };
}

/** A claim is honest only when the descriptor says yes (or a qualified yes) for it. */
export function supports(descriptor: CapabilityDescriptor, capability: Capability): boolean {
  const level = descriptor.capabilities[capability];
  return level !== undefined && level !== 'no';
}

/** Refuses a request that needs a capability the runtime publishes as excluded. */
export function requireCapabilities(descriptor: CapabilityDescriptor, needed: readonly Capability[]): void {
  const missing = needed.filter((c) => !supports(descriptor, c));
  if (missing.length > 0) {
    throw new Error(
      `${descriptor.runtime} does not provide ${missing.join(', ')} (isolation: ${descriptor.isolation}); use a qemu, docker or host instance`,
    );
  }
}
