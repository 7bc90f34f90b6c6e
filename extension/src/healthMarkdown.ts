import type { HealthReport } from '../../runner/src/protocol/health.js';
import type { IsolationReport } from '../../runner/src/protocol/isolation.js';

/**
 * Pure: the health details behind the status bar item as Markdown for the preview: the
 * provider the settings use first, each one's isolation as a table (not one line of JSON).
 */
export function renderHealth(h: HealthReport, running: number, chosen: string): string {
  const lines = [
    '# Forge cell health',
    '',
    `Checked ${h.generated_at}. ${running} cell(s) running. Your provider (\`forge.provider\`): **${chosen}**.`,
    '',
  ];
  const ordered = [...h.providers].sort((a, b) => Number(b.provider === chosen) - Number(a.provider === chosen));
  for (const p of ordered) {
    const mark = p.available ? '✓ available' : '✗ unavailable';
    lines.push(`## ${p.provider}${p.provider === chosen ? ' (in use)' : ''}: ${mark}`, '', escapeText(p.reason), '');
    if (p.isolation) lines.push(...isolationTable(p.isolation), '');
    const details = Object.entries(p.details);
    if (details.length > 0) {
      lines.push('| Detail | Value |', '| --- | --- |', ...details.map(([k, v]) => `| ${cell(k)} | ${cell(String(v))} |`), '');
    }
  }
  return lines.join('\n');
}

function isolationTable(i: IsolationReport): string[] {
  const limits = (l: Record<string, number | null>) =>
    Object.entries(l)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => `${k.replace(/_/g, ' ')} ${v}`)
      .join(', ') || 'none';
  const cg = i.cgroup;
  const rows: [string, string][] = [
    ['Mechanism', `${i.mechanism}${i.degraded ? ' (degraded: weaker than designed)' : ''}`],
    ['Namespaces', i.namespaces.join(', ') || 'none'],
    ['Network', i.net],
    ['Filesystem', i.filesystem],
    ['Runs as', i.user],
    [
      'cgroup',
      cg.version
        ? `${cg.version}: ${limits({ memory_max_bytes: cg.memory_max_bytes, pids_max: cg.pids_max, cpu_quota_cores: cg.cpu_quota_cores })}`
        : `none${cg.reason ? ` (${cg.reason})` : ''}`,
    ],
    ['rlimits', limits(i.rlimits)],
    ['Masked paths', i.masked_paths.length > 0 ? i.masked_paths.join(', ') : 'none'],
  ];
  const out = ['| Isolation | |', '| --- | --- |', ...rows.map(([k, v]) => `| ${k} | ${cell(v)} |`)];
  if (i.warnings.length > 0) out.push('', '**Warnings**', '', ...i.warnings.map((w) => `- ${escapeText(w)}`));
  return out;
}

/** A table cell: pipes and newlines would break the row. */
function cell(text: string): string {
  return escapeText(text).replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** Text from the runner shown as text: no Markdown or HTML of its own. */
function escapeText(text: string): string {
  return text.replace(/[<>&]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;' })[c]!).replace(/([*_`[\]#])/g, '\\$1');
}
