import assert from 'node:assert/strict';
import { CellSpecSchema } from '../../../runner/src/protocol/cellSpec.js';
import {
  buildCellScript,
  CELL_RETURN_BUDGET,
  INSTALL_RETURN_BUDGET,
  parseReturnedFrame,
  returnBudgetFor,
} from '../../../runner/src/cells/swarm/swarmCellScript.js';
import { shellQuote } from '../../../runner/src/protocol/shellQuote.js';
import {
  baseImageTag,
  buildSwarmServiceSpec,
  judgeTasks,
  managerConnection,
  parseRegistry,
  type SwarmCellContext,
} from '../../../runner/src/cells/swarm/swarmServiceSpec.js';
import { readTar, writeTar } from '../../../runner/src/cells/swarm/tarArchive.js';
import { FRAME_IDLE_MS, FRAME_NODE_GRACE_MS, FrameCollector, nextFrameWaitStep } from '../../../runner/src/cells/swarm/frameArrival.js';
import { digestReference, judgeRegistryImage, pushedDigest } from '../../../runner/src/cells/swarm/registryTrust.js';
import { parseCatFileBatch, parseLsTree, refuseUnsafeTree } from '../../../runner/src/cells/swarm/gitTreeEntries.js';
import { InputError } from '../../../runner/src/protocol/inputError.js';
import { gzipSync } from 'node:zlib';

const ctx: SwarmCellContext = {
  cellId: 'cell-x',
  image: '127.0.0.1:5000/forge-cell-base:abc@sha256:00',
  workdir: '/work',
  cellUid: 65532,
  runnerPid: 42,
  runnerHost: 'h',
  configs: { script: { id: 's', name: 'cell-x-script' }, input: { id: 'i', name: 'cell-x-input' } },
  secret: { id: 'n', name: 'cell-x-nonce' },
  avoidNodes: ['lost1'],
  ulimits: [],
};

