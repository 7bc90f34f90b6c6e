import { closeSync, constants, type Dirent, fstatSync, openSync, readdirSync } from 'node:fs';
import { readRegularPath } from '../../workspace/readRegularFile.js';
import { parseJunitXml } from './parsers.js';
import { mergeReports, type TestReport } from './testReport.js';

/**
 * Where build tools write JUnit XML without being asked: Maven's surefire and failsafe
 * (`target/*-reports`), Gradle (`build/test-results/<task>/`). Read from the repository root
 * and from its first-level modules (a multi-module build writes one per module).
 */
const REPORT_DIRS: readonly (readonly string[])[] = [['target', 'surefire-reports'], ['target', 'failsafe-reports'], ['build', 'test-results']];

/** Bounds on what is read back from a tree the tests (code the agent wrote) could fill. */
export interface JunitLimits {
  maxModules: number;
  maxFiles: number;
  maxFileBytes: number;
  maxTotalBytes: number;
}

export const JUNIT_LIMITS: Readonly<JunitLimits> = { maxModules: 200, maxFiles: 2_000, maxFileBytes: 8 * 1024 * 1024, maxTotalBytes: 64 * 1024 * 1024 };

export interface ReportWindow {
  /** When the test cell started and ended (ms): a report written outside it is stale or planted. */
  startedMs: number;
  endedMs: number;
}

/**
 * The JUnit XML reports the test cell's build tool wrote in the worktree, merged into one
 * report; null when there are none. Per-test outcomes from these name every test, passing
 * ones too, where the console (`mvn -q`) names only failures.
 *
 * The worktree is hostile: entries are opened one component at a time without following
 * links, only regular files are read, everything is bounded, and only files whose mtime lies
 * inside the cell's window count (an earlier cell's report, or one dated ahead, is ignored).
 */
export function readJunitReports(worktree: string, window: ReportWindow, limits: Readonly<JunitLimits> = JUNIT_LIMITS): TestReport | null {
  const reports: TestReport[] = [];
  let files = 0;
  let bytes = 0;
  const readReportsIn = (dir: number): void => {
    for (const name of entries(dir, (e) => e.isFile() && /^TEST-.*\.xml$/.test(e.name)).sort()) {
      if (files >= limits.maxFiles || bytes >= limits.maxTotalBytes) return;
      const path = `/proc/self/fd/${dir}/${name}`;
      if (!writtenInWindow(path, window)) continue;
      const content = readRegularPath(path, Math.min(limits.maxFileBytes, limits.maxTotalBytes - bytes));
      if (!Buffer.isBuffer(content)) continue;
      files++;
      bytes += content.length;
      const report = parseJunitXml(content.toString('utf8'));
      if (report) reports.push(report);
    }
  };
  const readModule = (dir: number): void => {
    for (const parts of REPORT_DIRS) {
      withDir(dir, parts, (reportDir) => {
        if (parts[0] !== 'build') return readReportsIn(reportDir);
        // Gradle: one directory per test task (test, integrationTest...).
        for (const task of entries(reportDir, (e) => e.isDirectory()).slice(0, 50)) withDir(reportDir, [task], readReportsIn);
      });
    }
  };
  withDir(null, [worktree], (root) => {
    readModule(root);
    for (const module of entries(root, (e) => e.isDirectory() && e.name !== '.git').slice(0, limits.maxModules)) withDir(root, [module], readModule);
  });
  return reports.length > 0 ? mergeReports('junit', reports) : null;
}

/** Runs `work` on the directory `parts` below `dir` (or the absolute path, when dir is null), opened without following links; nothing when it is not there. */
function withDir(dir: number | null, parts: readonly string[], work: (fd: number) => void): void {
  const opened: number[] = [];
  try {
    let fd = dir;
    for (const part of parts) {
      fd = openSync(fd === null ? part : `/proc/self/fd/${fd}/${part}`, constants.O_RDONLY | constants.O_DIRECTORY | (fd === null ? 0 : constants.O_NOFOLLOW));
      opened.push(fd);
    }
    if (fd !== null) work(fd);
  } catch (e) {
    if (!['ENOENT', 'ENOTDIR', 'ELOOP', 'EACCES'].includes((e as NodeJS.ErrnoException).code ?? '')) throw e;
  } finally {
    for (const fd of opened) closeSync(fd);
  }
}

function entries(dir: number, keep: (e: Dirent) => boolean): string[] {
  try {
    return readdirSync(`/proc/self/fd/${dir}`, { withFileTypes: true }).filter(keep).map((e) => e.name);
  } catch {
    return [];
  }
}

function writtenInWindow(path: string, window: ReportWindow): boolean {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return false;
  }
  try {
    const st = fstatSync(fd);
    // Filesystem timestamps may be coarser than the clock: a second of slack either side.
    return st.isFile() && st.mtimeMs >= window.startedMs - 1000 && st.mtimeMs <= window.endedMs + 1000;
  } finally {
    closeSync(fd);
  }
}
