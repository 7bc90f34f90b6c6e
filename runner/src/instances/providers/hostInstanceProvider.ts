import { execa } from 'execa';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runnerStateDir } from '../../cells/cellIdentity.js';
import { buildCellEnvironment } from '../../cells/cellEnvironment.js';
import type { Observation } from '../../protocol/instanceCell.js';
import { capabilityDescriptor } from '../capabilityMatrix.js';
import type { EffectOutcome, InstanceProvider, InstanceRef, ProbeOutcome } from './instanceProvider.js';
import { isTombstoned, journalLines, livePid, observeIncarnation, startDecision, tombstone } from './incarnationFiles.js';

/**
 * The supervisor every host instance runs under. It records its own start and stop in the
 * incarnation's journal (the ground truth of effects: a line is written only by a process
 * that really started or really received the stop), and forwards TERM to the command.
 */
const SUPERVISOR = `
set -u
dir=$1; shift
child=
on_term() { echo "stop $$ $(date +%s%N)" >> "$dir/journal"; [ -n "$child" ] && kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null; exit 0; }
# The trap is set before the pid is published: a stop sent the moment create returns is recorded.
trap on_term TERM INT
echo "start $$ $(date +%s%N)" >> "$dir/journal"
echo "$$" > "$dir/pid.tmp" && mv "$dir/pid.tmp" "$dir/pid"
"$@" &
child=$!
wait "$child"
code=$?
echo "exit $code $(date +%s%N)" >> "$dir/journal"
exit $code
`;

const DEFAULT_COMMAND = ['sleep', 'infinity'];

/** Supervised host processes: full host access, no isolation (said in the descriptor). */
export class HostInstanceProvider implements InstanceProvider {
  readonly name = 'host' as const;
  private readonly root: string;

  constructor(options: { stateDir?: string } = {}) {
    this.root = join(options.stateDir ?? runnerStateDir(), 'instances', 'host');
  }

  capabilities() {
    return capabilityDescriptor('host');
  }

  async available() {
    return existsSync('/bin/bash')
      ? { ok: true, reason: 'supervised host processes (bash supervisor)' }
      : { ok: false, reason: '/bin/bash not found' };
  }

  /** The incarnation's directory: one per (instance, generation). */
  incarnationDir(instanceId: string, generation: number): string {
    return join(this.root, instanceKey(instanceId), `g${generation}`);
  }

