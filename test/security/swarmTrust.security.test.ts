import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import Docker from 'dockerode';
import { SwarmCellProvider } from '../../runner/src/cells/providers/swarmCellProvider.js';
import { handOverToCellUser } from '../../runner/src/hostguard/cellUser.js';
import { DOCKER_WORKDIR } from '../../runner/src/cells/dockerContainerSpec.js';
import { findBusybox } from '../../runner/src/cells/qemu/guestImage.js';
import { baseImageTag, SWARM_BASE_REPOSITORY, SWARM_DEPS_REPOSITORY } from '../../runner/src/cells/swarm/swarmServiceSpec.js';
import { writeTar } from '../../runner/src/cells/swarm/tarArchive.js';
import { TEST_IMAGES } from '../helpers/docker.js';
import { git, makeRepo } from '../helpers/gitRepo.js';
import { requireFeature } from '../helpers/requirement.js';
import { swarmUnavailable, TEST_SWARM_REGISTRY } from '../helpers/swarm.js';

const registry = TEST_SWARM_REGISTRY;
const image = TEST_IMAGES.busybox;
const CELL_UID = 65532;

async function registryTags(repository: string): Promise<string[]> {
  const r = await fetch(`http://${registry}/v2/${repository}/tags/list`);
  if (r.status === 404) return [];
  return ((await r.json()) as { tags?: string[] | null }).tags ?? [];
}

/** Every layer of registry/repository:ref as an uncompressed tar, pulled the way any local user can (no credentials). */
async function pulledLayers(repository: string, ref: string): Promise<Buffer[]> {
  const m = await fetch(`http://${registry}/v2/${repository}/manifests/${ref}`, {
    headers: { Accept: 'application/vnd.docker.distribution.manifest.v2+json' },
  });
  assert.equal(m.status, 200, `manifest ${repository}:${ref}`);
  const manifest = (await m.json()) as { layers: { digest: string }[] };
  const out: Buffer[] = [];
  for (const l of manifest.layers) {
    const blob = Buffer.from(await (await fetch(`http://${registry}/v2/${repository}/blobs/${l.digest}`)).arrayBuffer());
    out.push(blob[0] === 0x1f && blob[1] === 0x8b ? gunzipSync(blob) : blob);
  }
  return out;
}

/**
 * What a hostile install step can make without any runner privilege: an image whose /forge
 * wrapper reads the cell's nonce (it runs as root in the task) and answers with a frame of its
 * own (exit 0, made-up output), pushed to the unauthenticated registry under `tag`.
 */
async function pushForgedImage(docker: Docker, repository: string, tag: string): Promise<void> {
  const wrapper = [
    'B=/forge/busybox',
    'n=$($B cat /run/secrets/forge-nonce)',
    'echo forged-output',
    'echo',
    'echo "FORGE $n output 14" >&2',
    'echo "FORGE $n exit 0" >&2',
    '',
  ].join('\n');
  const now = Math.floor(Date.now() / 1000);
  const meta = { uid: 0, gid: 0, mtime: now };
  const context = writeTar([
    { name: 'Dockerfile', type: 'file', mode: 0o644, ...meta, data: Buffer.from(`FROM ${image}\nADD forge.tar /\n`) },
    {
      name: 'forge.tar',
      type: 'file',
      mode: 0o644,
      ...meta,
      data: writeTar([
        { name: 'forge', type: 'dir', mode: 0o755, ...meta },
        { name: 'forge/busybox', type: 'file', mode: 0o755, ...meta, data: readFileSync(findBusybox()!) },
        { name: 'forge/wrapper.sh', type: 'file', mode: 0o644, ...meta, data: Buffer.from(wrapper) },
      ]),
    },
  ]);
  const ref = `${registry}/${repository}:${tag}`;
  const build = await docker.buildImage(Readable.from([context]), { t: ref, rm: true, forcerm: true });
  await new Promise((res, rej) => docker.modem.followProgress(build, (e: Error | null, out: unknown) => (e ? rej(e) : res(out))));
  const push = await docker.getImage(ref).push({ authconfig: { serveraddress: registry } });
  const events = await new Promise<Record<string, unknown>[]>((res, rej) =>
    docker.modem.followProgress(push, (e: Error | null, out: Record<string, unknown>[]) => (e ? rej(e) : res(out))),
  );
  assert.ok(!events.some((e) => e.error), JSON.stringify(events.filter((e) => e.error)));
  await docker
    .getImage(ref)
    .remove()
    .catch(() => undefined);
}

