import type { FixReport } from '../protocol/fixReport.js';
import { formatCost, formatDuration, shortTokens, usageLine, usageTokens } from '../protocol/usageWords.js';

/**
 * Pure: the table `forge-runner fix` prints when a run ends: each attempt's result, time,
 * turns and tokens (and cost with --price), then the run's totals. Plain text for a terminal.
 */
export function formatUsageTable(report: FixReport): string {
  const rows = report.attempts.map((a) => {
    const result = a.error
      ? 'error'
      : a.status === 'budget'
        ? `budget (${a.stop === 'run_tokens' ? 'run' : 'attempt'})`
        : a.verdict?.could_not_run
          ? 'could not run'
          : a.verdict?.green
            ? 'green'
            : 'red';
    const u = a.usage;
    return [
      String(a.index),
      result,
      u?.wall_ms != null ? formatDuration(u.wall_ms) : '-',
      u ? formatDuration(u.cell_ms) : '-',
      String(a.turns),
      u ? usageTokens(u) : '-',
      u ? (formatCost(u.cost)?.replace('cost ', '') ?? '-') : '-',
    ];
  });
  const head = ['attempt', 'result', 'time', 'cells', 'turns', 'tokens', 'cost'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  const out = [line(head), ...rows.map(line)];
  if (report.usage) out.push(`run: ${usageLine(report.usage)} (${shortTokens(report.usage)})`);
  return out.join('\n') + '\n';
}
