/**
 * Pure stack detection: from the files at the top of a repository, the install command,
 * the test command and the lockfiles whose contents decide when a baked image is stale.
 */
export type StackName = 'node' | 'python' | 'go' | 'rust' | 'java' | 'cmake' | 'make';

export interface DetectedStack {
  stack: StackName;
  /** Human detail, e.g. "npm (package-lock.json)". */
  detail: string;
  install: string | null;
  test: string;
  lockfiles: string[];
}

export interface RepoFacts {
  /** Top-level file names of the repository. */
  files: Set<string>;
  /** Reads a top-level file (for package.json scripts); null when absent. */
  read(name: string): string | null;
  /** The checkout's virtualenv (".venv", "venv") with a bin/python, when there is one. */
  venv?: string | null;
}

export function detectStacks(repo: RepoFacts): DetectedStack[] {
  const has = (f: string) => repo.files.has(f);
  const present = (...names: string[]) => names.filter(has);
  const found: DetectedStack[] = [];

  if (has('package.json')) {
    const pm = has('pnpm-lock.yaml') ? 'pnpm' : has('yarn.lock') ? 'yarn' : 'npm';
    const lock = { pnpm: 'pnpm-lock.yaml', yarn: 'yarn.lock', npm: 'package-lock.json' }[pm];
    const install = {
      pnpm: 'pnpm install --frozen-lockfile',
      yarn: 'yarn install --frozen-lockfile',
      // Without a lock file of the repository's, none is written: it would be an untracked file in the user's checkout.
      npm: has('package-lock.json') ? 'npm ci --no-audit --no-fund' : 'npm install --no-audit --no-fund --no-package-lock',
    }[pm];
    found.push({
      stack: 'node',
      detail: `${pm}${has(lock) ? ` (${lock})` : ''}`,
      install,
      test: `${pm} test`,
      lockfiles: present('package.json', 'package-lock.json', 'pnpm-lock.yaml', 'yarn.lock', '.npmrc'),
    });
  }
  if (['pyproject.toml', 'requirements.txt', 'setup.py', 'setup.cfg', 'pytest.ini', 'tox.ini', 'conftest.py'].some(has)) {
    // The project's own virtualenv is how its developer runs the tests (editable installs live there).
    const py = repo.venv ? `${repo.venv}/bin/python` : 'python3';
    const install = has('requirements.txt')
      ? `${py} -m pip install -r requirements.txt`
      : has('pyproject.toml') || has('setup.py')
        ? `${py} -m pip install .`
        : null;
    const config = ['pyproject.toml', 'setup.cfg', 'tox.ini', 'requirements.txt', 'requirements-dev.txt', 'requirements-test.txt']
      .map((f) => repo.read(f) ?? '')
      .join('\n');
    // No trace of pytest anywhere: the standard library's unittest, naming every test (-v).
    const pytest = has('pytest.ini') || has('conftest.py') || /\bpytest\b/.test(config);
    found.push({
      stack: 'python',
      detail: `${has('requirements.txt') ? 'pip (requirements.txt)' : has('pyproject.toml') ? 'pip (pyproject.toml)' : has('setup.py') ? 'pip (setup.py)' : 'pytest'}${repo.venv ? `, virtualenv ${repo.venv}` : ''}`,
      install,
      test: pytest ? `${py} -m pytest -q` : `${py} -m unittest discover -v`,
      lockfiles: present('requirements.txt', 'requirements-dev.txt', 'pyproject.toml', 'poetry.lock', 'setup.py', 'setup.cfg'),
    });
  }
  if (has('go.mod')) {
    found.push({
      stack: 'go',
      detail: 'go modules',
      install: 'go mod download',
      test: 'go test ./...',
      lockfiles: present('go.mod', 'go.sum'),
    });
  }
  if (has('Cargo.toml')) {
    found.push({
      stack: 'rust',
      detail: 'cargo',
      install: 'cargo fetch',
      test: 'cargo test',
      lockfiles: present('Cargo.toml', 'Cargo.lock'),
    });
  }
  // Cells have no network unless allowlisted: Maven and Gradle run offline on the shared local
  // repository and caches (and name a missing artifact) instead of failing on a download.
  if (has('pom.xml')) {
    found.push({
      stack: 'java',
      detail: 'maven',
      install: 'mvn -q -B dependency:go-offline',
      test: 'mvn -o -q -B test',
      lockfiles: present('pom.xml'),
    });
  } else if (has('build.gradle') || has('build.gradle.kts')) {
    const gradle = has('gradlew') ? './gradlew' : 'gradle';
    found.push({
      stack: 'java',
      detail: `gradle${has('gradlew') ? ' (wrapper)' : ''}`,
      install: `${gradle} --no-daemon dependencies`,
      test: `${gradle} --offline --no-daemon test`,
      lockfiles: present('build.gradle', 'build.gradle.kts', 'settings.gradle', 'settings.gradle.kts', 'gradle.lockfile'),
    });
  }
  if (has('CMakeLists.txt')) {
    found.push({
      stack: 'cmake',
      detail: 'cmake + ctest',
      install: null,
      test: 'cmake -S . -B build && cmake --build build && ctest --test-dir build --output-on-failure',
      lockfiles: [],
    });
  } else if (has('Makefile') || has('makefile') || has('GNUmakefile')) {
    found.push({ stack: 'make', detail: 'make', install: null, test: 'make test', lockfiles: [] });
  }
  return found;
}

/** The package registries a stack's install reaches: the only network an install cell gets. */
const REGISTRIES: Record<StackName, string[]> = {
  node: ['registry.npmjs.org', 'registry.yarnpkg.com'],
  python: ['pypi.org', 'files.pythonhosted.org'],
  go: ['proxy.golang.org', 'sum.golang.org'],
  rust: ['index.crates.io', 'static.crates.io', 'crates.io'],
  java: ['repo.maven.apache.org', 'repo1.maven.org', 'services.gradle.org', 'plugins.gradle.org'],
  cmake: [],
  make: [],
};

/** Pure: the registry hosts of the given stacks, each once. */
export function registryHosts(stacks: StackName[]): string[] {
  return [...new Set(stacks.flatMap((st) => REGISTRIES[st]))];
}
