/** How a run ended, as fix/finished said it. No `vscode` import: the words are tested as data. */
export interface RunEnding {
  status: string;
  error: string | null;
}
