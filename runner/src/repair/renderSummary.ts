import type { FixReport } from '../protocol/fixReport.js';

/**
 * Text from an attempt (its error, file names) in a markdown table cell: no control characters
 * (summary.md is shown in terminals and CI logs), no markup, no table breaks.
 */
export function markdownText(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\x00-\x1f\x7f-\x9f]/g, ' ').replace(/[\\`*_[\]<>|#]/g, (c) => `\\${c}`);
}

/** Pure: summary.md (also appended to GITHUB_STEP_SUMMARY in CI). */
export function renderSummary(r: FixReport): string {
  const lines = [
    `## Forge: ${r.status === 'fixed' ? 'fixed' : 'not fixed'}`,
    '',
    `Run \`${r.run_id}\` on \`${r.base_commit.slice(0, 12)}\`: ${r.attempts.length} attempt(s) in ${r.provider} cells${r.image ? ` (\`${r.image}\`)` : ''}, model \`${r.model}\`, tests \`${r.test_cmd}\`.`,
    '',
    `Baseline: exit ${r.baseline.exit_code}, ${r.baseline.passed} passed, ${r.baseline.failed} failed.`,
    '',
    '| attempt | temperature | result | passed | failed | regressions | changed lines | turns |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...r.attempts.map((a) =>
      `| ${a.index} | ${a.temperature} | ${a.error ? `error: ${markdownText(a.error)}` : a.verdict?.green ? 'green' : 'red'} | ${a.verdict?.passed ?? '-'} | ${a.verdict?.failed ?? '-'} | ${a.verdict?.regressions.length ?? '-'} | ${a.diff_size} | ${a.turns} |`),
    '',
  ];
  if (r.winner) {
    lines.push(`Winner: ${r.winner.attempts.join(', ')} (agreement ${r.winner.agreement}, ${r.winner.diff_size} changed lines), re-verified on a fresh checkout; on branch \`${r.winner.branch}\`.`);
  } else if (r.best) {
    lines.push(`No attempt passed. Closest: ${r.best.attempts.join(', ')} (${r.best.verdict.failed} failing, ${r.best.diff_size} changed lines).`);
  } else {
    lines.push('No attempt produced a change.');
  }
  if (r.ground_truth && !r.ground_truth.applied) lines.push(`The winner's diff did not apply to a fresh checkout: conflicts in ${r.ground_truth.conflicts.map(markdownText).join(', ')}.`);
  for (const a of r.attempts) for (const w of a.review_warnings) lines.push(`Attempt ${a.index}: ${markdownText(w)}`);
  if (r.applied_to) lines.push(`Applied to ${r.applied_to}.`);
  lines.push('', `${r.cells} cells, ${(r.duration_ms / 1000).toFixed(1)} s.`, '');
  return lines.join('\n');
}