/** The swarm cell security claims around what the runner trusts from the registry and the repository's files (red team round 5). */
describe('swarm cell trust (each test performs one attack of red team round 5)', function () {
  this.timeout(300_000);
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });
  let provider: SwarmCellProvider;

  before(async function () {
    const why = await swarmUnavailable();
    requireFeature(this, why === null, why ?? '');
    provider = new SwarmCellProvider({ registry });
  });
  after(async () => provider?.drain());

  it("a base image tag replaced in the registry is never run: the real command's exit and output, and the cell says it rebuilt", async () => {
    // A tree of its own: the tag is this test's alone (other suites on the same registry keep theirs).
    const repo = makeRepo({ 'a.txt': `${randomBytes(8).toString('hex')}\n` });
    try {
      const imageId = (await docker.getImage(image).inspect()).Id;
      const treeId = git(repo.dir, 'rev-parse', 'HEAD^{tree}').trim();
      const tag = baseImageTag({ imageId, treeId, workdir: DOCKER_WORKDIR, cellUid: CELL_UID });
      const cmd = 'echo real-command; cat a.txt >/dev/null; exit 3';
      // Before any cell: the attacker guesses the tag (everything it hashes is public).
      await pushForgedImage(docker, SWARM_BASE_REPOSITORY, tag);
      const first = await provider.run({ image, worktree: repo.dir, cmd });
      assert.equal(first.output, 'real-command\n', 'the forged wrapper ran');
      assert.equal(first.exit_code, 3);
      const rebuilt = new RegExp(`the registry's forge-cell-base:${tag} is not what this runner built .*; rebuilt`);
      assert.match(first.isolation.warnings.join('\n'), rebuilt);
      // After a cell: the attacker overwrites the tag the runner pushed; a later run (same state) is not fooled.
      await pushForgedImage(docker, SWARM_BASE_REPOSITORY, tag);
      const later = new SwarmCellProvider({ registry });
      const second = await later.run({ image, worktree: repo.dir, cmd }).finally(() => later.drain());
      assert.equal(second.output, 'real-command\n', 'the forged wrapper ran');
      assert.equal(second.exit_code, 3);
      assert.match(second.isolation.warnings.join('\n'), rebuilt);
      // Untouched since: what this runner recorded is used as it is.
      const third = new SwarmCellProvider({ registry });
      const again = await third.run({ image, worktree: repo.dir, cmd }).finally(() => third.drain());
      assert.equal(again.exit_code, 3);
      assert.doesNotMatch(again.isolation.warnings.join('\n'), /rebuilt/);
    } finally {
      repo.cleanup();
    }
  });

  it('a dependency layer tag replaced in the registry is never run either', async () => {
    const repo = makeRepo({ '.gitignore': 'node_modules/\n', 'a.txt': 'a\n' });
    const checkout = mkdtempSync(join('/var/lib', 'forge-swarm-trust-'));
    try {
      const marker = `dep-marker-${randomBytes(8).toString('hex')}`;
      mkdirSync(join(checkout, 'node_modules', 'dep'), { recursive: true });
      writeFileSync(join(checkout, 'node_modules', 'dep', 'index.js'), `${marker}\n`);
      const spec = {
        image,
        worktree: repo.dir,
        mount_at: repo.dir,
        shared_deps: [{ source: join(checkout, 'node_modules'), target: join(repo.dir, 'node_modules') }],
        cmd: 'cat node_modules/dep/index.js; exit 4',
      };
      const before = new Set(await registryTags(SWARM_DEPS_REPOSITORY));
      const first = await provider.run(spec);
      assert.equal(first.exit_code, 4, first.output);
      // The attacker finds the layer by its content (the registry lets anyone read it) and replaces it.
      let ours: string | null = null;
      for (const t of (await registryTags(SWARM_DEPS_REPOSITORY)).filter((x) => !before.has(x)))
        if ((await pulledLayers(SWARM_DEPS_REPOSITORY, t)).some((l) => l.includes(marker))) ours = t;
      assert.ok(ours, 'the dependency layer was pushed');
      await pushForgedImage(docker, SWARM_DEPS_REPOSITORY, ours);
      const later = new SwarmCellProvider({ registry });
      const second = await later.run(spec).finally(() => later.drain());
      assert.equal(second.output, `${marker}\n`, 'the forged wrapper ran');
      assert.equal(second.exit_code, 4);
      assert.match(
        second.isolation.warnings.join('\n'),
        new RegExp(`the registry's forge-cell-deps:${ours} is not what this runner built .*; rebuilt`),
      );
    } finally {
      repo.cleanup();
      rmSync(checkout, { recursive: true, force: true });
    }
  });

  it('the dependency layer carries nothing the cell user could not read on the host: 0600 files, hard links to them, closed directories, another filesystem', async () => {
    const repo = makeRepo({ '.gitignore': 'node_modules/\n', 'a.txt': 'a\n' });
    const checkout = mkdtempSync(join('/var/lib', 'forge-swarm-trust-'));
    const outside = mkdtempSync(join('/var/lib', 'forge-swarm-private-'));
    const nm = join(checkout, 'node_modules');
    const mnt = join(nm, 'mnt');
    const secrets = ['A', 'B', 'C', 'D', 'E'].map((k) => `SECRET-${k}-${randomBytes(8).toString('hex')}`);
    try {
      mkdirSync(join(nm, 'dep', 'private'), { recursive: true });
      writeFileSync(join(nm, 'dep', 'index.js'), 'module.exports = 1;\n');
      // A root-owned 0600 key in the tree (as an install step or a configured path can leave it).
      writeFileSync(join(nm, 'dep', 'key.pem'), `${secrets[0]}\n`, { mode: 0o600 });
      chmodSync(join(nm, 'dep', 'key.pem'), 0o600);
      // A link to a 0600 file elsewhere travels as a link (it names the node's file, never the runner's).
      writeFileSync(join(outside, 'tls.key'), `${secrets[1]}\n`, { mode: 0o600 });
      chmodSync(join(outside, 'tls.key'), 0o600);
      symlinkSync(join(outside, 'tls.key'), join(nm, 'dep', 'tls-link'));
      // A hard link to it is the same 0600 file.
      writeFileSync(join(outside, 'hard.key'), `${secrets[2]}\n`, { mode: 0o600 });
      chmodSync(join(outside, 'hard.key'), 0o600);
      linkSync(join(outside, 'hard.key'), join(nm, 'dep', 'hard'));
      // A world-readable file in a directory others cannot enter.
      writeFileSync(join(nm, 'dep', 'private', 'cfg'), `${secrets[3]}\n`, { mode: 0o644 });
      chmodSync(join(nm, 'dep', 'private'), 0o700);
      // Another filesystem mounted inside: not the checkout's.
      mkdirSync(mnt);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'forge-test', mnt]);
      writeFileSync(join(mnt, 'other'), `${secrets[4]}\n`, { mode: 0o644 });
      const spec = (cmd: string) => ({
        image,
        worktree: repo.dir,
        mount_at: repo.dir,
        shared_deps: [{ source: nm, target: join(repo.dir, 'node_modules') }],
        cmd,
      });
      const before = new Set(await registryTags(SWARM_DEPS_REPOSITORY));
      const r = await provider.run(
        spec(
          'cat node_modules/dep/index.js; cat node_modules/dep/key.pem node_modules/dep/hard node_modules/dep/private/cfg node_modules/mnt/other node_modules/dep/tls-link 2>/dev/null; true',
        ),
      );
      assert.equal(r.exit_code, 0, `${r.output} ${r.isolation.warnings.join('; ')}`);
      assert.match(r.output, /module\.exports = 1;/);
      // What any local user can pull from the registry: none of the secrets in any layer of any new image.
      const made = (await registryTags(SWARM_DEPS_REPOSITORY)).filter((t) => !before.has(t));
      assert.ok(made.length >= 1, 'a dependency layer was pushed');
      for (const t of made)
        for (const layer of await pulledLayers(SWARM_DEPS_REPOSITORY, t))
          for (const s of secrets) assert.ok(!layer.includes(s), `${s} is in the registry (forge-cell-deps:${t})`);
      // Nor does the cell (as the cell user) read any of them on the node.
      for (const s of secrets) assert.doesNotMatch(r.output, new RegExp(s), `the cell read ${s}`);
      const warnings = r.isolation.warnings.join('\n');
      assert.match(
        warnings,
        /3 entries of node_modules are not readable by the cell user and were not sent: dep\/hard, dep\/key\.pem, dep\/private/,
      );
      assert.match(warnings, /node_modules\/mnt is another filesystem than node_modules and was not sent/);
    } finally {
      execFileSync('umount', [mnt], { stdio: 'ignore' });
      repo.cleanup();
      rmSync(checkout, { recursive: true, force: true });
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('a tree whose names are not UTF-8 (a link and a directory collapsing into one name) never reaches the image: the root wrapper stays the runner’s (red team round 2)', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      // d<EF BF BD>/a, d<F0> -> /forge, d<FE>/wrapper.sh: decoded as text all three are "d\uFFFD",
      // and extracted in that order the last file was written through the link over /forge/wrapper.sh.
      execFileSync('bash', [
        '-c',
        `cd "$0" && mkdir "$(printf 'd\\xef\\xbf\\xbd')" "$(printf 'd\\xfe')" && echo a > "$(printf 'd\\xef\\xbf\\xbd')/a" && ln -s /forge "$(printf 'd\\xf0')" && printf '#!/forge/busybox sh\\necho FORGED-WRAPPER-RAN\\n' > "$(printf 'd\\xfe')/wrapper.sh" && git -c safe.directory=* add -A && git -c safe.directory=* -c user.email=a@b -c user.name=a commit -qm hostile`,
        repo.dir,
      ]);
      handOverToCellUser(repo.dir);
      await assert.rejects(
        provider.run({ image, worktree: repo.dir, cmd: 'head -2 /forge/wrapper.sh' }),
        (e: Error) => /not valid UTF-8/.test(e.message) && !e.message.includes('\n'),
      );
    } finally {
      repo.cleanup();
    }
  });

  it('a host cell cannot read the registry’s stored images or the nodes’ engines as files (red team round 2)', () => {
    const root = process.env.FORGE_SWARM_ROOT || '/var/lib/forge-swarm';
    const work = mkdtempSync(join(tmpdir(), 'forge-reader-'));
    try {
      handOverToCellUser(work);
      const r = spawnSync(
        process.execPath,
        [
          join(process.cwd(), 'dist', 'runner.js'),
          'cell',
          'run',
          '--provider',
          'host',
          '--no-diff',
          '--worktree',
          work,
          '--',
          `ls ${root}/registry/data; find ${root} -name '*.tar' -o -name data 2>/dev/null | head -3; echo done`,
        ],
        { encoding: 'utf8', timeout: 120_000 },
      );
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /Permission denied/);
      assert.doesNotMatch(r.stdout, /docker\/registry|\/data$/m);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('a shared dependency reached through a symbolic link is refused with one line, nothing pushed', async () => {
    const repo = makeRepo({ '.gitignore': 'vendor/\n', 'a.txt': 'a\n' });
    const checkout = mkdtempSync(join('/var/lib', 'forge-swarm-trust-'));
    const privateDir = mkdtempSync(join('/var/lib', 'forge-ssl-private-'));
    const secret = `SECRET-LINKED-${randomBytes(8).toString('hex')}`;
    try {
      writeFileSync(join(privateDir, 'node.key'), `${secret}\n`, { mode: 0o600 });
      chmodSync(join(privateDir, 'node.key'), 0o600);
      // checkout/vendor -> an /etc/ssl/private style directory: what an install step can plant.
      symlinkSync(privateDir, join(checkout, 'vendor'));
      const before = new Set(await registryTags(SWARM_DEPS_REPOSITORY));
      await assert.rejects(
        provider.run({
          image,
          worktree: repo.dir,
          mount_at: repo.dir,
          shared_deps: [{ source: join(checkout, 'vendor'), target: join(repo.dir, 'vendor') }],
          cmd: 'cat vendor/node.key',
        }),
        (e: Error) => {
          assert.match(
            e.message,
            new RegExp(`^shared dependency ${join(checkout, 'vendor')} passes through the symbolic link ${join(checkout, 'vendor')}; `),
          );
          assert.doesNotMatch(e.message, /\n/);
          return true;
        },
      );
      assert.deepEqual(
        (await registryTags(SWARM_DEPS_REPOSITORY)).filter((t) => !before.has(t)),
        [],
        'nothing was pushed',
      );
    } finally {
      repo.cleanup();
      rmSync(checkout, { recursive: true, force: true });
      rmSync(privateDir, { recursive: true, force: true });
    }
  });

  describe("the tree a cell gets is the worktree's bytes, whatever the repository's attributes say", () => {
    let repo: { dir: string; cleanup: () => void };
    const files = {
      'lib.js': 'module.exports = () => "base";\n',
      'ver.txt': 'version $Format:%H$\n',
      'sub/x.js': 'sub x\n',
      'info.txt': 'named in info/attributes\n',
    };
    const cat = 'cat lib.js ver.txt sub/x.js info.txt';
    beforeEach(() => {
      repo = makeRepo({
        // Attributes in the tree, in a subdirectory and in the repository's info/attributes.
        '.gitattributes': 'lib.js export-ignore\nver.txt export-subst\n[attr]hide export-ignore\nsub/x.js hide\n',
      });
      mkdirSync(join(repo.dir, 'sub'));
      for (const [name, content] of Object.entries(files)) writeFileSync(join(repo.dir, name), content);
      writeFileSync(join(repo.dir, 'sub', '.gitattributes'), 'x.js export-ignore export-subst\n');
      git(repo.dir, 'add', '-A');
      git(repo.dir, 'commit', '-q', '-m', 'attributes');
      writeFileSync(join(repo.dir, '.git', 'info', 'attributes'), 'info.txt export-ignore\n');
      handOverToCellUser(repo.dir);
    });
    afterEach(() => repo.cleanup());

    it('export-ignore and export-subst change nothing the cell reads', async () => {
      const r = await provider.run({ image, worktree: repo.dir, cmd: cat });
      assert.equal(r.exit_code, 0, `${r.output} ${r.isolation.warnings.join('; ')}`);
      assert.equal(r.output, Object.values(files).join(''));
    });

    it('a cell that changes nothing returns an empty diff and leaves every file as it was', async () => {
      const r = await provider.run({ image, worktree: repo.dir, cmd: 'true' });
      assert.equal(r.exit_code, 0, `${r.output} ${r.isolation.warnings.join('; ')}`);
      assert.deepEqual(
        r.diff?.files.map((f) => f.path),
        [],
      );
      for (const [name, content] of Object.entries(files)) assert.equal(readFileSync(join(repo.dir, name), 'utf8'), content, name);
    });

    it("an attempt's change to an export-ignore file is the one tested", async () => {
      writeFileSync(join(repo.dir, 'lib.js'), 'module.exports = () => "broken";\n');
      writeFileSync(join(repo.dir, 'ver.txt'), 'version 2 $Format:%H$\n');
      const r = await provider.run({ image, worktree: repo.dir, cmd: 'cat lib.js ver.txt' });
      assert.equal(r.exit_code, 0, `${r.output} ${r.isolation.warnings.join('; ')}`);
      assert.equal(r.output, 'module.exports = () => "broken";\nversion 2 $Format:%H$\n');
      assert.deepEqual(r.diff?.files.map((f) => f.path).sort(), ['lib.js', 'ver.txt']);
    });
  });

  it('a cell whose output is still on its way long after its task ended is waited for and runs once', async function () {
    this.timeout(600_000);
    // 1.5 million short lines: the manager's log stream delivers them some 20 s after the task ended.
    const lines = 1_500_000;
    let expected = 0;
    for (let i = 1; i <= lines; i++) expected += String(i).length + 1;
    let streamed = 0;
    const r = await provider.run({ image, cmd: `seq 1 ${lines}`, timeout_s: 600 }, { onOutput: (c) => (streamed += c.length) });
    assert.equal(r.exit_code, 0, r.isolation.warnings.join('; '));
    assert.deepEqual(r.retries ?? [], [], `resubmitted: ${r.isolation.warnings.join('; ')}`);
    assert.equal(streamed, expected, 'every byte of the output arrived, once');
    assert.match(r.output, /\n1500000\n$/);
  });

  it('a cell that sends back 40,000 new files runs once, and every file comes back', async function () {
    this.timeout(900_000);
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      const r = await provider.run({
        image,
        worktree: repo.dir,
        cmd: 'mkdir many && cd many && i=0; while [ $i -lt 40000 ]; do echo $i > f$i; i=$((i+1)); done; echo ran-once',
        timeout_s: 600,
      });
      assert.equal(r.exit_code, 0, `${r.output} ${r.isolation.warnings.join('; ')}`);
      assert.deepEqual(r.retries ?? [], [], `resubmitted: ${r.isolation.warnings.join('; ')}`);
      assert.equal(r.output, 'ran-once\n');
      const back = readdirSync(join(repo.dir, 'many'));
      assert.equal(back.length, 40000);
      assert.equal(readFileSync(join(repo.dir, 'many', 'f39999'), 'utf8'), '39999\n');
    } finally {
      repo.cleanup();
    }
  });
});
