import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { basename, dirname, join } from 'node:path';

export interface WorkerdOptions {
  /** dist/instance-cell-worker.js */
  bundle: string;
  /** Durable Object storage directory (persists across restarts). */
  storageDir: string;
  secret: string;
  /** What the worker reports as celld_version (the adapter refuses unknown ones). */
  celldVersion: string;
  port?: number;
  /** Path of the workerd binary; default the one from the workerd npm package. */
  binary?: string;
}

export interface WorkerdHandle {
  url: string;
  port: number;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** The capnp config: one worker, one SQLite-backed Durable Object namespace on local disk. */
export function workerdConfig(o: { bundleName: string; celldVersion: string; secret: string }): string {
  const q = (s: string) => JSON.stringify(s);
  return `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .instanceCellWorker),
    (name = "cell-storage", disk = (path = "storage", writable = true)),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:0", http = (), service = "main") ],
);

const instanceCellWorker :Workerd.Worker = (
  modules = [ (name = "worker.js", esModule = embed ${q(o.bundleName)}) ],
  compatibilityDate = "2025-01-01",
  durableObjectNamespaces = [ (className = "InstanceCell", uniqueKey = "forge-instance-cell-v1", enableSql = true) ],
  durableObjectStorage = (localDisk = "cell-storage"),
  bindings = [
    (name = "INSTANCE_CELL", durableObjectNamespace = "InstanceCell"),
    (name = "FORGE_CELLD_SECRET", text = ${q(o.secret)}),
    (name = "CELLD_VERSION", text = ${q(o.celldVersion)}),
  ],
);
`;
}

export function workerdBinary(): string {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve('workerd/package.json');
  return join(dirname(pkg), 'bin', 'workerd');
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts workerd serving the InstanceCell worker, waiting until it answers. The config and
 * a copy-free reference to the bundle live next to the storage directory.
 */
export async function startWorkerd(o: WorkerdOptions): Promise<WorkerdHandle> {
  if (!existsSync(o.bundle)) throw new Error(`worker bundle ${o.bundle} missing; run npm run build`);
  mkdirSync(join(o.storageDir, 'storage'), { recursive: true });
  const configPath = join(o.storageDir, 'workerd.capnp');
  const bundleName = join(o.storageDir, basename(o.bundle));
  writeFileSync(bundleName, await import('node:fs/promises').then((f) => f.readFile(o.bundle)));
  writeFileSync(configPath, workerdConfig({ bundleName: basename(o.bundle), celldVersion: o.celldVersion, secret: o.secret }), { mode: 0o600 });
  const binary = o.binary ?? workerdBinary();
  for (let tries = 0; ; tries++) {
    const port = o.port ?? (await freePort());
    const child = spawn(binary, ['serve', configPath, '--experimental', '--socket-addr', `http=127.0.0.1:${port}`], { cwd: o.storageDir, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
    child.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
    const url = `http://127.0.0.1:${port}`;
    const up = await waitUntilListening(url, child, 15_000);
    if (up) {
      return {
        url,
        port,
        process: child,
        stop: () =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      };
    }
    child.kill('SIGKILL');
    if (tries >= 2 || o.port) throw new Error(`workerd did not start: ${output.trim().split('\n').slice(-5).join(' | ')}`);
  }
}

async function waitUntilListening(url: string, child: ChildProcess, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (child.exitCode !== null) return false;
    try {
      await fetch(`${url}/v1/ping`, { signal: AbortSignal.timeout(500) });
      return true;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return false;
}
