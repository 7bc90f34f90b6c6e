import type { HealthReport } from '../../runner/src/protocol/health.js';

export interface StatusView {
  text: string;
  tooltip: string;
  degraded: boolean;
}

export interface StatusInput {
  health: HealthReport | null;
  /** Cells running now (any run of this runner). */
  running: number;
  /** forge.provider: where the user's cells run. */
  provider: string;
  /** forge.model as set (empty: none chosen yet). */
  model: string;
  runnerState: 'starting' | 'ready' | 'down';
}

/**
 * forge.model -> the few words the status bar shows: `openai:gpt-4o` -> `gpt-4o`, `vscode-lm:gpt-4o`
 * -> `gpt-4o (VS Code)`, `vscode-lm` -> `VS Code model`, `replay:FILE` -> `replay`, '' -> `no model`.
 */
export function modelLabel(setting: string): string {
  const s = setting.trim();
  if (s === '') return 'no model';
  if (s === 'vscode-lm') return 'VS Code model';
  if (s.startsWith('vscode-lm:')) return `${s.slice('vscode-lm:'.length)} (VS Code)`;
  if (s.startsWith('replay:')) return 'replay';
  const colon = s.indexOf(':');
  return colon > 0 && colon < s.length - 1 ? s.slice(colon + 1) : s;
}

/**
 * The status bar item: the chosen provider and model, cells running, and what is wrong, e.g.
 * `$(beaker) Forge: docker ✓ · gpt-4o · 2 cells`. Only the chosen provider's health counts: a
 * provider the user never chose is not their problem (Show Cell Health lists them all).
 * Degraded (warning background) when the chosen provider is unavailable or the runner is down.
 */
export function formatStatus(s: StatusInput): StatusView {
  // No model yet is what stops a first Fix: flagged where the eye goes, not only in the tooltip.
  const model = s.model.trim() ? modelLabel(s.model) : `$(warning) ${modelLabel(s.model)}`;
  const cells = s.running > 0 ? ` · ${s.running} ${s.running === 1 ? 'cell' : 'cells'}` : '';
  const modelLine = s.model.trim() ? `model: ${s.model.trim()}` : 'model: none chosen yet (set forge.model, or run "Forge: Get Started")';
  if (s.runnerState === 'down')
    return {
      text: `$(warning) Forge: runner not started · ${model}`,
      tooltip: ['The Forge runner is not running: click for details, or run "Forge: Restart Runner".', modelLine].join('\n'),
      degraded: true,
    };
  const chosen = s.health?.providers.find((p) => p.provider === s.provider);
  if (!s.health || !chosen)
    return {
      text: `$(beaker) Forge: ${s.provider} · ${model}${cells} · checking…`,
      tooltip: [`cells run on: ${s.provider} (checking it…)`, modelLine].join('\n'),
      degraded: false,
    };
  const reason = firstLine(chosen.reason);
  return {
    text: `${chosen.available ? '$(beaker)' : '$(warning)'} Forge: ${s.provider} ${chosen.available ? '✓' : '✗'} · ${model}${cells}`,
    tooltip: [
      `cells run on: ${s.provider}: ${chosen.available ? 'available' : 'unavailable'}${reason ? `: ${reason}` : ''}`,
      modelLine,
      `${s.running} ${s.running === 1 ? 'cell' : 'cells'} running`,
      "Click for every provider's health (Show Cell Health).",
    ].join('\n'),
    degraded: !chosen.available,
  };
}

function firstLine(text: string): string {
  return text.split('\n')[0]!.trim();
}
