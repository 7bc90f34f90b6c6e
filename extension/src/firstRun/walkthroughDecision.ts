/** The walkthrough's id in package.json (contributes.walkthroughs). No `vscode` import. */
export const WALKTHROUGH_ID = 'forge.getStarted';

/** globalState key: the walkthrough was opened once on this machine (a new install starts without it). */
export const WALKTHROUGH_SHOWN_KEY = 'forge.walkthroughShown';

/**
 * Pure: whether this activation opens the walkthrough: only the first one, ever, and not when
 * the user turned walkthroughs on install off (VS Code's own
 * `workbench.welcomePage.walkthroughs.openOnInstall`, true unless the user set it).
 */
export function firstRunDecision(shown: boolean | undefined, openOnInstall = true): { open: boolean } {
  return { open: shown !== true && openOnInstall };
}
