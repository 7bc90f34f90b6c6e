import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import type { MessageConnection } from 'vscode-jsonrpc/node';
import type { RPC_FIX_METHODS, RpcFixMethod } from '../../../runner/src/protocol/rpcFix.js';
import type { RPC_INSTANCE_METHODS, RpcInstanceMethod } from '../../../runner/src/protocol/rpcInstances.js';
import { decideRestart } from './restartPolicy.js';

export type RunnerState = 'starting' | 'ready' | 'down';
type Methods = typeof RPC_FIX_METHODS & typeof RPC_INSTANCE_METHODS;
export type RunnerMethod = RpcFixMethod | RpcInstanceMethod;
export type RunnerParams<M extends RunnerMethod> = import('zod').input<Methods[M]['params']>;
export type RunnerResult<M extends RunnerMethod> = import('zod').output<Methods[M]['result']>;

export interface RunnerLaunch {
  nodePath: string;
  runnerScript: string;
  env: NodeJS.ProcessEnv;
  cwd?: string;
}

export interface RunnerEvents {
  state: (state: RunnerState, detail: string | null) => void;
  /** A runner died unexpectedly; `restarting` says whether another start is scheduled. */
  crash: (detail: string, restarting: boolean, delayMs: number) => void;
  notification: (method: string, params: unknown) => void;
  log: (line: string) => void;
}

// Loaded when the runner starts (a separate bundle): activation stays cheap.
let deps: Promise<typeof import('./lazyDeps.js')> | null = null;
const loadDeps = () => (deps ??= import('./lazyDeps.js'));

/**
 * The extension's side of `forge-runner serve --stdio`: spawns it, speaks JSON-RPC, parses
 * every answer with the protocol's zod schema, and restarts a runner that dies with backoff
 * (restartPolicy). No `vscode` import: the extension wires it to the UI.
 */
export class RunnerConnection {
  private child: ChildProcessWithoutNullStreams | null = null;
  private rpc: MessageConnection | null = null;
  private crashes: number[] = [];
  private stopping = false;
  private restartTimer: NodeJS.Timeout | null = null;
  private ready: Promise<MessageConnection> | null = null;
  private stderrTail = '';
  private readonly requestHandlers = new Map<string, (params: unknown) => Promise<unknown>>();
  state: RunnerState = 'down';

  constructor(
    private launch: () => Promise<RunnerLaunch>,
    private readonly events: RunnerEvents,
  ) {}

  /** Starts the runner (if not running) and resolves once it answered runner/hello. */
  start(): Promise<MessageConnection> {
    if (this.ready) return this.ready;
    this.stopping = false;
    this.ready = this.spawnAndGreet();
    this.ready.catch(() => undefined);
    return this.ready;
  }

  /** Handles requests the runner sends (model/reply). */
  onRequest(method: string, handler: (params: unknown) => Promise<unknown>): void {
    this.requestHandlers.set(method, handler);
    this.rpc?.onRequest(method, handler);
  }

  async request<M extends RunnerMethod>(method: M, params: RunnerParams<M>): Promise<RunnerResult<M>> {
    const rpc = await this.start();
    const [raw, { METHODS }] = await Promise.all([rpc.sendRequest(method, params), loadDeps()]);
    return (METHODS as Methods)[method].result.parse(raw) as RunnerResult<M>;
  }

  /** Stops the runner for good (deactivate) or before a restart with new settings. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    const child = this.child;
    this.rpc?.dispose();
    this.rpc = null;
    this.ready = null;
    this.child = null;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    this.setState('down', null);
  }

  /** A user-requested restart clears the crash history. */
  async restart(): Promise<void> {
    await this.stop();
    this.crashes = [];
    await this.start();
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  private async spawnAndGreet(): Promise<MessageConnection> {
    this.setState('starting', null);
    let launch: RunnerLaunch;
    try {
      launch = await this.launch();
    } catch (e) {
      this.ready = null;
      this.setState('down', (e as Error).message);
      throw e;
    }
    const { createMessageConnection, StreamMessageReader, StreamMessageWriter } = await loadDeps();
    const child = spawn(launch.nodePath, [launch.runnerScript, 'serve', '--stdio'], { env: launch.env, cwd: launch.cwd, stdio: 'pipe' });
    this.child = child;
    this.stderrTail = '';
    child.stderr.on('data', (d: Buffer) => {
      const text = d.toString();
      this.stderrTail = (this.stderrTail + text).slice(-2000);
      for (const line of text.split('\n')) if (line.trim()) this.events.log(line);
    });
    const rpc = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    rpc.onNotification((method: string, params: unknown) => this.events.notification(method, params));
    for (const [method, handler] of this.requestHandlers) rpc.onRequest(method, handler);
    rpc.onError(([e]: [Error, unknown, unknown]) => this.events.log(`protocol error: ${e.message}`));
    rpc.listen();
    this.rpc = rpc;
    const exited = new Promise<string>((resolve) => {
      child.once('error', (e) => resolve(`could not start ${launch.nodePath}: ${e.message}`));
      child.once('exit', (code, signal) => resolve(signal ? `killed by ${signal}` : `exited with code ${code}`));
    });
    void exited.then((how) => this.onExit(child, how));
    const hello = rpc.sendRequest('runner/hello', {});
    const first = await Promise.race([hello.then(() => null), exited]);
    if (first !== null) throw new Error(`the Forge runner ${first}: ${this.lastStderrLine()}`);
    this.setState('ready', null);
    return rpc;
  }

  private onExit(child: ChildProcessWithoutNullStreams, how: string): void {
    if (child !== this.child) return;
    this.child = null;
    this.rpc?.dispose();
    this.rpc = null;
    this.ready = null;
    if (this.stopping) return;
    const now = Date.now();
    this.crashes.push(now);
    const decision = decideRestart(this.crashes, now);
    const detail = `the Forge runner ${how}${this.lastStderrLine() ? `: ${this.lastStderrLine()}` : ''}`;
    this.setState('down', detail);
    this.events.crash(detail, decision.restart, decision.delayMs);
    if (decision.restart) {
      this.restartTimer = setTimeout(() => {
        this.restartTimer = null;
        if (!this.stopping) void this.start().catch(() => undefined);
      }, decision.delayMs);
    }
  }

  private lastStderrLine(): string {
    return (
      this.stderrTail
        .trim()
        .split('\n')
        .filter((l) => l.trim() !== '')
        .at(-1) ?? ''
    );
  }

  private setState(state: RunnerState, detail: string | null): void {
    this.state = state;
    this.events.state(state, detail);
  }
}
