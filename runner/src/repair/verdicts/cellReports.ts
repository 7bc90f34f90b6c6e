import { closeSync, constants, openSync } from 'node:fs';
import { fileIdentityAt, openDirectoryAt, readRegularAt } from '../../hostguard/beneath.js';
import { CELL_REPORTS_DIR } from '../../workspace/baseIgnoreRules.js';
import { parsePytestJunitXml } from './junitXml.js';
import type { TestReport } from './testReport.js';
import { shellQuote } from '../../protocol/shellQuote.js';

/*
 * Test runners write the reports the runner asks for through the environment into
 * CELL_REPORTS_DIR at the top of the cell's own worktree (every provider mounts it at the
 * repository's path, and nothing else of the cell outlives it); it is kept out of every
 * captured diff, and read back here without following links, with bounds.
 */

/** The one report asked for so far: pytest's JUnit XML (see reportRequestEnv). */
const PYTEST_REPORT = 'pytest.xml';

/** A report larger than this is not read (the console is then the source). */
const MAX_REPORT_BYTES = 16 * 1024 * 1024;

/**
 * What test runners accept from the environment to write a report of every test, without
 * changing the user's command. pytest: `--junitxml` through PYTEST_ADDOPTS (a `--junitxml` of
 * the user's own comes later on the command line and wins; then there is no file and the
 * console is read), the xunit1 family for each testcase's file, from which the console's node
 * ids are rebuilt. Other runners take no report from the environment, or only in a way that
 * breaks a user's own flags (docs/cli.md "Per-test verdicts").
 */
export function reportRequestEnv(repoPathInCell: string): Record<string, string> {
  return {
    PYTEST_ADDOPTS: `-rA --junitxml=${shellQuote(`${repoPathInCell}/${CELL_REPORTS_DIR}/${PYTEST_REPORT}`)} -o junit_family=xunit1`,
  };
}

/** (device, inode, ctime) of each report before a test cell: only one the cell then wrote counts. */
export type CellReportSnapshot = ReadonlyMap<string, string | null>;

export function snapshotCellReports(worktree: string): CellReportSnapshot {
  return new Map([[PYTEST_REPORT, identity(worktree, PYTEST_REPORT)]]);
}

/**
 * The report the test cell's runner wrote on request, or null: none, not written by this
 * cell (same identity as before it), unreadable, over its bound, or not a pytest report.
 * The worktree is the cell's to fill: opened one component at a time without following
 * links, regular files only, and nothing here throws.
 */
export function readCellReport(worktree: string, before: CellReportSnapshot): TestReport | null {
  const id = identity(worktree, PYTEST_REPORT);
  if (id === null || before.get(PYTEST_REPORT) === id) return null;
  return withReportsDir(worktree, (dir) => {
    const content = readRegularAt(dir, PYTEST_REPORT, MAX_REPORT_BYTES);
    return Buffer.isBuffer(content) ? parsePytestJunitXml(content.toString('utf8')) : null;
  });
}

function withReportsDir<T>(worktree: string, work: (fd: number) => T | null): T | null {
  let top: number | null = null;
  let dir: number | null = null;
  try {
    top = openSync(worktree, constants.O_RDONLY | constants.O_DIRECTORY);
    dir = openDirectoryAt(top, CELL_REPORTS_DIR);
    return work(dir);
  } catch {
    return null;
  } finally {
    if (dir !== null) closeSync(dir);
    if (top !== null) closeSync(top);
  }
}

/** "dev:ino:ctime" of a regular report file, without following a link or blocking on a FIFO; null otherwise. */
function identity(worktree: string, name: string): string | null {
  return withReportsDir(worktree, (dir) => fileIdentityAt(dir, name));
}
