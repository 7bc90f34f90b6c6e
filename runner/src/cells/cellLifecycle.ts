import type { CellSpec } from '../protocol/cellSpec.js';
import type { CellResult, ProviderName } from '../protocol/cellResult.js';
import type { IsolationReport } from '../protocol/isolation.js';
import { assembleCellResult, type CellEnding } from './assembleCellResult.js';
import { BoundedOutputCollector } from './boundedOutput.js';
import type { CellWorktree } from '../workspace/inspectWorktree.js';
import { collectAfterCell } from './cellWorktree.js';
import { claimWorktree, treeClaimOf } from '../hostguard/worktreeClaims.js';
import { join } from 'node:path';
import { egressDeniedWarning, NO_EGRESS_DENIED } from './egressDeniedLog.js';
import type { EgressProxy } from './egressProxy.js';
import type { CellRunOptions } from './provider.js';

/** Why the runner itself kills a cell (see killedBy.ts for how it is reported). */
export type KillReason = 'timeout' | 'output' | 'cancel';

/** One cell's permission to use a runner egress proxy: revoked by the lifecycle after the cell. */
export interface EgressGrant {
  readonly proxy: EgressProxy;
  readonly cellId: string;
  readonly token: string;
}

/**
 * Grants an allow_net cell its proxy credentials, with the spec's deny list (checked first);
 * null for a cell without network or without a proxy.
 */
export function grantEgress(
  proxy: EgressProxy | null,
  cellId: string,
  net: Pick<CellSpec, 'allow_net' | 'deny_net'>,
  /** The only address the cell's connections may come from (a swarm cell's own relay). */
  source: string | null = null,
): EgressGrant | null {
  if (!proxy || net.allow_net === false) return null;
  return { proxy, cellId, token: proxy.grant(cellId, { allow_net: net.allow_net, deny_net: net.deny_net }, source).token };
}

/** The proxy variables an allow_net cell gets; the credentials name the cell to the proxy. */
export function proxyEnv(grant: EgressGrant | null, host: string, port: number): Record<string, string> {
  if (!grant) return {};
  const url = `http://${grant.cellId}:${grant.token}@${host}:${port}`;
  return { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url };
}

export interface CellStartContext {
  /** Every chunk of the cell's merged stdout+stderr goes here (collected, streamed, capped). */
  output(chunk: Buffer): void;
  /** True once the cell's command has ended (or the run is over): polling loops stop. */
  finished(): boolean;
}

/** How a cell ended, as the provider saw it; the lifecycle adds why the runner killed it. */
export type CellExit = Omit<CellEnding, 'killReason'>;

/**
 * What a provider supplies to run one prepared cell. The lifecycle calls start, launch, wait,
 * settle in that order, kill when the runner ends the cell, and cleanup always, last.
 */
export interface CellDriver<H, W> {
  /** Everything up to the command's start (output wiring, exit watching); nothing of the command runs yet. */
  start(ctx: CellStartContext): Promise<H>;
  /** Starts the command; the cell's clock starts just before. */
  launch(handle: H): void | Promise<void>;
  /** Resolves once the command has exited. */
  wait(handle: H): Promise<W>;
  /** After the exit: leftovers and the output stream, then the exit facts. */
  settle(handle: H, waited: W, facts: { killReason: KillReason | null; isolation: IsolationReport }): Promise<CellExit>;
  /** Kills the whole cell. Runs for a kill reason, and in teardown when the command never ended. */
  kill(handle: H): void | Promise<void>;
  /** Teardown, on success and failure alike; handle is null when start failed. */
  cleanup(handle: H | null): void | Promise<void>;
}

export interface CellRunFacts {
  cellId: string;
  provider: ProviderName;
  spec: CellSpec;
  options: CellRunOptions;
  logPath: string;
  worktree: CellWorktree | null;
  isolation: IsolationReport;
  egress: EgressGrant | null;
  /** The runner's state directory: running cells' worktree claims live in it. */
  stateDir: string;
}

/**
 * The part of a cell's run every provider shares: output collection and its cap, the timeout,
 * cancellation, the egress grant's revocation, the diff and the result. One copy, so a fix
 * to timeout or cancel lands for every provider at once.
 */
export async function runCellLifecycle<H, W>(cell: CellRunFacts, driver: CellDriver<H, W>): Promise<CellResult> {
  const { spec, options, isolation, egress } = cell;
  const collector = new BoundedOutputCollector(cell.logPath, spec.limits.log_bytes);
  let handle: H | null = null;
  let finished = false;
  let killReason: KillReason | null = null;
  const terminate = (reason: KillReason) => {
    // Output can arrive while launch is still pending (docker's start call): the cap applies then too.
    if (killReason || finished || handle === null) return;
    killReason = reason;
    void driver.kill(handle);
  };
  const ctx: CellStartContext = {
    output(chunk) {
      collector.push(chunk);
      options.onOutput?.(chunk);
      if (spec.limits.output_bytes > 0 && collector.totalBytes > spec.limits.output_bytes) terminate('output');
    },
    finished: () => finished,
  };
  let timer: NodeJS.Timeout | undefined;
  const onAbort = () => terminate('cancel');
  let release: (() => void) | null = null;
  try {
    // From before the sandbox names the worktree until the diff is taken and the cell is gone.
    if (cell.worktree) release = claimWorktree(join(cell.stateDir, 'busy'), cell.cellId, treeClaimOf(cell.worktree));
    const h = (handle = await driver.start(ctx));
    const started = Date.now();
    await driver.launch(h);
    timer = setTimeout(() => terminate('timeout'), spec.timeout_s * 1000);
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener('abort', onAbort);

    const waited = await driver.wait(h);
    finished = true;
    const duration = Date.now() - started;
    const exit = await driver.settle(h, waited, { killReason, isolation });
    // A cell without a grant (no allow_net, or a provider that gives none) was refused nothing: the record is empty.
    const denied = egress ? egress.proxy.revoke(egress.cellId) : NO_EGRESS_DENIED;
    const warning = egressDeniedWarning(denied);
    if (warning) isolation.warnings.push(warning);
    const output = collector.finish();
    const after = await collectAfterCell(cell.worktree, spec.capture_diff);
    isolation.warnings.push(...after.warnings);
    return assembleCellResult(
      {
        cellId: cell.cellId,
        provider: cell.provider,
        image: spec.image,
        durationMs: duration,
        output,
        logPath: cell.logPath,
        diff: after.diff,
        neutralized: after.neutralized,
        withheld: after.withheld,
        isolation,
        labels: spec.labels,
        egressDenied: denied,
      },
      { ...exit, killReason },
    );
  } finally {
    if (timer) clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    collector.finish();
    if (!finished && handle !== null) await driver.kill(handle);
    finished = true;
    egress?.proxy.revoke(egress.cellId);
    // A tree the cell made hard to remove (a directory of mode 000...) must not replace the
    // cell's result with an error: the result (the same isolation report) says so instead.
    try {
      await driver.cleanup(handle);
    } catch (e) {
      isolation.warnings.push(`cell cleanup failed (${(e as Error).message.split('\n')[0]}); forge-runner gc removes what is left`);
    }
    release?.();
  }
}
