/**
 * Pure: whether a run's repository belongs to this window: it is one of the open folders,
 * contains one (a folder opened below the repository's top), or lies inside one. No `vscode` import.
 */
export function repoInFolders(repo: string, folders: readonly string[]): boolean {
  const r = trimSlash(repo);
  return folders.some((f) => {
    const d = trimSlash(f);
    return d === r || d.startsWith(`${r}/`) || r.startsWith(`${d}/`);
  });
}

function trimSlash(p: string): string {
  return p.length > 1 ? p.replace(/\/+$/, '') : p;
}

/** Pure: the line above the Attempts view when runs of other repositories are left out (undefined: none). */
export function hiddenRunsMessage(hidden: number, showAll: boolean): string | undefined {
  if (showAll || hidden === 0) return undefined;
  return `${hidden} run${hidden === 1 ? '' : 's'} of repositories not open in this window ${hidden === 1 ? 'is' : 'are'} hidden ("Show Runs of All Repositories" in the view's menu).`;
}

/**
 * Pure: what the Attempts view shows about runs of other repositories. With none of this
 * window's runs to list, the view stays empty so its welcome (the Fix Issue in Cells button)
 * shows, and `hiddenOnly` picks the welcome that also says the others are hidden: a line above
 * an empty tree (TreeView.message) would replace the welcome and its button.
 */
export function attemptsScope(visible: number, hidden: number, showAll: boolean): { message: string | undefined; hiddenOnly: boolean } {
  if (visible === 0) return { message: undefined, hiddenOnly: !showAll && hidden > 0 };
  return { message: hiddenRunsMessage(hidden, showAll), hiddenOnly: false };
}
