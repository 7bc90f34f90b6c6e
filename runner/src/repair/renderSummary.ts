import type { FixReport } from '../protocol/fixReport.js';
import { runDeniedEgressLine } from './verdicts/deniedEgress.js';
import type { Usage } from '../protocol/usage.js';
import { budgetWord, formatCost, formatDuration, usageLine, usageTokens } from '../protocol/usageWords.js';

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
  if (r.status === 'broken_environment' && r.environment) {
    return [
      '## Forge: the tests could not run',
      '',
      `Run \`${r.run_id}\` on \`${r.base_commit.slice(0, 12)}\` in ${r.provider} cells, tests \`${r.test_cmd}\`: no attempt was judged.`,
      '',
      `Cause (${r.environment.cause}): ${markdownText(r.environment.detail)}.`,
      '',
      `Fix: ${markdownText(r.environment.fix)}.`,
      '',
    ].join('\n');
  }
  const lines = [
    `## Forge: ${r.status === 'fixed' ? 'fixed' : 'not fixed'}`,
    '',
    ...(r.ending ? [`${markdownText(r.ending.charAt(0).toUpperCase() + r.ending.slice(1))}.`, ''] : []),
    `Run \`${r.run_id}\` on \`${r.base_commit.slice(0, 12)}\`: ${r.attempts.length} attempt(s) in ${r.provider} cells${r.image ? ` (\`${r.image}\`)` : ''}, model \`${r.model}\`, tests \`${r.test_cmd}\`.`,
    '',
    `Baseline: exit ${r.baseline.exit_code}, ${r.baseline.passed} passed, ${r.baseline.failed} failed.`,
    '',
    ...(r.issue_tests && r.issue_tests.rule !== 'whole suite (--strict)'
      ? [`Issue tests (${r.issue_tests.rule}): ${r.issue_tests.tests.map(markdownText).join(', ')}.`, '']
      : []),
    '| attempt | temperature | result | passed | failed | regressions | changed lines | turns | time | tokens |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...r.attempts.map(
      (a) =>
        `| ${a.index} | ${a.temperature} | ${a.status === 'budget' ? `${budgetWord(a.stop)}, tests ` : ''}${a.error ? `error: ${markdownText(a.error)}` : a.verdict?.could_not_run ? `could not run: ${markdownText(a.verdict.could_not_run)}` : a.verdict?.green ? 'green' : 'red'}${a.verdict?.reused_from ? ` (verdict reused from ${markdownText(a.verdict.reused_from)})` : ''}${a.verdict?.targeted ? ` (targeted: the baseline's ${a.verdict.targeted.tests.length} failing test(s) all failed again in ${a.verdict.targeted.seconds} s; the rest of the suite not run)` : ''} | ${a.verdict?.passed ?? '-'} | ${a.verdict?.failed ?? '-'} | ${regressionsCell(a.verdict)} | ${a.diff_size} | ${a.turns} | ${timeCell(a.usage)} | ${a.usage ? markdownText(`${usageTokens(a.usage)}${a.usage.cost !== null ? `, ${formatCost(a.usage.cost)}` : ''}`) : '-'} |`,
    ),
    '',
  ];
  if (r.winner) {
    lines.push(
      `Winner: ${r.winner.attempts.join(', ')} (agreement ${r.winner.agreement}, ${r.winner.diff_size} changed lines), re-verified on a fresh checkout; on branch \`${r.winner.branch}\`.`,
    );
  } else if (r.best) {
    lines.push(
      `No attempt passed. Closest: ${r.best.attempts.join(', ')} (${r.best.verdict.failed} failing, ${r.best.diff_size} changed lines).`,
    );
  } else {
    lines.push('No attempt produced a change.');
  }
  if (r.ground_truth && !r.ground_truth.applied)
    lines.push(
      `The winner's diff did not apply to a fresh checkout: conflicts in ${r.ground_truth.conflicts.map(markdownText).join(', ')}.`,
    );
  const before = r.winner?.verdict.failing_before ?? r.best?.verdict.failing_before ?? [];
  if (before.length > 0) lines.push(`Failing before and after (not caused by this change): ${before.map(markdownText).join(', ')}.`);
  for (const a of r.attempts)
    if (a.verdict && !a.verdict.regressions_known)
      lines.push(
        `Attempt ${a.index}: regressions not known in full: ${markdownText(a.verdict.regressions_unknown ?? 'no reason recorded')}.`,
      );
  for (const a of r.attempts) for (const w of a.review_warnings) lines.push(`Attempt ${a.index}: ${markdownText(w)}`);
  const hooks = new Set(
    [r.baseline, ...r.attempts.map((a) => a.verdict), r.winner?.verdict]
      .flatMap((v) => v?.hook_failures ?? [])
      .map((h) => `${h.hook} (${h.command})`),
  );
  const denied = runDeniedEgressLine([
    { who: 'baseline', denied: r.baseline.egress_denied },
    ...r.attempts.map((a) => ({ who: `attempt ${a.index}`, denied: a.verdict?.egress_denied ?? [] })),
    ...(r.ground_truth?.verdict ? [{ who: 'ground truth', denied: r.ground_truth.verdict.egress_denied }] : []),
  ]);
  if (denied) lines.push(`${markdownText(denied.charAt(0).toUpperCase() + denied.slice(1))}.`);
  for (const h of hooks)
    lines.push(
      `npm hook ${markdownText(h)} failed for want of the network after the tests passed: said here, not counted against the tests (cells have no network; --allow-net HOST lets it through).`,
    );
  if (r.applied_to) lines.push(`Applied to ${r.applied_to}.`);
  lines.push('', `${r.cells} cells, ${(r.duration_ms / 1000).toFixed(1)} s.`, '');
  if (r.usage) lines.push(`Run: ${markdownText(usageLine(r.usage))}.`, '');
  return lines.join('\n');
}

/** An attempt's wall time and, in brackets, its cells' time. */
function timeCell(u: Usage | undefined): string {
  if (!u) return '-';
  return `${u.wall_ms === null ? '-' : formatDuration(u.wall_ms)} (cells ${formatDuration(u.cell_ms)})`;
}

/** The regressions an attempt caused, by name (the first three); why below when not known in full. */
function regressionsCell(v: FixReport['baseline'] | null): string {
  if (!v) return '-';
  const named = v.regressions
    .slice(0, 3)
    .map((n) => `${markdownText(n)}${v.new_failing.includes(n) ? ' (new test)' : ''}`)
    .join(', ');
  const more = v.regressions.length > 3 ? ', ...' : '';
  if (!v.regressions_known)
    return v.regressions.length > 0 ? `at least ${v.regressions.length}: ${named}${more} (see below)` : 'not known (see below)';
  if (v.regressions.length === 0) return '0';
  return `${v.regressions.length}: ${named}${more}`;
}
