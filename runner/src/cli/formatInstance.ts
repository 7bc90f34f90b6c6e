import type { Evidence } from '../protocol/instanceCell.js';
import type { InstanceStatus } from '../instances/instanceQueries.js';

export function formatInstanceStatus(s: InstanceStatus): string {
  const lines: string[] = [];
  const cell = s.cell;
  const inv = s.inventory;
  lines.push(
    `${s.instance_id}  (${inv?.provider ?? cell?.spec?.provider ?? '?'}, generation ${inv?.generation ?? cell?.generation ?? 0}, coordinator ${s.coordinator})`,
  );
  if (cell) lines.push(`  cell:     ${cell.state}  (desired ${cell.desired ?? '-'})`);
  if (s.observation)
    lines.push(`  runtime:  ${s.observation.runtime_state}${s.observation.runtime_id ? `  ${s.observation.runtime_id}` : ''}`);
  if (cell?.last_error) lines.push(`  error:    ${cell.last_error}`);
  if (s.celld)
    lines.push(`  celld:    ${s.celld.celld_version} (protocol ${s.celld.protocol_version}, adapter ${s.celld.adapter_version})`);
  const ops = cell?.operations.slice(-10) ?? [];
  if (ops.length > 0) {
    lines.push('  operations (newest last):');
    for (const o of ops) lines.push(`    ${o.operation_id}  ${o.action} g${o.generation}  ${o.status}${o.reason ? ` (${o.reason})` : ''}`);
  }
  if (s.open_operations.length > 0)
    lines.push(`  ledger open: ${s.open_operations.map((o) => `${o.operation_id} ${o.status}`).join(', ')}`);
  return lines.join('\n') + '\n';
}

export function formatEvidence(rows: readonly Evidence[]): string {
  return rows
    .map((e) => {
      const when = new Date(e.at).toISOString();
      const move = e.from_state || e.to_state ? ` ${e.from_state ?? '·'} -> ${e.to_state ?? '·'}` : '';
      return `${when}  ${e.source.padEnd(10)} g${e.generation}  ${(e.operation_id ?? '-').padEnd(18)} ${e.event}${move}${e.detail ? `  ${e.detail}` : ''}  [${e.actor}]\n`;
    })
    .join('');
}
