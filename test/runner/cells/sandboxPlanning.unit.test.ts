import assert from 'node:assert/strict';
import { buildBubblewrapArgs, CELL_HOME } from '../../../runner/src/cells/bubblewrapArgs.js';
import { SANDBOX_EGRESS } from '../../../runner/src/cells/egressRelay.js';
import { planSandboxLayout } from '../../../runner/src/cells/sandboxLayout.js';
import { buildCellEnvironment } from '../../../runner/src/cells/cellEnvironment.js';

const host = (paths: string[]) => ({
  existing: (p: string) => paths.some((x) => x === p || x.startsWith(p + '/')),
  isSymlink: (p: string) => p === '/var/run',
});

describe('planSandboxLayout', () => {
  it('hides homes, /run and secrets, and puts back toolchains that PATH needs', () => {
    const layout = planSandboxLayout({
      runnerHome: '/root',
      pathEntries: ['/root/.pyenv/shims', '/root/.cargo/bin', '/usr/bin', 'relative/bin'],
      sshHostKeys: ['/etc/ssh/ssh_host_ed25519_key'],
      ...host([
        '/tmp',
        '/run',
        '/var/run',
        '/root/.pyenv/shims',
        '/root/.cargo/bin',
        '/root/.cargo/credentials.toml',
        '/root/.rustup',
        '/usr/bin',
        '/etc/shadow',
        '/etc/ssh/ssh_host_ed25519_key',
        '/home/u',
      ]),
    });
    assert.deepEqual(layout.tmpfsMasks, ['/tmp', '/run', '/root', '/home']);
    assert.deepEqual(layout.reexposed, ['/root/.cargo', '/root/.pyenv', '/root/.rustup']);
    assert.ok(layout.nullMasks.includes('/etc/shadow'));
    assert.ok(layout.nullMasks.includes('/etc/ssh/ssh_host_ed25519_key'));
    assert.ok(layout.nullMasks.includes('/root/.cargo/credentials.toml'));
  });

  it('a PATH entry under a home puts back its toolchain, never the whole home, its XDG data or the state directory (red team round 3)', () => {
    const files = [
      '/tmp',
      '/home/alice/.local/bin',
      '/home/alice/.local/lib/python3.11',
      '/home/alice/.local/lib/cargo/credentials.toml',
      '/home/alice/.local/state/forge-cells',
      '/home/alice/.ssh/id_ed25519',
      '/home/alice/.nvm/versions/node/v20/bin',
      '/home/alice/bin',
    ];
    const layout = planSandboxLayout({
      runnerHome: '/home/alice',
      pathEntries: ['/home/alice/.local/bin', '/home/alice/.nvm/versions/node/v20/bin', '/home/alice/bin', '/home/alice'],
      sshHostKeys: [],
      stateDir: '/home/alice/.local/state/forge-cells',
      list: (d) => (d === '/home/alice/.local/lib' ? ['python3.11', 'cargo'] : []),
      ...host(files),
    });
    // pip --user's lib/python3.11, never lib/cargo (a CARGO_HOME with its credentials: red team round 8).
    assert.deepEqual(layout.reexposed, [
      '/home/alice/.local/bin',
      '/home/alice/.local/lib/python3.11',
      '/home/alice/.nvm',
      '/home/alice/bin',
    ]);
    // A root runner whose state directory sits in a directory PATH reaches: only the entry itself.
    const root = planSandboxLayout({
      runnerHome: '/root',
      pathEntries: ['/root/tools/bin'],
      sshHostKeys: [],
      stateDir: '/root/tools/state',
      ...host(['/root/tools/bin', '/root/tools/state', '/tmp']),
    });
    assert.deepEqual(root.reexposed, ['/root/tools/bin']);
  });

  it("outside known toolchain homes a PATH entry puts back only itself; a link is judged by where it leads; a node install's npmrc stays hidden (red team round 4)", () => {
    const files = [
      '/tmp',
      '/home/alice/.config/composer/vendor/bin',
      '/home/alice/.config/gh/hosts.yml',
      '/home/alice/.pulumi/bin',
      '/home/alice/.pulumi/credentials.json',
      '/home/alice/.nvm/versions/node/v20/bin',
      '/home/alice/.nvm/versions/node/v20/etc/npmrc',
      '/home/alice/.sdk/bin',
      '/home/alice/.root/usr/bin',
    ];
    const links: Record<string, string> = { '/home/alice/.sdk': '/home/alice', '/home/alice/.root': '/' };
    const realpath = (p: string) => {
      for (const [link, to] of Object.entries(links)) if (p === link || p.startsWith(`${link}/`)) return to + p.slice(link.length) || '/';
      return p;
    };
    const layout = planSandboxLayout({
      runnerHome: '/home/alice',
      pathEntries: [
        '/home/alice/.config/composer/vendor/bin',
        '/home/alice/.pulumi/bin',
        '/home/alice/.nvm/versions/node/v20/bin',
        '/home/alice/.sdk/bin',
        '/home/alice/.root/usr/bin',
      ],
      sshHostKeys: [],
      realpath,
      ...host(files),
    });
    // .sdk -> ~ and .root -> / put back only their bin directories, never the home or /.
    assert.deepEqual(layout.reexposed, [
      '/home/alice/.config/composer/vendor/bin',
      '/home/alice/.nvm',
      '/home/alice/.pulumi/bin',
      '/home/alice/.root/usr/bin',
      '/home/alice/.sdk/bin',
    ]);
    assert.ok(layout.nullMasks.includes('/home/alice/.nvm/versions/node/v20/etc/npmrc'));
  });

  it("credential files deep in a re-exposed toolchain home stay hidden: cargo's config, a node or python install's npmrc and pip.conf (red team round 5)", () => {
    const files = [
      '/tmp',
      '/home/a/.cargo/bin',
      '/home/a/.cargo/config.toml',
      '/home/a/.nvm/versions/node/v18/etc/npmrc',
      '/home/a/.nvm/versions/node/v20/bin',
      '/home/a/.pyenv/shims',
      '/home/a/.pyenv/versions/3.12.1/pip.conf',
      '/home/a/.local/bin',
      '/home/a/.local/share/pipx/venvs/black/pip.conf',
      '/home/a/miniconda3/bin',
      '/home/a/miniconda3/.condarc',
    ];
    const dirs: Record<string, string[]> = {
      '/home/a/.nvm/versions/node': ['v18', 'v20'],
      '/home/a/.pyenv/versions': ['3.12.1'],
      '/home/a/.local/share/pipx/venvs': ['black'],
    };
    const layout = planSandboxLayout({
      runnerHome: '/home/a',
      pathEntries: [
        '/home/a/.cargo/bin',
        '/home/a/.nvm/versions/node/v20/bin',
        '/home/a/.pyenv/shims',
        '/home/a/.local/bin',
        '/home/a/miniconda3/bin',
      ],
      sshHostKeys: [],
      list: (d) => dirs[d] ?? [],
      ...host(files),
    });
    for (const f of [
      '/home/a/.cargo/config.toml',
      '/home/a/.nvm/versions/node/v18/etc/npmrc',
      '/home/a/.pyenv/versions/3.12.1/pip.conf',
      '/home/a/.local/share/pipx/venvs/black/pip.conf',
      '/home/a/miniconda3/.condarc',
    ])
      assert.ok(layout.nullMasks.includes(f), f);
  });

  it('.NET, opam and sdkman homes are put back only down to their toolchain, not their certificate store, plugins or config (red team round 6)', () => {
    const files = [
      '/tmp',
      '/home/a/.dotnet/tools',
      '/home/a/.dotnet/corefx/cryptography/x509stores/my/x.pfx',
      '/home/a/.opam/default/bin',
      '/home/a/.opam/plugins/opam-publish/token',
      '/home/a/.sdkman/candidates/maven/current/bin',
      '/home/a/.sdkman/candidates/maven/3.9.6/conf/settings.xml',
      '/home/a/.nodenv/shims',
      '/home/a/.nodenv/versions/20.1.0/etc/npmrc',
    ];
    const dirs: Record<string, string[]> = {
      '/home/a/.sdkman/candidates/maven': ['3.9.6', 'current'],
      '/home/a/.nodenv/versions': ['20.1.0'],
    };
    const layout = planSandboxLayout({
      runnerHome: '/home/a',
      pathEntries: ['/home/a/.dotnet/tools', '/home/a/.opam/default/bin', '/home/a/.sdkman/candidates/maven/current/bin'],
      sshHostKeys: [],
      list: (d) => dirs[d] ?? [],
      ...host(files),
    });
    assert.deepEqual(layout.reexposed, ['/home/a/.dotnet/tools', '/home/a/.opam/default', '/home/a/.sdkman/candidates/maven']);
    assert.ok(layout.nullMasks.includes('/home/a/.sdkman/candidates/maven/3.9.6/conf/settings.xml'));
    // dotnet-install.sh puts ~/.dotnet itself on PATH: its SDK comes back, its certificate store does not.
    const dotnet = planSandboxLayout({
      runnerHome: '/home/a',
      pathEntries: ['/home/a/.dotnet'],
      sshHostKeys: [],
      ...host([...files, '/home/a/.dotnet/dotnet', '/home/a/.dotnet/sdk']),
    });
    assert.deepEqual(dotnet.reexposed, ['/home/a/.dotnet/dotnet', '/home/a/.dotnet/sdk', '/home/a/.dotnet/tools']);
    const nodenv = planSandboxLayout({
      runnerHome: '/home/a',
      pathEntries: ['/home/a/.nodenv/shims'],
      sshHostKeys: [],
      list: (d) => dirs[d] ?? [],
      ...host(files),
    });
    assert.ok(nodenv.nullMasks.includes('/home/a/.nodenv/versions/20.1.0/etc/npmrc'));
  });

  it('masks a runner HOME outside /root and /home too', () => {
    const layout = planSandboxLayout({ runnerHome: '/srv/ci', pathEntries: [], sshHostKeys: [], ...host(['/srv/ci', '/tmp']) });
    assert.ok(layout.tmpfsMasks.includes('/srv/ci'));
  });
});

