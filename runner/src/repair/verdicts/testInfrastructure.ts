/**
 * Pure: which of an attempt's changed files decide what its tests are. An attempt's verdict
 * runs the base commit's tests, as the baseline did: the attempt's changes to test files,
 * the test runner's configuration and the build files that define the test command are in its
 * patch for review, not in its verdict (red team 7: an attempt that broke a test and then
 * skipped, ignored or deleted it, rewrote the test script, or dropped tests in a conftest.py
 * was "fixed"). SWE-bench grades the same way: the tests are the benchmark's, not the model's.
 */

/** Directories whose files are tests, their fixtures and their data. */
const TEST_DIRS = new Set(['test', 'tests', '__tests__', 'spec', 'specs', '__mocks__', '__snapshots__', 'testdata', 'e2e']);

const TEST_FILE = [
  /^test_.*\.py$/,
  /_test\.py$/,
  /^conftest\.py$/,
  /_test\.go$/,
  /\.(?:test|spec)\.[cm]?[jt]sx?$/,
  /^tests?\.[cm]?[jt]s$/,
  /(?:Test|Tests|IT)\.(?:java|kt)$/,
  /_spec\.rb$/,
];

/** Configuration of test runners and the build files that say what `test` runs. */
const TEST_CONFIG = [
  /^\.mocharc(?:\.(?:js|cjs|mjs|json|jsonc|yml|yaml))?$/,
  /^mocha\.opts$/,
  /^(?:jest|vitest|vite|ava|karma|playwright|cypress)\.config\.(?:[cm]?[jt]s|json)$/,
  /^vitest\.(?:workspace|projects)\.(?:[cm]?[jt]s|json)$/,
  /^\.nycrc(?:\.(?:json|yml|yaml))?$/,
  /^\.c8rc(?:\.json)?$/,
  /^\.taprc$/,
  /^\.npmrc$/,
  /^\.yarnrc(?:\.yml)?$/,
  /^pytest\.ini$/,
  /^tox\.ini$/,
  /^setup\.cfg$/,
  /^pyproject\.toml$/,
  /^(?:GNUmakefile|[Mm]akefile)$/,
  /^CMakeLists\.txt$/,
  /^Cargo\.toml$/,
  /^pom\.xml$/,
  /^build\.gradle(?:\.kts)?$/,
];

export type TestFileRole = 'test' | 'manifest' | null;

/** Pure: a changed path's part in the tests ('manifest': an npm package.json, whose test keys alone are the base's). */
export function testFileRole(path: string): TestFileRole {
  const parts = path.split('/');
  const name = parts.at(-1) ?? '';
  if (name === 'package.json') return 'manifest';
  if (parts.slice(0, -1).some((d) => TEST_DIRS.has(d))) return 'test';
  if (TEST_FILE.some((re) => re.test(name)) || TEST_CONFIG.some((re) => re.test(name))) return 'test';
  return null;
}

/** package.json keys that say how tests run: npm's scripts and workspaces, and test runners' own config. */
const MANIFEST_TEST_KEYS = ['scripts', 'workspaces', 'jest', 'mocha', 'ava', 'c8', 'nyc', 'tap'];

/**
 * Pure: the attempt's package.json with the base commit's test keys (its dependencies and
 * the rest stay the attempt's), the attempt's own when they are the same, or null when either
 * is not a JSON object (then the base's file is used whole).
 */
export function manifestWithBaseTests(base: string, attempt: string): string | null {
  const parse = (text: string): Record<string, unknown> | null => {
    try {
      const v: unknown = JSON.parse(text);
      return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
    } catch {
      return null;
    }
  };
  const b = parse(base);
  const a = parse(attempt);
  if (!a || !b) return null;
  const same = MANIFEST_TEST_KEYS.every((k) => JSON.stringify(a[k]) === JSON.stringify(b[k]));
  if (same) return attempt;
  const merged: Record<string, unknown> = { ...a };
  for (const k of MANIFEST_TEST_KEYS) {
    if (k in b) merged[k] = b[k];
    else delete merged[k];
  }
  return `${JSON.stringify(merged, null, 2)}\n`;
}
