import assert from 'node:assert/strict';
import { detectStacks, type RepoFacts } from '../../../runner/src/images/detectStack.js';
import { bakeHash, renderDockerfile } from '../../../runner/src/images/bakeImage.js';

const repo = (...files: string[]): RepoFacts => ({ files: new Set(files), read: () => null });
const first = (...files: string[]) => detectStacks(repo(...files))[0];

describe('detectStacks', () => {
  it('node: picks the package manager from the lockfile', () => {
    assert.deepEqual(first('package.json', 'package-lock.json'), {
      stack: 'node',
      detail: 'npm (package-lock.json)',
      install: 'npm ci --no-audit --no-fund',
      test: 'npm test',
      lockfiles: ['package.json', 'package-lock.json'],
    });
    assert.equal(first('package.json', 'pnpm-lock.yaml')?.install, 'pnpm install --frozen-lockfile');
    assert.equal(first('package.json', 'yarn.lock')?.test, 'yarn test');
    assert.equal(first('package.json')?.install, 'npm install --no-audit --no-fund --no-package-lock');
  });

  it('python: requirements, pyproject, or bare pytest projects', () => {
    assert.equal(first('requirements.txt')?.install, 'python3 -m pip install -r requirements.txt');
    assert.equal(first('pyproject.toml', 'poetry.lock')?.install, 'python3 -m pip install .');
    assert.deepEqual(first('pyproject.toml', 'poetry.lock')?.lockfiles, ['pyproject.toml', 'poetry.lock']);
    assert.equal(first('pytest.ini')?.install, null);
    assert.equal(first('conftest.py')?.test, 'python3 -m pytest -q');
  });

  it('go, rust, java (maven, gradle with and without wrapper), cmake and make', () => {
    assert.equal(first('go.mod', 'go.sum')?.test, 'go test ./...');
    assert.equal(first('Cargo.toml', 'Cargo.lock')?.install, 'cargo fetch');
    assert.equal(first('pom.xml')?.test, 'mvn -o -q -B test');
    assert.equal(first('build.gradle.kts', 'gradlew')?.test, './gradlew --offline --no-daemon test');
    assert.equal(first('build.gradle')?.test, 'gradle --offline --no-daemon test');
    assert.match(first('CMakeLists.txt')?.test ?? '', /ctest --test-dir build/);
    assert.equal(first('Makefile')?.test, 'make test');
    assert.equal(first('CMakeLists.txt', 'Makefile')?.stack, 'cmake');
  });

  it('reports every stack of a polyglot repo, and none for an empty one', () => {
    assert.deepEqual(
      detectStacks(repo('package.json', 'requirements.txt', 'Makefile')).map((s) => s.stack),
      ['node', 'python', 'make'],
    );
    assert.deepEqual(detectStacks(repo('README.md')), []);
  });
});

describe('bake identity and Dockerfile', () => {
  const lock = (content: string) => [{ name: 'package-lock.json', content: Buffer.from(content) }];
  it('hash changes with base image, install command or lockfile contents, and only with them', () => {
    const h = bakeHash('sha256:a', 'npm ci', lock('{}'));
    assert.equal(bakeHash('sha256:a', 'npm ci', lock('{}')), h);
    assert.notEqual(bakeHash('sha256:b', 'npm ci', lock('{}')), h);
    assert.notEqual(bakeHash('sha256:a', 'npm install', lock('{}')), h);
    assert.notEqual(bakeHash('sha256:a', 'npm ci', lock('{"x":1}')), h);
    assert.match(h, /^[0-9a-f]{16}$/);
  });

  it('runs the install over the lockfiles and moves node_modules out of the bind-mounted /work', () => {
    const df = renderDockerfile('sha256:base', ['package.json', 'package-lock.json'], 'npm ci', 'abc');
    assert.match(df, /^FROM sha256:base\nWORKDIR \/work\nCOPY \["package.json","package-lock.json","\.\/"\]\n/);
    assert.match(df, /RUN \["\/bin\/sh","-c","npm ci"\]/);
    assert.match(df, /mv node_modules \/node_modules/);
    assert.doesNotMatch(renderDockerfile('sha256:base', [], null, 'abc'), /RUN/);
  });
});

describe('bake failure message', () => {
  it('names the step, its exit code, its last lines (escapes stripped) and the way out', async () => {
    const { describeBakeFailure } = await import('../../../runner/src/images/bakeImage.js');
    const tail = [
      'Step 5/7 : RUN ["/bin/sh","-c","npm ci"]\n',
      ' ---> Running in 4b13747a7499\n',
      '\x1b[91mnpm ERR! code SELF_SIGNED_CERT_IN_CHAIN\n\x1b[0m',
      'npm ERR! A complete log of this run can be found in:\n',
      'Removing intermediate container 4b13747a7499\n',
    ];
    const m = describeBakeFailure('npm ci', "The command '/bin/sh -c npm ci' returned a non-zero code: 1", tail);
    assert.match(
      m,
      /^bake: the install step "npm ci" failed \(exit 1\): npm ERR! code SELF_SIGNED_CERT_IN_CHAIN; the package registry was not reachable/,
    );
    assert.match(m, /--no-install/);
    // eslint-disable-next-line no-control-regex -- the test looks for control characters
    assert.doesNotMatch(m, /\x1b|\n|Removing|complete log/);
    const own = describeBakeFailure('make deps', 'returned a non-zero code: 2', [
      'Step 3/4 : ENV NODE_EXTRA_CA_CERTS=/etc/forge/ca.pem SSL_CERT_FILE=/etc/forge/ca.pem\n',
      'make: *** No rule to make target deps.  Stop.\n',
    ]);
    assert.match(own, /\(exit 2\): make: \*\*\* No rule/);
    assert.doesNotMatch(own, /not reachable/);
  });

  it('the CA bundle goes in only with an install step, with the variables clients read', () => {
    const df = renderDockerfile('sha256:base', ['package.json'], 'npm ci', 'abc', true);
    assert.match(df, /COPY \["forge-host-ca.pem","\/etc\/forge\/ca.pem"\]/);
    assert.match(df, /NODE_EXTRA_CA_CERTS=\/etc\/forge\/ca.pem .*REQUESTS_CA_BUNDLE=\/etc\/forge\/ca.pem PIP_CERT=\/etc\/forge\/ca.pem/);
    assert.ok(df.indexOf('ca.pem') < df.indexOf('RUN'));
    assert.doesNotMatch(renderDockerfile('sha256:base', [], null, 'abc', true), /ca\.pem/);
  });
});