describe('buildBubblewrapArgs', () => {
  const layout = { tmpfsMasks: ['/tmp', '/root'], nullMasks: ['/root/.cargo/credentials'], reexposed: ['/root/.cargo'] };

  it('mounts in an order where later mounts win: root, masks, toolchains, secrets, worktree, .git', () => {
    const args = buildBubblewrapArgs({
      layout,
      worktree: '/root/proj',
      gitMetadata: '/root/proj/.git',
      env: { PATH: '/bin', CI: 'true' },
      argv: ['make', 'test'],
    });
    const at = (...seq: string[]) => args.findIndex((_, i) => seq.every((s, j) => args[i + j] === s));
    assert.equal(at('--ro-bind', '/', '/'), 0);
    assert.ok(at('--tmpfs', '/root') < at('--ro-bind', '/root/.cargo', '/root/.cargo'));
    assert.ok(at('--ro-bind', '/root/.cargo', '/root/.cargo') < at('--ro-bind', '/dev/null', '/root/.cargo/credentials'));
    assert.ok(at('--tmpfs', '/root') < at('--bind', '/root/proj', '/root/proj'));
    assert.ok(at('--bind', '/root/proj', '/root/proj') < at('--ro-bind', '/root/proj/.git', '/root/proj/.git'));
    assert.ok(at('--chdir', '/root/proj') > 0);
    assert.ok(at('--dir', CELL_HOME) > 0);
    for (const flag of ['--unshare-all', '--die-with-parent', '--new-session']) assert.ok(args.includes(flag), flag);
    assert.ok(at('--cap-drop', 'ALL') > 0);
    assert.ok(!args.includes('--share-net'));
    // The environment is exactly the given one: cleared first, then set.
    assert.ok(at('--clearenv') < at('--setenv', 'PATH', '/bin'));
    assert.ok(at('--setenv', 'CI', 'true') > 0);
    assert.deepEqual(args.slice(-3), ['--', 'make', 'test']);
  });

  it("never shares the host network: allow_net binds only the cell's socket and the relay into /run/forge-egress", () => {
    const runLayout = { ...layout, tmpfsMasks: [...layout.tmpfsMasks, '/run'] };
    const egress = { socket: '/tmp/forge-egress-x/proxy.sock', node: '/usr/bin/node' };
    for (const dropTo of [null, { uid: 65532, gid: 65532, setpriv: '/usr/bin/setpriv' }]) {
      const args = buildBubblewrapArgs({
        layout: runLayout,
        worktree: '/w',
        gitMetadata: null,
        egress,
        env: { PATH: '/bin', LD_PRELOAD: '/w/x.so' },
        argv: ['npm', 'ci'],
        dropTo,
      });
      assert.ok(!args.includes('--share-net'));
      assert.ok(args.includes(dropTo ? '--unshare-net' : '--unshare-all'));
      const seq = (xs: string[]) => args.findIndex((_, i) => xs.every((x, j) => args[i + j] === x));
      assert.ok(seq(['--ro-bind', egress.socket, SANDBOX_EGRESS.socket]) > seq(['--bind', '/w', '/w']), 'after the worktree');
      assert.ok(seq(['--ro-bind', egress.node, SANDBOX_EGRESS.node]) > 0);
      assert.ok(!args.some((a) => a.includes('docker.sock')));
      assert.ok(!args.some((a, i) => a === '--bind' && args[i + 1]?.startsWith('/run')), 'nothing writable under /run');
      // The relay starts with PATH alone; the spec's environment (LD_PRELOAD...) reaches the command only.
      const starter = args.indexOf('forge-egress');
      assert.ok(starter > 0 && args.lastIndexOf('LD_PRELOAD=/w/x.so') > starter);
      assert.deepEqual(args.slice(starter + 1, starter + 2), [SANDBOX_EGRESS.node]);
      assert.deepEqual(args.slice(-2), ['npm', 'ci']);
      assert.ok(!args.includes('LD_PRELOAD'), "not given to bwrap's --setenv");
    }
    const none = buildBubblewrapArgs({ layout, worktree: null, gitMetadata: null, env: {}, argv: ['true'] });
    assert.ok(!none.includes('--share-net') && !none.some((a) => a.startsWith(SANDBOX_EGRESS.dir)));
  });
});

describe('buildCellEnvironment', () => {
  it('passes only the allowlist, the private paths and the additions', () => {
    const env = buildCellEnvironment(
      { PATH: '/bin', OPENAI_API_KEY: 'sk', SSH_AUTH_SOCK: '/x', LANG: 'de_DE.UTF-8', TERM: 'xterm' },
      '/h',
      '/t',
      { FOO: '1' },
    );
    assert.deepEqual(env, {
      PATH: '/bin',
      LANG: 'de_DE.UTF-8',
      TERM: 'xterm',
      CI: 'true',
      PYTHONDONTWRITEBYTECODE: '1',
      HOME: '/h',
      TMPDIR: '/t',
      FOO: '1',
    });
  });
});
