import type { z } from 'zod';
import type { CellSnapshot, RPC_FIX_METHODS } from './rpcFix.js';
import type { RPC_INSTANCE_METHODS } from './rpcInstances.js';

/**
 * Messages between the extension's details panels and the webview page (webview/src/main.ts),
 * derived from the runner's RPC result schemas so both sides read one type. Types only: the
 * webview bundle imports neither zod nor `vscode`.
 */
type AttemptDetailsResult = z.output<(typeof RPC_FIX_METHODS)['attempts/details']['result']>;

/** A cell of the attempt, with its bounded log (cells/log) once it has returned, and its purpose in words (the extension's). */
export type AttemptDetailsCell = CellSnapshot & { log?: string; purpose_words?: string };

/** attempts/details, its finished cells' logs filled in. */
export type AttemptDetailsData = Omit<AttemptDetailsResult, 'cells'> & { cells: AttemptDetailsCell[] };

/** instances/status and instances/history of one instance. */
export interface InstanceDetailsData {
  status: z.output<(typeof RPC_INSTANCE_METHODS)['instances/status']['result']>;
  history: z.output<(typeof RPC_INSTANCE_METHODS)['instances/history']['result']>;
}

/** Extension -> webview: what to render. */
export type DetailsMessage =
  { kind: 'attempt'; data: AttemptDetailsData; actions?: AttemptActionStates } | { kind: 'instance'; data: InstanceDetailsData };

/**
 * Webview -> extension: the page is ready for the data, or a button was pressed. Untrusted: the
 * extension checks the action and acts on the panel's own run and attempt (panels/attemptActions.ts).
 */
export type DetailsPageMessage = { type: 'ready' } | { type: 'action'; action: AttemptActionName };

/** The attempt details page's buttons (each runs the command of the same name for the page's attempt). */
export type AttemptActionName = 'viewDiff' | 'apply' | 'applyPart' | 'compareWithWinner';

/** Per button: shown or not, and why it is disabled (null: enabled). */
export type AttemptActionStates = Record<AttemptActionName, { show: boolean; why: string | null }>;
