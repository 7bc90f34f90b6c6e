import { chmodSync, lchownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EgressGrant, grantEgress, proxyEnv } from './cellLifecycle.js';
import type { EgressNet, EgressProxy } from './egressProxy.js';
import { SANDBOX_EGRESS } from './egressRelay.js';

/** One host cell's way to the egress proxy: its own socket, its credentials, its proxy variables. */
export interface HostCellEgress {
  grant: EgressGrant;
  /** The host path of the cell's socket, bound into its sandbox at SANDBOX_EGRESS.socket. */
  socket: string;
  /** HTTP(S)_PROXY pointing at the relay inside the sandbox, with the cell's credentials. */
  env: Record<string, string>;
  /** Closes the socket and removes its directory (the lifecycle revokes the grant). */
  close(): Promise<void>;
}

/**
 * Opens a cell's socket on the proxy. It lives in a directory only the runner can enter (mode
 * 0700, a fresh name), so no other local user reaches it; the socket itself is the cell
 * user's, mode 0600, so a root runner's cell (an unprivileged uid) can connect to it where it
 * is bound in the sandbox. The proxy answers on it for this cell only.
 */
export async function openHostCellEgress(
  proxy: EgressProxy,
  cellId: string,
  net: EgressNet & { allow_net: string[] },
  cellUser: { uid: number; gid: number } | null,
): Promise<HostCellEgress> {
  const grant = grantEgress(proxy, cellId, { allow_net: net.allow_net, deny_net: [...net.deny_net] })!;
  const dir = mkdtempSync(join(tmpdir(), 'forge-egress-'));
  const socket = join(dir, 'proxy.sock');
  let served: { close: () => Promise<void> } | null = null;
  try {
    served = await proxy.serveCell(cellId, socket);
    if (cellUser) lchownSync(socket, cellUser.uid, cellUser.gid);
    chmodSync(socket, 0o600);
  } catch (e) {
    proxy.revoke(cellId);
    await served?.close();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const listener = served;
  let closed: Promise<void> | null = null;
  return {
    grant,
    socket,
    env: proxyEnv(grant, SANDBOX_EGRESS.host, SANDBOX_EGRESS.port),
    close: () => (closed ??= listener.close().finally(() => rmSync(dir, { recursive: true, force: true }))),
  };
}
