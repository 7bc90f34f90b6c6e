/**
 * The only variables a cell gets from the runner: nothing else of the runner's environment
 * (API keys, tokens, SSH agents, proxies) reaches a cell.
 */
export const INHERITED_VARIABLES = ['PATH', 'LANG', 'TERM'] as const;

const FALLBACK_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export function buildCellEnvironment(
  runnerEnv: NodeJS.ProcessEnv,
  cellHome: string,
  cellTmp: string,
  additions: Record<string, string>,
): Record<string, string> {
  return {
    PATH: runnerEnv.PATH || FALLBACK_PATH,
    LANG: runnerEnv.LANG || 'C.UTF-8',
    TERM: runnerEnv.TERM && runnerEnv.TERM !== 'dumb' ? runnerEnv.TERM : 'dumb',
    CI: 'true',
    PYTHONDONTWRITEBYTECODE: '1',
    HOME: cellHome,
    TMPDIR: cellTmp,
    ...additions,
  };
}