describe('swarm cells: planning (pure)', () => {
  it('the service: one replica that never restarts, limits reserved, the wrapper capabilities only, nothing bound from the runner', () => {
    const spec = CellSpecSchema.parse({
      image: 'img',
      cmd: 'true',
      limits: { memory_mib: 256, pids: 64, cpus: 1.5 },
      labels: { 'forge.run': 'r1' },
    });
    const s = buildSwarmServiceSpec(spec, ctx);
    assert.deepEqual(s.Mode, { Replicated: { Replicas: 1 } });
    const t = s.TaskTemplate as Required<NonNullable<typeof s.TaskTemplate>> & {
      ContainerSpec: Record<string, unknown>;
      Resources: Record<string, Record<string, number>>;
    };
    assert.deepEqual(t.RestartPolicy, { Condition: 'none', MaxAttempts: 0 });
    assert.equal(t.Resources.Limits!.MemoryBytes, 256 * 1024 * 1024);
    assert.equal(t.Resources.Limits!.Pids, 64);
    assert.equal(t.Resources.Reservations!.NanoCPUs, 1.5e9);
    assert.deepEqual(t.ContainerSpec.CapabilityDrop, ['ALL']);
    assert.deepEqual(t.ContainerSpec.CapabilityAdd, ['CAP_SETUID', 'CAP_SETGID', 'CAP_NET_ADMIN']);
    assert.deepEqual(
      (t.ContainerSpec.Mounts as { Type: string; Target: string }[]).map((m) => `${m.Type} ${m.Target}`),
      ['tmpfs /tmp', 'tmpfs /var/tmp'],
    );
    assert.deepEqual(t.Placement, { Constraints: ['node.id!=lost1'] });
    assert.equal(s.Labels!['forge.run'], 'r1');
    assert.equal(s.Labels!['forge.cell'], 'cell-x');
    // A worktree below /tmp lives in the image: no tmpfs over it.
    const under = buildSwarmServiceSpec(spec, { ...ctx, workdir: '/tmp/repo' });
    assert.deepEqual(
      (under.TaskTemplate as { ContainerSpec: { Mounts: { Target: string }[] } }).ContainerSpec.Mounts.map((m) => m.Target),
      ['/var/tmp'],
    );
    const files = (x: typeof s) =>
      (x.TaskTemplate as { ContainerSpec: { Configs: { File: { Name: string } }[] } }).ContainerSpec.Configs.map((c) => c.File.Name);
    assert.deepEqual(files(s), ['/forge-in/cell.sh', '/forge-in/input.tar']);
    // Changes too large for a config are in the image: nothing is mounted over them.
    assert.deepEqual(files(buildSwarmServiceSpec(spec, { ...ctx, configs: { ...ctx.configs, input: null } })), ['/forge-in/cell.sh']);
  });

  it("allow_net: the cell's overlay alone, no virtual IP, the relay named to the wrapper and the CA bundle as a config; without it none of that", () => {
    const spec = CellSpecSchema.parse({ image: 'img', cmd: 'true', allow_net: ['registry.npmjs.org'] });
    const plain = CellSpecSchema.parse({ image: 'img', cmd: 'true' });
    type Task = { Networks?: { Target: string }[]; ContainerSpec: { Env: string[]; Configs: { File: { Name: string; Mode: number } }[] } };
    const netted = buildSwarmServiceSpec(spec, {
      ...ctx,
      network: { id: 'net1', relayIp: '10.0.3.2' },
      configs: { ...ctx.configs, ca: { id: 'c', name: 'cell-x-ca' } },
    });
    const t = netted.TaskTemplate as Task;
    assert.deepEqual(t.Networks, [{ Target: 'net1' }]);
    assert.equal(netted.EndpointSpec!.Mode, 'dnsrr');
    assert.ok(t.ContainerSpec.Env.includes('FORGE_NET_RELAY=10.0.3.2'));
    assert.deepEqual(
      t.ContainerSpec.Configs.map((c) => c.File.Name),
      ['/forge-in/cell.sh', '/forge-in/input.tar', '/etc/forge/ca.pem'],
    );
    const none = buildSwarmServiceSpec(plain, ctx);
    const n = none.TaskTemplate as Task;
    assert.equal(n.Networks, undefined);
    assert.equal(none.EndpointSpec!.Mode, 'vip');
    assert.ok(!n.ContainerSpec.Env.some((e) => e.startsWith('FORGE_NET_RELAY')));
    // The proxy variables come after the spec's own: a repository's env cannot point the cell elsewhere.
    const script = buildCellScript(
      CellSpecSchema.parse({ image: 'i', cmd: 'true', env: { HTTPS_PROXY: 'http://evil:1' } }),
      '/work',
      '/etc/forge/ca.pem',
      { HTTPS_PROXY: 'http://c:t@10.0.3.2:3128' },
    );
    assert.ok(script.indexOf(shellQuote('HTTPS_PROXY=http://c:t@10.0.3.2:3128')) > script.indexOf(shellQuote('HTTPS_PROXY=http://evil:1')));
    assert.ok(script.includes(shellQuote('NODE_EXTRA_CA_CERTS=/etc/forge/ca.pem')));
  });

  it('what a cell sends back: a cell with a diff the usual budget, an install step (no diff) a far larger one, said to the wrapper and in the omitted reasons', () => {
    const cell = CellSpecSchema.parse({ image: 'img', cmd: 'true' });
    const install = CellSpecSchema.parse({ image: 'img', cmd: 'npm ci', capture_diff: false });
    assert.deepEqual(returnBudgetFor(cell), CELL_RETURN_BUDGET);
    assert.deepEqual(returnBudgetFor(install), INSTALL_RETURN_BUDGET);
    assert.ok(INSTALL_RETURN_BUDGET.totalBytes > CELL_RETURN_BUDGET.totalBytes);
    const env = (spec: typeof cell) =>
      (buildSwarmServiceSpec(spec, ctx).TaskTemplate as { ContainerSpec: { Env: string[] } }).ContainerSpec.Env;
    assert.ok(env(install).includes(`FORGE_RETURN_TOTAL=${INSTALL_RETURN_BUDGET.totalBytes}`));
    assert.ok(env(cell).includes(`FORGE_RETURN_TOTAL=${CELL_RETURN_BUDGET.totalBytes}`));
    const logSize = (spec: typeof cell) =>
      (buildSwarmServiceSpec(spec, ctx).TaskTemplate as { LogDriver: { Options: Record<string, string> } }).LogDriver.Options['max-size'];
    assert.notEqual(logSize(install), logSize(cell));
    const nonce = 'n'.repeat(48);
    const frame = [
      `FORGE ${nonce} omitted`,
      Buffer.from('budget 10 ./node_modules/x.js\n').toString('base64'),
      `FORGE ${nonce} exit 0`,
      '',
    ].join('\n');
    const parsed = parseReturnedFrame(frame, nonce, INSTALL_RETURN_BUDGET)!;
    assert.match(parsed.omitted[0]!.reason, new RegExp(`${INSTALL_RETURN_BUDGET.totalBytes} bytes of content`));
  });

  it('base image tags are content-addressed by image, tree, place and user', () => {
    const a = baseImageTag({ imageId: 'sha256:1', treeId: 't', workdir: '/work', cellUid: 65532 });
    assert.equal(a, baseImageTag({ imageId: 'sha256:1', treeId: 't', workdir: '/work', cellUid: 65532 }));
    assert.notEqual(a, baseImageTag({ imageId: 'sha256:1', treeId: 'u', workdir: '/work', cellUid: 65532 }));
    assert.notEqual(a, baseImageTag({ imageId: 'sha256:1', treeId: 't', workdir: '/repo', cellUid: 65532 }));
    assert.match(a, /^[0-9a-f]{40}$/);
  });

  it('the cell script: exact argv and environment as quoted words, the image PATH unless the spec sets one', () => {
    const script = buildCellScript(
      CellSpecSchema.parse({ image: 'i', cmd: ['printf', "it's $HOME", 'FOO=bar'], env: { A: "x'y" } }),
      '/work',
      null,
    );
    assert.match(script, /"PATH=\$PATH"/);
    assert.ok(script.includes(shellQuote("it's $HOME")));
    assert.ok(script.includes(`'A=x'\\''y'`));
    assert.ok(script.endsWith(`'printf' 'it'\\''s $HOME' 'FOO=bar'\n`));
    const withPath = buildCellScript(CellSpecSchema.parse({ image: 'i', cmd: 'true', env: { PATH: '/opt/bin' } }), '/work', null);
    assert.doesNotMatch(withPath, /"PATH=\$PATH"/);
  });

  it('the result frame counts only with the nonce, and only when it ends with an exit line', () => {
    const nonce = 'n0nce';
    const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
    const gz64 = (s: string | Buffer) => gzipSync(Buffer.from(s)).toString('base64');
    const frame = [
      'FORGE other exit 0',
      `FORGE ${nonce} files`,
      gz64(writeTar([{ name: './a.txt', type: 'file', mode: 0o644, uid: 1, gid: 1, mtime: 0, data: Buffer.from('hi\n') }])),
      `FORGE ${nonce} all`,
      gz64('./a.txt\0./b c.txt\0'),
      `FORGE ${nonce} omitted`,
      b64('too-large 9000000 ./big.bin\n'),
      `FORGE ${nonce} newline`,
      gz64('./q\na\0'),
      `FORGE ${nonce} output 12`,
      `FORGE ${nonce} oom 1`,
      `FORGE ${nonce} exit 3`,
      'FORGE n0nce exit 0',
    ].join('\n');
    const f = parseReturnedFrame(frame, nonce)!;
    assert.equal(f.exitCode, 3);
    assert.equal(f.outputBytes, 12);
    assert.equal(f.oomKills, 1);
    assert.deepEqual(f.all, ['a.txt', 'b c.txt']);
    assert.equal(f.omitted[0]!.path, 'big.bin');
    // A name with a newline is one name, never two omitted paths (one of them a tracked file's).
    assert.deepEqual(
      f.omitted.slice(1).map((o) => o.path),
      ['q\na'],
    );
    assert.equal(readTar(f.files).entries[0]!.data!.toString(), 'hi\n');
    assert.equal(parseReturnedFrame(frame.split('\n').slice(0, -2).join('\n'), nonce), null, 'no exit line: no frame');
    assert.equal(parseReturnedFrame('FORGE other exit 0\n', nonce), null);
    // A files section that is not what the wrapper compressed: the exit is known, nothing is brought back.
    const broken = parseReturnedFrame([`FORGE ${nonce} files`, b64('not gzip'), `FORGE ${nonce} exit 4`].join('\n'), nonce)!;
    assert.equal(broken.exitCode, 4);
    assert.match(broken.failure ?? '', /the frame's files section could not be read/);
    assert.equal(broken.files.length, 0);
  });

  it('the frame is parsed once its exit line arrived, even split across chunks', () => {
    const nonce = 'ab12';
    const c = new FrameCollector(nonce, 1024);
    c.push(Buffer.from(`FORGE ${nonce} output 0\nFORGE ${nonce} ex`));
    assert.equal(c.frame(), null);
    c.push(Buffer.from('it 7'));
    assert.equal(c.frame(), null, 'the exit line is not complete before its newline');
    c.push(Buffer.from('\n'));
    assert.equal(c.frame()?.exitCode, 7);
    const other = new FrameCollector(nonce, 1024);
    other.push(Buffer.from('FORGE zz exit 0\n'));
    assert.equal(other.frame(), null, 'another nonce is no frame');
  });

  it('after the task ended: wait while bytes arrive, ask the manager when they stop, rerun only for a node that is gone', () => {
    assert.equal(nextFrameWaitStep({ complete: true, idleMs: 10 ** 9, nodeState: null }), 'done');
    assert.equal(nextFrameWaitStep({ complete: false, idleMs: FRAME_IDLE_MS - 1, nodeState: null }), 'wait');
    assert.equal(nextFrameWaitStep({ complete: false, idleMs: FRAME_IDLE_MS, nodeState: null }), 'ask-node');
    assert.equal(nextFrameWaitStep({ complete: false, idleMs: FRAME_IDLE_MS, nodeState: 'down' }), 'lost');
    assert.equal(nextFrameWaitStep({ complete: false, idleMs: FRAME_IDLE_MS, nodeState: 'gone' }), 'lost');
    assert.equal(nextFrameWaitStep({ complete: false, idleMs: FRAME_IDLE_MS, nodeState: 'ready' }), 'wait');
    assert.equal(nextFrameWaitStep({ complete: false, idleMs: FRAME_IDLE_MS + FRAME_NODE_GRACE_MS, nodeState: 'ready' }), 'give-up');
  });

  it('registry images: only a digest this runner pushed is used; anything else is rebuilt, and said', () => {
    const d = (c: string) => `sha256:${c.repeat(64)}`;
    const facts = { repository: 'forge-cell-base', tag: 't1' };
    assert.deepEqual(judgeRegistryImage({ ...facts, recorded: [d('b'), d('a')], tagDigest: d('a') }), { kind: 'use', digest: d('a') });
    assert.deepEqual(judgeRegistryImage({ ...facts, recorded: [], tagDigest: null }), { kind: 'build', warning: null });
    const foreign = judgeRegistryImage({ ...facts, recorded: [], tagDigest: d('e') });
    assert.equal(foreign.kind, 'build');
    assert.match(
      (foreign as { warning: string }).warning,
      /^the registry's forge-cell-base:t1 is not what this runner built \(.*\); rebuilt$/,
    );
    const replaced = judgeRegistryImage({ ...facts, recorded: [d('a')], tagDigest: d('e') });
    assert.match((replaced as { warning: string }).warning, new RegExp(`it pushed ${d('a')}; the tag names ${d('e')}\\); rebuilt$`));
    const gone = judgeRegistryImage({ ...facts, recorded: [d('a')], tagDigest: null });
    assert.match((gone as { warning: string }).warning, /no longer has forge-cell-base:t1/);
    assert.equal(pushedDigest([{ status: 'x' }, { aux: { Digest: d('c'), Tag: 't' } }]), d('c'));
    assert.equal(pushedDigest([{ aux: { Digest: 'sha256:short' } }]), null);
    assert.equal(digestReference('r:5000', 'forge-cell-deps', d('c')), `r:5000/forge-cell-deps@${d('c')}`);
  });

  it('git object listings: names with spaces and tabs, blobs by id', () => {
    const ls = Buffer.from(['100644 blob aaaa\ta b.txt', '120000 blob bbbb\tl', '160000 commit cccc\tsub', ''].join('\0'));
    assert.deepEqual(parseLsTree(ls), [
      { mode: '100644', type: 'blob', oid: 'aaaa', path: 'a b.txt' },
      { mode: '120000', type: 'blob', oid: 'bbbb', path: 'l' },
      { mode: '160000', type: 'commit', oid: 'cccc', path: 'sub' },
    ]);
    const batch = Buffer.concat([Buffer.from('aaaa blob 3\nx\ny\nbbbb blob 0\n\n')]);
    const blobs = parseCatFileBatch(batch);
    assert.equal(blobs.get('aaaa')!.toString(), 'x\ny');
    assert.equal(blobs.get('bbbb')!.length, 0);
    assert.throws(() => parseCatFileBatch(Buffer.from('dddd missing\n')), /dddd is missing/);
    assert.throws(() => parseCatFileBatch(Buffer.from('aaaa blob 9\nab')), /cut short/);
  });

  it('git object listings: a name that is not UTF-8, a name twice, or a path below a link or file is refused (red team round 2)', () => {
    const rec = (mode: string, path: Buffer | string) =>
      Buffer.concat([Buffer.from(`${mode} ${mode === '160000' ? 'commit' : 'blob'} aaaa\t`), Buffer.from(path)]);
    const listing = (...recs: Buffer[]) => Buffer.concat(recs.flatMap((r) => [r, Buffer.from([0])]));
    // d<EF BF BD>/a, d<F0> -> /forge, d<FE>/wrapper.sh: all three decode to "d\uFFFD".
    assert.throws(
      () => parseLsTree(listing(rec('100644', Buffer.from([0x64, 0xf0])), rec('100644', 'x'))),
      (e: Error) => e instanceof InputError && /not valid UTF-8/.test(e.message),
    );
    assert.throws(
      () =>
        refuseUnsafeTree([
          { mode: '120000', path: 'd' },
          { mode: '100644', path: 'd/wrapper.sh' },
        ]),
      /below the symbolic link "d"/,
    );
    assert.throws(
      () =>
        refuseUnsafeTree([
          { mode: '100644', path: 'f' },
          { mode: '100644', path: 'f/x' },
        ]),
      /below the entry "f"/,
    );
    assert.throws(
      () =>
        refuseUnsafeTree([
          { mode: '100644', path: 'a' },
          { mode: '120000', path: 'a' },
        ]),
      /names "a" twice/,
    );
    assert.doesNotThrow(() =>
      refuseUnsafeTree([
        { mode: '100644', path: 'd/a' },
        { mode: '120000', path: 'l' },
        { mode: '100644', path: 'dd/x' },
      ]),
    );
  });

  it('tar: long names, links and concatenated archives read back as written', () => {
    const long = `${'d'.repeat(120)}/file.txt`;
    const one = writeTar([
      { name: 'dir', type: 'dir', mode: 0o755, uid: 0, gid: 0, mtime: 1 },
      { name: long, type: 'file', mode: 0o755, uid: 65532, gid: 65532, mtime: 2, data: Buffer.from('x') },
      { name: 'link', type: 'symlink', mode: 0o777, uid: 0, gid: 0, mtime: 3, linkname: 'l'.repeat(150) },
    ]);
    const two = writeTar([{ name: 'second', type: 'file', mode: 0o644, uid: 0, gid: 0, mtime: 4, data: Buffer.alloc(600, 1) }]);
    const { entries } = readTar(Buffer.concat([one, two]));
    assert.deepEqual(
      entries.map((e) => [e.name, e.type]),
      [
        ['dir', 'dir'],
        [long, 'file'],
        ['link', 'symlink'],
        ['second', 'file'],
      ],
    );
    assert.equal(entries[1]!.uid, 65532);
    assert.equal(entries[2]!.linkname, 'l'.repeat(150));
    assert.equal(entries[3]!.data!.length, 600);
    assert.throws(() => readTar(Buffer.concat([one.subarray(0, 512), Buffer.alloc(1)]).fill(7, 0, 10)), /checksum/);
  });

  it('task states: ended, waiting, or lost with its node', () => {
    const up = () => 'ready';
    const down = () => 'down';
    assert.deepEqual(judgeTasks([], up), { kind: 'waiting' });
    assert.deepEqual(judgeTasks([{ state: 'running', nodeId: 'n', exitCode: null, err: null }], up), { kind: 'running' });
    assert.deepEqual(judgeTasks([{ state: 'failed', nodeId: 'n', exitCode: 3, err: 'x' }], up), { kind: 'ended', exitCode: 3 });
    assert.equal(judgeTasks([{ state: 'running', nodeId: 'n', exitCode: null, err: null }], down).kind, 'lost');
    assert.equal(judgeTasks([{ state: 'orphaned', nodeId: 'n', exitCode: null, err: null }], up).kind, 'lost');
    assert.equal(judgeTasks([{ state: 'rejected', nodeId: 'n', exitCode: null, err: 'no image' }], up).kind, 'lost');
  });

  it('manager and registry: one-line errors that name the fix', () => {
    assert.deepEqual(managerConnection(undefined, { verify: false, certPath: undefined }), { socketPath: '/var/run/docker.sock' });
    assert.deepEqual(managerConnection('unix:///run/x.sock', { verify: false, certPath: undefined }), { socketPath: '/run/x.sock' });
    assert.deepEqual(managerConnection('tcp://m:2376', { verify: true, certPath: '/c' }), {
      protocol: 'https',
      host: 'm',
      port: 2376,
      certPath: '/c',
    });
    assert.deepEqual(managerConnection('ssh://me@m', { verify: false, certPath: undefined }), {
      protocol: 'ssh',
      host: 'm',
      port: 22,
      username: 'me',
    });
    assert.throws(() => managerConnection('ftp://m', { verify: false, certPath: undefined }), /unix:\/\/, tcp:\/\/ or ssh:\/\//);
    assert.equal(parseRegistry('http://127.0.0.1:5000/'), '127.0.0.1:5000');
    assert.throws(() => parseRegistry(undefined), /--registry HOST:PORT or set FORGE_SWARM_REGISTRY/);
    assert.throws(() => parseRegistry('a b'), /is not HOST:PORT/);
  });
});
