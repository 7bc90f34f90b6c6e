import { closeSync, constants, type Dir, type Dirent, openSync } from 'node:fs';
import { type EntryName, fileIdentityAt, openDirectoryAt, openDirectoryStream, readRegularAt } from '../../hostguard/beneath.js';
import { parseJunitXml } from './junitXml.js';
import { mergeReports, type TestReport } from './testReport.js';

/**
 * Where build tools write JUnit XML without being asked: Maven's surefire and failsafe
 * (`target/*-reports`), Gradle (`build/test-results/<task>/`). Read from the repository root
 * and from its first-level modules (a multi-module build writes one per module).
 */
const REPORT_DIRS: readonly (readonly string[])[] = [
  ['target', 'surefire-reports'],
  ['target', 'failsafe-reports'],
  ['build', 'test-results'],
];

/** Bounds on what is read back from a tree the tests (code the agent wrote) could fill. */
export interface JunitLimits {
  maxModules: number;
  /** Directory entries looked at, in all: a directory of a million links must not cost a minute. */
  maxEntries: number;
  maxFiles: number;
  maxFileBytes: number;
  maxTotalBytes: number;
}

export const JUNIT_LIMITS: Readonly<JunitLimits> = {
  maxModules: 200,
  maxEntries: 50_000,
  maxFiles: 2_000,
  maxFileBytes: 8 * 1024 * 1024,
  maxTotalBytes: 64 * 1024 * 1024,
};

/** The report files present before a test cell: (device, inode, ctime) of each. */
export type ReportSnapshot = ReadonlySet<string>;

/**
 * The reports already in the worktree before its test cell runs (committed ones, an earlier
 * cell's). Only files the cell then creates or changes count: a change moves the ctime, which
 * no process can set.
 */
export function snapshotJunitReports(worktree: string, limits: Readonly<JunitLimits> = JUNIT_LIMITS): ReportSnapshot {
  const seen = new Set<string>();
  let complete = false;
  try {
    complete = scanReportFiles(worktree, limits, (_dir, _name, id) => {
      seen.add(id);
      return true;
    });
  } catch {
    complete = false;
  }
  // A snapshot that could not see every report cannot tell new ones from old: none is read after.
  if (!complete) seen.add(SNAPSHOT_INCOMPLETE);
  return seen;
}

/** In a snapshot that was cut short or failed: no report file is taken as the cell's. */
const SNAPSHOT_INCOMPLETE = 'incomplete';

/**
 * The JUnit XML reports the test cell's build tool wrote in the worktree, merged into one
 * report; null when there are none, or when there were more than the bounds allow (the
 * console is then the source: a partial report would hide regressions). Per-test outcomes
 * from these name every test, passing ones too, where the console (`mvn -q`) names only failures.
 *
 * The worktree is hostile: entries are opened one component at a time without following
 * links, only regular files are read, everything is bounded, one bad file is skipped, and
 * nothing here throws.
 */
export function readJunitReports(
  worktree: string,
  before: ReportSnapshot,
  limits: Readonly<JunitLimits> = JUNIT_LIMITS,
): TestReport | null {
  if (before.has(SNAPSHOT_INCOMPLETE)) return null;
  const reports: TestReport[] = [];
  let files = 0;
  let bytes = 0;
  let overflow = false;
  try {
    const complete = scanReportFiles(worktree, limits, (dir, name, id) => {
      if (before.has(id)) return true;
      if (files >= limits.maxFiles || bytes >= limits.maxTotalBytes) {
        overflow = true;
        return false;
      }
      const content = readRegularAt(dir, name, limits.maxFileBytes);
      if (!Buffer.isBuffer(content)) {
        overflow ||= content !== null;
        return true;
      }
      files++;
      bytes += content.length;
      const report = parseJunitXml(content.toString('utf8'));
      if (report) reports.push(report);
      return true;
    });
    if (!complete || overflow) return null;
  } catch {
    return null;
  }
  return reports.length > 0 ? mergeReports('junit', reports) : null;
}

/**
 * Calls `visit` with each `TEST-*.xml` regular file in the report directories (its open
 * directory, name and identity) until it returns false. False when the walk was cut short
 * (a bound reached, or visit stopped it).
 */
function scanReportFiles(
  worktree: string,
  limits: Readonly<JunitLimits>,
  visit: (dir: number, name: Buffer, id: string) => boolean,
): boolean {
  let entries = 0;
  let stopped = false;
  /** Names in a directory, at most what is left of the entry budget; null when the budget ran out. */
  // Names as bytes: one that is not UTF-8 is opened as itself, not as a decode naming nothing.
  const list = (dir: number, keep: (name: string, isDir: boolean, isFile: boolean) => boolean): Buffer[] => {
    const names: Buffer[] = [];
    let handle: Dir | null = null;
    try {
      handle = openDirectoryStream(dir, { raw: true });
      for (let e = handle.readSync() as Dirent<Buffer> | null; e !== null; e = handle.readSync() as Dirent<Buffer> | null) {
        if (++entries > limits.maxEntries) {
          stopped = true;
          break;
        }
        if (keep(e.name.toString('latin1'), e.isDirectory(), e.isFile())) names.push(e.name);
      }
    } catch {
      // Unreadable or gone: nothing there.
    } finally {
      handle?.closeSync();
    }
    return names.sort(Buffer.compare);
  };
  const readReportsIn = (dir: number): void => {
    for (const name of list(dir, (n, _d, isFile) => isFile && /^TEST-.*\.xml$/.test(n))) {
      if (stopped) return;
      const id = fileIdentityAt(dir, name);
      if (id && !visit(dir, name, id)) stopped = true;
    }
  };
  const readModule = (dir: number): void => {
    for (const parts of REPORT_DIRS) {
      if (stopped) return;
      withDir(dir, parts, (reportDir) => {
        if (parts[0] !== 'build') return readReportsIn(reportDir);
        // Gradle: one directory per test task (test, integrationTest...).
        for (const task of list(reportDir, (_n, isDir) => isDir).slice(0, 50)) if (!stopped) withDir(reportDir, [task], readReportsIn);
      });
    }
  };
  withDir(null, [worktree], (root) => {
    readModule(root);
    for (const module of list(root, (n, isDir) => isDir && n !== '.git').slice(0, limits.maxModules))
      if (!stopped) withDir(root, [module], readModule);
  });
  return !stopped;
}

/** Runs `work` on the directory `parts` below `dir` (or the absolute path, when dir is null), opened without following links; nothing when it is not there. */
function withDir(dir: number | null, parts: readonly EntryName[], work: (fd: number) => void): void {
  const opened: number[] = [];
  try {
    let fd = dir;
    try {
      for (const part of parts) {
        fd = fd === null ? openSync(part, constants.O_RDONLY | constants.O_DIRECTORY) : openDirectoryAt(fd, part, constants.O_RDONLY);
        opened.push(fd);
      }
    } catch {
      // Not there, not a directory, a link, too long a name: no reports there.
      return;
    }
    if (fd !== null) work(fd);
  } finally {
    for (const fd of opened) closeSync(fd);
  }
}
