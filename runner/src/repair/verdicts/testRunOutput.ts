import type { CellResult } from '../../protocol/cellResult.js';
import { readRegularPath } from '../../hostguard/readRegularFile.js';

/**
 * Variables that make test runners name their tests in their ordinary console output without
 * changing what the user's command runs: pytest lists every outcome in its short summary
 * (`-rA`: passing tests too, and pytest 9 subtests), go test names each test (`-v`). Other
 * runners name their tests by default, or are read from their totals. Inert for everything else.
 */
export const TEST_REPORTING_ENV: Readonly<Record<string, string>> = {
  // With a file report asked for too in cells (cellReports.reportRequestEnv).
  PYTEST_ADDOPTS: '-rA',
  GOFLAGS: '-v',
};

/**
 * For a cell without the network: npm (and npx, pnpm, which read npm's config) retry a failed
 * request with back-off for about 70 s before giving up, which a hook that asks the registry
 * (`npx npm audit` in a posttest) then spends on every test run. There is no network to wait for.
 */
export const OFFLINE_ENV: Readonly<Record<string, string>> = {
  npm_config_fetch_retries: '0',
};

/** The largest log read back for parsing (the cell's log is capped at this by default). */
const MAX_PARSED_LOG = 8 * 1024 * 1024;

/**
 * A test cell's output for the parsers: its full (capped) log, where a long test run's
 * summary and every named outcome are, not just the head and tail shown to people.
 */
export function testOutputOf(result: Pick<CellResult, 'output' | 'output_bytes' | 'output_truncated' | 'full_output_path'>): {
  text: string;
  /** Every byte the command printed is in the text (nothing capped, nothing cut). */
  whole: boolean;
} {
  const log = readRegularPath(result.full_output_path, MAX_PARSED_LOG);
  if (Buffer.isBuffer(log)) return { text: log.toString('utf8'), whole: log.length >= result.output_bytes };
  return { text: result.output, whole: !result.output_truncated };
}
