import { execa } from 'execa';

/**
 * Runs git on the host against a tree a cell has written to. The -c overrides make sure
 * nothing in that tree can make git execute a command (fsmonitor, hooks, external diff,
 * textconv, submodule recursion), whatever its configuration says.
 */
export const SAFE_GIT_CONFIG = [
  '-c', 'core.fsmonitor=false',
  '-c', 'core.hooksPath=/dev/null',
  '-c', 'diff.external=',
  '-c', 'diff.ignoreSubmodules=all',
  '-c', 'submodule.recurse=false',
  '-c', 'core.quotePath=false',
  '-c', 'color.ui=false',
];

export interface HostGitOptions {
  cwd: string;
  env?: Record<string, string>;
  input?: string;
  /** Stop reading (and kill git) after this many bytes of stdout. */
  maxBytes?: number;
}

export interface HostGitOutput {
  stdout: string;
  truncated: boolean;
  bytes: number;
}

export async function hostGit(args: string[], opts: HostGitOptions): Promise<HostGitOutput> {
  const maxBytes = opts.maxBytes ?? 16 * 1024 * 1024;
  const child = execa('git', [...SAFE_GIT_CONFIG, ...args], {
    cwd: opts.cwd,
    env: { GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0', ...opts.env },
    extendEnv: true,
    buffer: false,
    reject: false,
    stdin: opts.input === undefined ? 'ignore' : 'pipe',
    stderr: 'pipe',
    stripFinalNewline: false,
  });
  if (opts.input !== undefined) child.stdin?.end(opts.input);
  const chunks: Buffer[] = [];
  let kept = 0;
  let total = 0;
  let truncated = false;
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    if (stderr.length < 4096) stderr += d.toString();
  });
  for await (const chunk of child.stdout!) {
    const buf = chunk as Buffer;
    total += buf.length;
    if (kept < maxBytes) {
      const take = Math.min(buf.length, maxBytes - kept);
      chunks.push(buf.subarray(0, take));
      kept += take;
    }
    if (total > maxBytes) {
      truncated = true;
      child.kill('SIGKILL');
      break;
    }
  }
  const result = await child;
  if (!truncated && result.exitCode !== 0) {
    throw new Error(`git ${args.join(' ')} failed (${result.exitCode ?? result.signal}): ${stderr.trim().split('\n')[0] ?? ''}`);
  }
  return { stdout: Buffer.concat(chunks).toString('utf8'), truncated, bytes: total };
}
