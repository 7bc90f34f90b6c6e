import * as vscode from 'vscode';
import { FIX_LIMITS } from '../../runner/src/protocol/fixLimits.js';
import type { ForgeSettings } from './settings.js';

/** The `forge.*` settings as they are now (read on every use: the user may change them at any time). */
export function readSettings(): ForgeSettings {
  const c = vscode.workspace.getConfiguration('forge');
  return {
    attempts: c.get<number>('attempts', FIX_LIMITS.attempts.default),
    provider: c.get<'host' | 'docker' | 'qemu' | 'swarm'>('provider', 'host'),
    image: c.get<string>('image', ''),
    testCommand: c.get<string>('testCommand', ''),
    model: c.get<string>('model', ''),
    maxTurns: c.get<number>('maxTurns', FIX_LIMITS.max_turns.default),
    cellTimeout: c.get<number>('cellTimeout', FIX_LIMITS.cell_timeout_s.default),
    strict: c.get<boolean>('strict', false),
    maxRunTokens: c.get<number>('maxRunTokens', 0),
    maxTokens: c.get<number>('maxTokens', 0),
  };
}

/**
 * forge.modelPrices from the user's own settings only: a workspace's .vscode/settings.json is
 * the repository's word, and prices are the user's (read when a run starts).
 */
export function readModelPrices(): unknown {
  return vscode.workspace.getConfiguration('forge').inspect?.<unknown>('modelPrices')?.globalValue;
}
