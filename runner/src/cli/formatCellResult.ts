import type { CellResult } from '../protocol/cellResult.js';
import type { HealthReport } from '../protocol/health.js';

const MiB = 1024 * 1024;

/**
 * Pure: text from a cell made safe for a terminal: control characters other than newline and
 * tab are shown as \xNN, so escape sequences the command printed (or put in file names)
 * cannot retitle, recolour or rewrite the user's terminal.
 */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Pure: the line that fails a cell whose worktree `dir` was withheld: why, and the way out. */
export function withheldLine(withheld: string, dir: string): string {
  return `${withheld}; remove ${dir} (rm -rf), or clear what it holds (find ${dir} -perm /6000 -o -type p -o -type s -o -type b -o -type c) before you give it back with chown and chmod`;
}

/** Pure: the human summary of a cell (the JSON form is the CellResult itself). */
export function formatCellResult(r: CellResult): string {
  const lines: string[] = [];
  const status = r.killed_by ? `killed by ${r.killed_by}` : `exit ${r.exit_code}`;
  lines.push(`cell ${r.cell_id}  ${r.provider} (${r.isolation.mechanism})  ${status}  ${r.duration_ms} ms`);
  if (r.killed_by && r.killed_by !== 'signal') lines.push(`  exit code ${r.exit_code}${r.signal ? ` (${r.signal})` : ''}`);
  if (r.limits_hit.length > 0) lines.push(`  limits hit: ${r.limits_hit.join(', ')}`);
  lines.push(`--- output (${r.output_bytes} bytes${r.output_truncated ? ', head and tail shown' : ''}) ---`);
  if (r.output.length > 0) lines.push(printable(r.output.endsWith('\n') ? r.output.slice(0, -1) : r.output));
  if (r.diff) {
    const binary = r.diff.files.filter((f) => f.binary).length;
    const listed =
      r.diff.files_total > r.diff.files.length
        ? `${r.diff.files_total} file(s), first ${r.diff.files.length} listed`
        : `${r.diff.files.length} file(s)`;
    lines.push(`--- diff: ${listed}${binary ? `, ${binary} binary` : ''}${r.diff.truncated ? ', patch truncated' : ''} ---`);
    for (const f of r.diff.files) lines.push(`  ${f.status.padEnd(12)} ${printable(f.path)}${f.binary ? ' (binary)' : ''}`);
    for (const o of r.diff.omitted) lines.push(`  omitted      ${printable(o.path)}: ${o.reason}`);
    if (r.diff.incomplete) lines.push(`  INCOMPLETE   ${r.diff.incomplete}`);
  }
  for (const n of r.neutralized) lines.push(`neutralized: ${printable(n.path)} (${n.found}: ${n.action})`);
  lines.push(`full log: ${r.full_output_path}`);
  lines.push(`isolation: ${describeIsolation(r.isolation)}`);
  lines.push(`runs as: ${r.isolation.user}`);
  return lines.join('\n') + '\n';
}

export function describeIsolation(iso: CellResult['isolation']): string {
  const parts = [iso.mechanism, `net ${iso.net}`];
  if (iso.namespaces.length > 0) parts.push(`namespaces ${iso.namespaces.join(',')}`);
  const cg = iso.cgroup;
  if (cg.version) {
    const limits = [
      cg.memory_max_bytes !== null ? `memory ${Math.round(cg.memory_max_bytes / MiB)} MiB` : null,
      cg.pids_max !== null ? `pids ${cg.pids_max}` : null,
      cg.cpu_quota_cores !== null ? `cpus ${cg.cpu_quota_cores}` : null,
    ].filter(Boolean);
    parts.push(`cgroup ${cg.version}${limits.length ? ' ' + limits.join(' ') : ''}`);
  } else {
    parts.push('no cgroup');
  }
  const rl = iso.rlimits;
  const rlParts = Object.entries(rl)
    .filter(([, v]) => v !== null)
    .map(([k]) => k.replace(/_.*$/, ''));
  if (rlParts.length) parts.push(`rlimits ${rlParts.join(',')}`);
  if (iso.degraded) parts.push('DEGRADED');
  return parts.join('; ');
}

export function formatHealth(report: HealthReport): string {
  const lines: string[] = [];
  for (const p of report.providers) {
    const mark = !p.available ? 'unavailable' : p.isolation?.degraded ? 'DEGRADED' : 'ok';
    lines.push(`${p.provider.padEnd(7)} ${mark}: ${p.reason}`);
    if (p.isolation) {
      lines.push(`        enforces: ${describeIsolation(p.isolation)}`);
      if (p.isolation.masked_paths.length) lines.push(`        hidden: ${p.isolation.masked_paths.join(' ')}`);
      for (const w of p.isolation.warnings) lines.push(`        WARNING: ${w}`);
    }
    for (const [k, v] of Object.entries(p.details)) lines.push(`        ${k}: ${v}`);
  }
  lines.push(`default provider: ${report.default_provider ?? 'none'}`);
  return lines.join('\n') + '\n';
}
