import type { HealthReport } from '../../runner/src/protocol/health.js';

export interface StatusView {
  text: string;
  tooltip: string;
  degraded: boolean;
}

/**
 * The status bar item: cells running and each provider's health, e.g.
 * `$(vm) 2 cells · host ✓ docker ✓ qemu ✗`. Degraded (warning background) when a provider
 * the user chose is unavailable, or the runner is down.
 */
export function formatStatus(
  health: HealthReport | null,
  running: number,
  chosen: string,
  runnerState: 'starting' | 'ready' | 'down',
): StatusView {
  const cells = `${running} ${running === 1 ? 'cell' : 'cells'}`;
  if (runnerState === 'down')
    return { text: '$(vm) Forge runner down', tooltip: 'The Forge runner is not running. Click for details.', degraded: true };
  if (!health) return { text: `$(vm) ${cells} · checking…`, tooltip: 'Checking cell providers…', degraded: false };
  const marks = health.providers.map((p) => `${p.provider} ${p.available ? '✓' : '✗'}`).join(' ');
  const lines = health.providers.map((p) => `${p.provider}: ${p.available ? 'available' : 'unavailable'}: ${p.reason}`);
  const chosenHealth = health.providers.find((p) => p.provider === chosen);
  const degraded = chosenHealth ? !chosenHealth.available : true;
  return {
    text: `$(vm) ${cells} · ${marks}`,
    tooltip: [`Forge cells: ${cells} running; provider setting: ${chosen}`, ...lines, 'Click for details.'].join('\n'),
    degraded,
  };
}