  async create(ref: InstanceRef): Promise<EffectOutcome> {
    const dir = this.incarnationDir(ref.instance_id, ref.generation);
    mkdirSync(join(dir, '..'), { recursive: true });
    try {
      mkdirSync(dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      // Made before (by this operation, before a crash or a lost response): never a second runtime.
      const obs = await this.inspect(ref.instance_id, ref.generation);
      if (obs.runtime_state === 'running' || obs.runtime_state === 'exited' || obs.runtime_state === 'removed')
        return { changed: false, observation: obs };
      if (await this.startedWithin(dir, 2000)) return { changed: false, observation: await this.inspect(ref.instance_id, ref.generation) };
      // The directory exists but no process ever started in it: this is the first effect.
    }
    writeFileSync(join(dir, 'spec.json'), JSON.stringify({ operation_id: ref.operation_id, spec: ref.spec }));
    await this.launch(dir, ref);
    return { changed: true, observation: await this.inspect(ref.instance_id, ref.generation) };
  }

  async start(ref: InstanceRef): Promise<EffectOutcome> {
    const obs = await this.inspect(ref.instance_id, ref.generation);
    if (startDecision(obs, ref.instance_id) === 'already_running') return { changed: false, observation: obs };
    await this.launch(this.incarnationDir(ref.instance_id, ref.generation), ref);
    return { changed: true, observation: await this.inspect(ref.instance_id, ref.generation) };
  }

  async stop(ref: InstanceRef): Promise<EffectOutcome> {
    const dir = this.incarnationDir(ref.instance_id, ref.generation);
    const pid = this.livePid(dir);
    if (pid === null) return { changed: false, observation: await this.inspect(ref.instance_id, ref.generation) };
    await terminateGroup(pid);
    return { changed: true, observation: await this.inspect(ref.instance_id, ref.generation) };
  }

  async destroy(ref: InstanceRef): Promise<EffectOutcome> {
    const dir = this.incarnationDir(ref.instance_id, ref.generation);
    if (isTombstoned(dir)) return { changed: false, observation: await this.inspect(ref.instance_id, ref.generation) };
    const pid = this.livePid(dir);
    if (pid !== null) await terminateGroup(pid);
    tombstone(dir, ref.operation_id);
    return { changed: true, observation: await this.inspect(ref.instance_id, ref.generation) };
  }

  async inspect(instanceId: string, generation: number): Promise<Observation> {
    const dir = this.incarnationDir(instanceId, generation);
    return observeIncarnation(dir, generation, this.livePid(dir), 'pid');
  }

  async probe(ref: InstanceRef): Promise<ProbeOutcome> {
    const dir = this.incarnationDir(ref.instance_id, ref.generation);
    if (this.livePid(dir) === null) return { ready: false, detail: 'process not running' };
    if (!ref.spec.readiness) return { ready: true, detail: 'process running' };
    const [file, ...args] = ref.spec.readiness;
    const r = await execa(file!, args, {
      cwd: dir,
      env: this.environment(dir, ref),
      extendEnv: false,
      reject: false,
      timeout: 10_000,
      stdin: 'ignore',
    });
    return { ready: r.exitCode === 0, detail: `readiness probe exited ${r.exitCode ?? r.signal ?? 'on timeout'}` };
  }

  /** Effect journal lines (start/stop/exit) of one incarnation: what really happened. */
  journal(instanceId: string, generation: number): string[] {
    return journalLines(this.incarnationDir(instanceId, generation));
  }

  private environment(dir: string, ref: InstanceRef): Record<string, string> {
    const home = join(dir, 'home');
    mkdirSync(home, { recursive: true });
    return buildCellEnvironment(process.env, home, home, {
      ...ref.spec.env,
      FORGE_INSTANCE_ID: ref.instance_id,
      FORGE_INSTANCE_GENERATION: String(ref.generation),
    });
  }

  private async launch(dir: string, ref: InstanceRef): Promise<void> {
    rmSync(join(dir, 'pid'), { force: true });
    const log = openSync(join(dir, 'output.log'), 'a');
    try {
      const command = ref.spec.command ?? DEFAULT_COMMAND;
      const child = spawn('/bin/bash', ['-c', SUPERVISOR, 'forge-instance', dir, ...command], {
        cwd: dir,
        env: this.environment(dir, ref),
        detached: true,
        stdio: ['ignore', log, log],
      });
      child.unref();
      const pid = child.pid;
      if (pid === undefined) throw new Error('could not start the instance supervisor');
    } finally {
      closeSync(log);
    }
    if (!(await this.startedWithin(dir, 5000)))
      throw new Error(`instance ${ref.instance_id} did not start within 5 s (see ${join(dir, 'output.log')})`);
  }

  private async startedWithin(dir: string, ms: number): Promise<boolean> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      if (existsSync(join(dir, 'pid'))) return true;
      await new Promise((r) => setTimeout(r, 10));
    }
    return existsSync(join(dir, 'pid'));
  }

  /** The supervisor's pid if it is alive and really ours (its command line names our dir). */
  private livePid(dir: string): number | null {
    return livePid(join(dir, 'pid'), dir);
  }
}

export function instanceKey(instanceId: string): string {
  const safe = instanceId.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 40);
  return `${safe}-${createHash('sha256').update(instanceId).digest('hex').slice(0, 10)}`;
}

async function terminateGroup(pid: number): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      /* already gone */
    }
  };
  signal('SIGTERM');
  const until = Date.now() + 10_000;
  while (Date.now() < until && alive(pid)) await new Promise((r) => setTimeout(r, 20));
  if (alive(pid)) signal('SIGKILL');
  while (alive(pid)) await new Promise((r) => setTimeout(r, 10));
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
