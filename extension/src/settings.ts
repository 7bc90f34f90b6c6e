import { isAbsolute, resolve } from 'node:path';
import { FIX_LIMITS } from '../../runner/src/protocol/fixLimits.js';
import { type ModelPrice, priceFromSetting } from '../../runner/src/protocol/modelPriceLookup.js';

/** The forge.* settings as the extension reads them (VS Code's configuration, plain data). */
export interface ForgeSettings {
  attempts: number;
  provider: 'host' | 'docker' | 'qemu' | 'swarm';
  image: string;
  testCommand: string;
  model: string;
  maxTurns: number;
  /** Seconds one cell may run (the runner's cell_timeout_s). */
  cellTimeout: number;
  /** A fix must pass the whole suite, not only the issue's tests with nothing else broken (the runner's strict). */
  strict?: boolean;
  /** Model tokens for a whole run, shared by its attempts (the runner's max_run_tokens); 0: none. */
  maxRunTokens?: number;
  /** Model tokens for each attempt (the runner's max_tokens); 0: the runner's default. */
  maxTokens?: number;
  /** The user's prices by model (forge.modelPrices, user settings only): a cost estimate, never a shipped table. */
  modelPrices?: unknown;
}

/**
 * forge.model -> the runner's model spec. `vscode-lm` (optionally `vscode-lm:FAMILY`) is the
 * editor's language model, called from the extension host; the others run in the runner
 * (API keys from SecretStorage reach the runner process only). A relative replay file is
 * resolved against the workspace folder.
 */
export function runnerModelSpec(setting: string, workspaceDir: string): { spec: string; lmFamily: string | null } {
  const s = setting.trim();
  if (s === '') throw new Error('forge.model is empty: set it to replay:FILE, openai:MODEL, anthropic:MODEL or vscode-lm');
  if (s === 'vscode-lm' || s.startsWith('vscode-lm:')) return { spec: 'client:vscode-lm', lmFamily: s.slice('vscode-lm:'.length) || null };
  if (s.startsWith('replay:')) {
    const file = s.slice('replay:'.length);
    if (!file) throw new Error('forge.model replay: needs a file, e.g. replay:.forge/replay.json');
    return { spec: `replay:${isAbsolute(file) ? file : resolve(workspaceDir, file)}`, lmFamily: null };
  }
  if (s.startsWith('openai') || s.startsWith('anthropic')) return { spec: s, lmFamily: null };
  throw new Error(`forge.model "${s}" is not a model: use replay:FILE, openai:MODEL, anthropic:MODEL or vscode-lm`);
}

export function fixStartParams(settings: ForgeSettings, repo: string, issue: string, modelSpec: string) {
  return {
    repo,
    issue,
    model: modelSpec,
    attempts: clampWhole(settings.attempts, FIX_LIMITS.attempts),
    provider: settings.provider,
    ...(settings.image.trim() ? { image: settings.image.trim() } : {}),
    ...(settings.testCommand.trim() ? { test_cmd: settings.testCommand.trim() } : {}),
    max_turns: clampWhole(settings.maxTurns, FIX_LIMITS.max_turns),
    cell_timeout_s: clampWhole(settings.cellTimeout, FIX_LIMITS.cell_timeout_s),
    ...(settings.strict ? { strict: true } : {}),
    ...(settings.maxRunTokens && Number.isFinite(settings.maxRunTokens) && settings.maxRunTokens >= 1
      ? { max_run_tokens: Math.floor(settings.maxRunTokens) }
      : {}),
    ...(settings.maxTokens && Number.isFinite(settings.maxTokens) && settings.maxTokens >= 1
      ? { max_tokens: Math.floor(settings.maxTokens) }
      : {}),
    ...priceParam(settings.modelPrices, settings.model),
  };
}

/**
 * The price of the chosen model from forge.modelPrices (keyed by the forge.model value, or the
 * model's name after its provider): sent with the run so its report can estimate the cost. A
 * malformed setting sends no price (the cost is then not shown) rather than stopping the run.
 */
export function priceParam(prices: unknown, model: string): { price?: ModelPrice } {
  const price = priceFromSetting(prices, model.trim());
  return price ? { price } : {};
}

/** A setting out of the runner's bounds is brought within them (the runner would refuse it). */
function clampWhole(value: number, limits: { min: number; max: number; default: number }): number {
  return Number.isFinite(value) ? Math.max(limits.min, Math.min(limits.max, Math.floor(value))) : limits.default;
}

/** Secret names in SecretStorage and the environment variable each becomes in the runner process. */
export const API_KEY_SECRETS = [
  { secret: 'forge.apiKey.openai', env: 'OPENAI_API_KEY', label: 'OpenAI-compatible endpoint' },
  { secret: 'forge.apiKey.anthropic', env: 'ANTHROPIC_API_KEY', label: 'Anthropic' },
] as const;
