import type { Context } from 'mocha';
import { findQemuTools } from '../../runner/src/cells/qemu/qemuRuntime.js';
import { requireFeature } from './requirement.js';

/** qemu cells/instances need qemu, virtiofsd, the cloud kernel, a static busybox and root. */
export function requireQemu(ctx: Context): void {
  const tools = findQemuTools();
  requireFeature(ctx, !('missing' in tools), 'missing' in tools ? tools.missing : '');
}
