/**
 * Runs inside the worker: tries each thing a worker-celld runtime publishes as excluded
 * (process, PTY, workspace/arbitrary filesystem, raw TCP/SSH, private-network fetch) and
 * reports whether the runtime refused it. Capability honesty is checked against reality,
 * not against the descriptor alone.
 */
export interface CapabilityAttempt {
  capability: string;
  attempt: string;
  refused: boolean;
  detail: string;
}

// Module names held in variables so the bundler leaves the imports to the runtime.
const CHILD_PROCESS = 'node:child_process';
const FS = 'node:fs';
const PTY = 'node-pty';
const SOCKETS = 'cloudflare:sockets';

async function attempt(capability: string, what: string, fn: () => Promise<unknown>): Promise<CapabilityAttempt> {
  try {
    const result = await fn();
    return { capability, attempt: what, refused: false, detail: `succeeded: ${String(result).slice(0, 200)}` };
  } catch (e) {
    return { capability, attempt: what, refused: true, detail: String((e as Error)?.message ?? e).slice(0, 300) };
  }
}

export async function probeWorkerCapabilities(target: string): Promise<CapabilityAttempt[]> {
  const [host, portText] = target.split(':');
  const port = Number(portText) || 22;
  const tcpHost = host || '127.0.0.1';
  return [
    await attempt('process.spawn', 'spawn /bin/sh', async () => {
      const cp = (await import(CHILD_PROCESS)) as { spawnSync(c: string, a: string[]): { status: number | null; error?: Error } };
      const r = cp.spawnSync('/bin/sh', ['-c', 'echo spawned']);
      if (r.error || r.status !== 0) throw r.error ?? new Error(`exit ${r.status}`);
      return r.status;
    }),
    await attempt('session.pty', 'open a pseudo-terminal', async () => {
      const pty = (await import(PTY)) as { spawn(f: string, a: string[], o: object): unknown };
      return pty.spawn('/bin/sh', [], {});
    }),
    await attempt('workspace.bind', 'read a host file (/etc/passwd)', async () => {
      const fs = (await import(FS)) as { readFileSync(p: string, e: string): string };
      const text = fs.readFileSync('/etc/passwd', 'utf8');
      if (!text.includes('root:')) throw new Error('no host /etc/passwd visible');
      return text.slice(0, 20);
    }),
    await attempt('filesystem.arbitrary', 'write a host path (/tmp/forge-worker-escape)', async () => {
      const fs = (await import(FS)) as { writeFileSync(p: string, d: string): void; readFileSync(p: string, e: string): string };
      fs.writeFileSync('/tmp/forge-worker-escape', 'x');
      return 'written';
    }),
    await attempt('tcp.raw', `raw TCP to ${tcpHost}:${port} (SSH)`, async () => {
      const sockets = (await import(SOCKETS)) as { connect(a: { hostname: string; port: number }): { opened: Promise<unknown>; close(): Promise<void> } };
      const socket = sockets.connect({ hostname: tcpHost, port });
      await socket.opened;
      await socket.close();
      return 'connected';
    }),
    await attempt('network.private', `fetch http://${tcpHost}:${port}/`, async () => {
      const r = await fetch(`http://${tcpHost}:${port}/`);
      return r.status;
    }),
  ];
}
