// Mocha root hooks: every test run writes cell logs to its own temporary state directory
// (never to the developer's ~/.local/state), and after the whole suite no container with a
// forge label may remain from this run or from runner processes it started, and no database
// file (*.db, *.db-wal, *.db-shm...) may appear inside the repository tree (a store opened with
// an unset state directory once wrote undefined/forge.db into the checkout).
import Docker from 'dockerode';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

let dir: string | undefined;
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
let dbFilesBefore = new Set<string>();

export const mochaHooks = {
  beforeAll(): void {
    dir = mkdtempSync(join(tmpdir(), 'forge-state-'));
    process.env.FORGE_STATE_DIR = dir;
    dbFilesBefore = new Set(databaseFilesInRepo());
    if (dbFilesBefore.size > 0) {
      console.warn(`database files already in the repository tree (remove them): ${[...dbFilesBefore].join(', ')}`);
    }
  },
  async afterAll(): Promise<void> {
    if (dir) rmSync(dir, { recursive: true, force: true });
    const leaked = await leakedForgeContainers();
    if (leaked.length > 0) throw new Error(`containers leaked by the suite: ${leaked.join(', ')}`);
    const instances = await leakedInstances();
    if (instances.length > 0) throw new Error(`durable instances leaked by the suite: ${instances.join(', ')}`);
    const stray = strayWorktrees();
    if (stray.length > 0) throw new Error(`attempt worktrees left behind by the suite: ${stray.join(', ')}`);
    const databases = databaseFilesInRepo().filter((f) => !dbFilesBefore.has(f));
    if (databases.length > 0) {
      throw new Error(`database files written into the repository tree by the suite: ${databases.join(', ')}`);
    }
  },
};

async function leakedForgeContainers(): Promise<string[]> {
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });
  const containers = await docker.listContainers({ all: true, filters: { label: ['forge.cell'] } }).catch(() => []);
  const leaked = containers.filter((c) => {
    const pid = Number(c.Labels['forge.runner.pid']);
    // Ours, or from a runner process (e.g. a CLI the tests spawned) that has exited.
    return pid === process.pid || !existsSync(`/proc/${pid}`);
  });
  for (const c of leaked)
    await docker
      .getContainer(c.Id)
      .remove({ force: true })
      .catch(() => undefined);
  return leaked.map((c) => c.Names[0] ?? c.Id);
}

/**
 * Instance containers and host instance processes whose (temporary) state directory is gone:
 * a test made them and did not destroy them.
 */
async function leakedInstances(): Promise<string[]> {
  const leaked: string[] = [];
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });
  const containers = await docker.listContainers({ all: true, filters: { label: ['forge.instance'] } }).catch(() => []);
  for (const c of containers) {
    const dir = c.Labels['forge.instance.state_dir'] ?? '';
    if (dir.startsWith(tmpdir()) && !existsSync(dir)) {
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined);
      leaked.push(c.Names[0] ?? c.Id);
    }
  }
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const dir = argv[0] === '/bin/bash' && argv[3] === 'forge-instance' ? (argv[4] ?? '') : '';
    if (dir.startsWith(tmpdir()) && !existsSync(dir)) {
      try {
        process.kill(-Number(pid), 'SIGKILL');
      } catch {
        /* gone */
      }
      leaked.push(`host instance pid ${pid} (${dir})`);
    }
  }
  return leaked;
}

/**
 * Attempt worktrees still present in test repositories (which tests create under tmpdir),
 * made by this process or by a runner it started that has exited. A worktree whose lock names
 * another live process belongs to a suite running beside this one, which checks its own.
 */
function strayWorktrees(): string[] {
  const stray: string[] = [];
  for (const entry of readdirSync(tmpdir())) {
    if (!entry.startsWith('forge-test-repo-')) continue;
    const gitDir = join(tmpdir(), entry, '.git');
    const cells = join(gitDir, 'forge-cells');
    if (!existsSync(cells)) continue;
    for (const wt of readdirSync(cells)) {
      let lock = '';
      try {
        lock = readFileSync(join(gitDir, 'worktrees', wt, 'locked'), 'utf8');
      } catch {
        /* not locked: counted */
      }
      const owner = Number(/forge-runner pid=(\d+)/.exec(lock)?.[1] ?? NaN);
      if (Number.isInteger(owner) && owner !== process.pid && existsSync(`/proc/${owner}`)) continue;
      stray.push(join(cells, wt));
    }
  }
  return stray;
}

/** SQLite files (*.db, *.db-wal, *.db-shm, *.db-journal, *.db.*) under the repository, outside node_modules and .git. */
export function databaseFilesInRepo(root: string = REPO_ROOT): string[] {
  const found: string[] = [];
  const walk = (d: string): void => {
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.isDirectory()) {
        if (e.name !== 'node_modules' && e.name !== '.git') walk(join(d, e.name));
      } else if (/\.db(?:$|[-.])/i.test(e.name)) {
        found.push(relative(root, join(d, e.name)));
      }
    }
  };
  walk(root);
  return found.sort();
}
