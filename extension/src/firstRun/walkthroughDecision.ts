/** The walkthrough's id in package.json (contributes.walkthroughs). No `vscode` import. */
export const WALKTHROUGH_ID = 'forge.getStarted';

/** globalState key: the walkthrough was opened once on this machine (a new install starts without it). */
export const WALKTHROUGH_SHOWN_KEY = 'forge.walkthroughShown';

/** Pure: whether this activation opens the walkthrough (only the first one, ever). */
export function firstRunDecision(shown: boolean | undefined): { open: boolean } {
  return { open: shown !== true };
}
