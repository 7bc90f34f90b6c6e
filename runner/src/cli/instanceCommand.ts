import { type Command, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { InputError } from '../protocol/inputError.js';
import { type CommandReply, INSTANCE_PROVIDERS, type InstanceCellState, LIFECYCLE_ACTIONS } from '../protocol/instanceCell.js';
import { instanceHistory, instanceStatus, listInstances } from '../instances/instanceQueries.js';
import type { InstanceCoordinator } from '../instances/instanceCoordinator.js';
import { openInstances } from '../instances/openInstances.js';
import { EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_PENDING, EXIT_REJECTED } from './exitCodes.js';
import { formatInstanceStatus, formatEvidence } from './formatInstance.js';

interface LifecycleFlags {
  instance: string;
  opId: string;
  generation: string;
  provider?: string;
  image?: string;
  spec?: string;
  wait: boolean;
  timeout: string;
  json?: boolean;
}

const EXIT_HELP =
  'Exit status: 0 accepted (--no-wait) or succeeded and settled, 4 rejected (the reason code is printed), ' +
  '5 failed (or never became ready), 6 still in progress when the wait ended (forge-runner instance reconcile ID resumes it), 2 bad input.';

export function registerInstanceCommands(program: Command): void {
  const instance = program
    .command('instance')
    .description(
      'Durable instances (long-lived containers and supervised host processes) managed through the operation ledger.\n' +
        'Every lifecycle command carries an operation id: repeating it returns the recorded outcome and never acts twice; ' +
        'reusing it for a different request is rejected (idempotency_mismatch); a generation older than the current one is rejected (stale_generation).\n' +
        'The InstanceCell coordinator runs embedded over the runner store unless FORGE_CELLD_ENABLED=1 (then FORGE_CELLD_URL and FORGE_CELLD_SECRET name the InstanceCell worker).',
    );

  for (const action of LIFECYCLE_ACTIONS) {
    const cmd = instance
      .command(action)
      .description(`${ACTION_HELP[action]}\n${EXIT_HELP}`)
      .requiredOption('--instance <id>', 'logical instance id (immutable, up to 255 characters)')
      .requiredOption('--op-id <id>', 'operation id: reuse it to retry this exact command, never for another one')
      .requiredOption(
        '--generation <n>',
        action === 'provision'
          ? 'the new incarnation: 1 for a new instance, current + 1 after destroy'
          : 'the current incarnation (see instance status)',
      );
    if (action === 'provision') {
      cmd
        .addOption(new Option('--provider <name>', 'runtime').choices([...INSTANCE_PROVIDERS]))
        .option('--image <image>', 'image for docker instances')
        .option(
          '--spec <file>',
          'instance spec JSON (provider, image, command, readiness, enroll_timeout_s, env, memory_mib, allow_net); flags override it',
        );
    }
    cmd
      .option('--no-wait', 'return once the cell accepted the command')
      .option('--timeout <seconds>', 'how long to wait for the instance to settle', '120')
      .option('--json', 'print the reply and the cell state as JSON')
      .action(async (flags: LifecycleFlags) => {
        const generation = positiveInt(flags.generation, '--generation');
        const timeoutMs = seconds(flags.timeout) * 1000;
        const payload = action === 'provision' ? { spec: provisionSpec(flags) } : {};
        const coordinator = openInstances();
        const reply = await coordinator.submit({ operation_id: flags.opId, instance_id: flags.instance, generation, action, payload });
        if (reply.status === 'rejected' || !flags.wait) return finish(reply, null, flags.json, false);
        const waited = await waitFor(coordinator, flags.instance, timeoutMs, !flags.json);
        const op = waited.state.operations.find((o) => o.operation_id === flags.opId);
        finish(
          {
            ...reply,
            status: op?.status ?? reply.status,
            reason: op?.reason ?? reply.reason,
            state: waited.state.state,
            generation: waited.state.generation,
          },
          waited.state,
          flags.json,
          waited.interrupted,
        );
      });
  }

  instance
    .command('status')
    .description('One instance: the cell (desired state, generation, operations) and management (observed runtime, ledger).')
    .argument('<id>')
    .option('--json', 'print JSON')
    .action(async (id: string, flags: { json?: boolean }) => {
      const c = openInstances();
      const status = await instanceStatus(c, id);
      process.stdout.write(flags.json ? JSON.stringify(status, null, 2) + '\n' : formatInstanceStatus(status));
    });

  instance
    .command('list')
    .description('All instances in the inventory, with their cell state.')
    .option('--json', 'print JSON')
    .action(async (flags: { json?: boolean }) => {
      const rows = await listInstances(openInstances());
      if (flags.json) return void process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
      if (rows.length === 0) return void process.stdout.write('no instances\n');
      for (const r of rows)
        process.stdout.write(
          `${r.instance_id}  ${String(r.provider).padEnd(6)} g${r.generation}  ${String(r.state).padEnd(12)} desired ${String(r.desired).padEnd(9)} runtime ${r.runtime_state}\n`,
        );
    });

  instance
    .command('history')
    .description(
      'The evidence timeline of one instance: every transition of the cell and of management, with who, when, generation and operation id.',
    )
    .argument('<id>')
    .option('--limit <n>', 'newest entries to show', '200')
    .option('--json', 'print JSON')
    .action(async (id: string, flags: { limit: string; json?: boolean }) => {
      const c = openInstances();
      const limit = positiveInt(flags.limit, '--limit');
      const all = await instanceHistory(c, id, limit);
      if (all.length === 0) throw new InputError(`no history for instance ${id}; see forge-runner instance list`);
      process.stdout.write(flags.json ? JSON.stringify(all, null, 2) + '\n' : formatEvidence(all));
    });

  instance
    .command('reconcile')
    .description(
      'After a restart of the runner or of Celld: read the cell (desired state, generation, outstanding operations) and management (inventory, ledger), ' +
        'classify converged / pending / unknown / stale / conflict, and apply only generation-safe idempotent steps (resubmit or look up existing operation ids, refresh observations). ' +
        `Never mints a new operation.\n${EXIT_HELP}`,
    )
    .argument('[id]', 'instance id')
    .option('--all', 'every instance with an outstanding operation or a live runtime')
    .option('--timeout <seconds>', 'how long to wait for each instance to settle', '120')
    .option('--json', 'print the plans and states as JSON')
    .action(async (id: string | undefined, flags: { all?: boolean; timeout: string; json?: boolean }) => {
      if (!id && !flags.all) throw new InputError('name an instance (forge-runner instance reconcile ID) or pass --all');
      const c = openInstances();
      const timeoutMs = seconds(flags.timeout) * 1000;
      const ids = id ? [id] : [...new Set([...c.management.store.instances().map((i) => i.instance_id), ...(await c.cells.list())])];
      const results = [];
      let worst = EXIT_OK;
      for (const instanceId of ids) {
        const r = await c.reconcile(instanceId, { timeoutMs, onState: flags.json ? undefined : progress(instanceId) });
        results.push({
          instance_id: instanceId,
          classes: r.plan.classes,
          actions: r.plan.actions,
          state: r.state.state,
          settled: r.settled,
          generation: r.state.generation,
          last_error: r.state.last_error,
        });
        if (!flags.json) {
          process.stdout.write(
            `${instanceId}: ${r.plan.classes.join(', ')} -> ${r.state.state}${r.settled ? '' : ' (still in progress)'}\n`,
          );
          for (const a of r.plan.actions) process.stdout.write(`  ${a.kind}${'operation_id' in a ? ` ${a.operation_id}` : ''}: ${a.why}\n`);
          if (r.state.last_error) process.stdout.write(`  last error: ${r.state.last_error}\n`);
        }
        const code = !r.settled ? EXIT_PENDING : r.state.state === 'failed' ? EXIT_FAILED : EXIT_OK;
        worst = Math.max(worst, code);
      }
      if (flags.json) process.stdout.write(JSON.stringify(results, null, 2) + '\n');
      process.exitCode = worst;
    });

  instance
    .command('capabilities')
    .description(
      'The capability descriptor of each runtime, exclusions included (worker-celld publishes task.exec, session.pty and workspace.bind as no).',
    )
    .option('--json', 'print JSON')
    .action(async (flags: { json?: boolean }) => {
      const { capabilityDescriptor } = await import('../instances/capabilityMatrix.js');
      const rows = (['qemu', 'docker', 'host', 'worker-celld'] as const).map((r) => capabilityDescriptor(r));
      if (flags.json) return void process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
      for (const d of rows) {
        process.stdout.write(`${d.runtime} (${d.isolation})\n`);
        for (const [cap, level] of Object.entries(d.capabilities)) process.stdout.write(`  ${cap.padEnd(24)} ${level}\n`);
      }
    });

  const ledger = program.command('ledger').description('The operation ledger: one record per operation id, bound to its request hash.');
  ledger
    .command('show')
    .description('One operation: request, hash, status, reason, whether the provider made an effect, and its evidence.')
    .argument('<operation_id>')
    .option('--json', 'print JSON')
    .action((opId: string, flags: { json?: boolean }) => {
      const c = openInstances();
      const row = c.management.store.operation(opId);
      if (!row)
        throw new InputError(
          `no operation ${opId} in the ledger (it was never received, or retention pruned it); see forge-runner instance history ID`,
        );
      const evidence = c.management.store.evidence({ operationId: opId });
      const out = {
        ...row,
        request: JSON.parse(row.request_json),
        request_json: undefined,
        changed: row.changed === null ? null : row.changed === 1,
        evidence,
      };
      if (flags.json) return void process.stdout.write(JSON.stringify(out, null, 2) + '\n');
      process.stdout.write(
        `${row.operation_id}: ${row.action} ${row.instance_id} generation ${row.generation}\n  status ${row.status}${row.reason ? ` (${row.reason})` : ''}\n  request hash ${row.request_hash}\n  provider effect: ${out.changed === null ? 'none recorded' : out.changed ? 'made by this operation' : 'already in effect, nothing done'}\n`,
      );
      process.stdout.write(formatEvidence(evidence));
    });
  ledger
    .command('prune')
    .description(
      'Retention: delete finished operations (and their evidence) older than --days (default FORGE_LEDGER_RETENTION_DAYS or 30). An operation id may be reused only after its record is pruned.',
    )
    .option('--days <n>', 'keep finished operations this many days')
    .action((flags: { days?: string }) => {
      const days = positiveInt(flags.days ?? process.env.FORGE_LEDGER_RETENTION_DAYS ?? '30', '--days');
      const c = openInstances();
      const n = c.management.store.pruneFinished(Date.now() - days * 86_400_000);
      process.stdout.write(`pruned ${n} finished operation(s) older than ${days} day(s)\n`);
    });
}

const ACTION_HELP: Record<(typeof LIFECYCLE_ACTIONS)[number], string> = {
  provision: 'Create and start a new incarnation of an instance, then wait until its readiness probe reports (enrollment).',
  start: 'Start the current incarnation again and wait for readiness.',
  stop: 'Stop the current incarnation (its runtime is kept).',
  destroy: 'Destroy the current incarnation; the instance stays as a tombstone in the inventory and history.',
};

function provisionSpec(flags: LifecycleFlags): Record<string, unknown> {
  let spec: Record<string, unknown> = {};
  if (flags.spec) {
    try {
      spec = JSON.parse(readFileSync(flags.spec, 'utf8')) as Record<string, unknown>;
    } catch (e) {
      throw new InputError(`cannot read the instance spec ${flags.spec}: ${(e as Error).message.split('\n')[0]}`);
    }
    if (typeof spec !== 'object' || spec === null || Array.isArray(spec))
      throw new InputError(`${flags.spec}: the instance spec must be a JSON object`);
  }
  if (flags.provider) spec.provider = flags.provider;
  if (flags.image) spec.image = flags.image;
  if (!spec.provider) throw new InputError('provision needs a runtime: pass --provider host|docker (or "provider" in --spec)');
  return spec;
}

async function waitFor(c: InstanceCoordinator, id: string, timeoutMs: number, showProgress: boolean) {
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const r = await c.drive(id, { timeoutMs, signal: abort.signal, onState: showProgress ? progress(id) : undefined });
    return { ...r, interrupted: abort.signal.aborted };
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

function progress(id: string) {
  return (s: InstanceCellState) =>
    process.stderr.write(`forge-runner: ${id}: ${s.state}${s.last_error && s.state === 'failed' ? ` (${s.last_error})` : ''}\n`);
}

function finish(reply: CommandReply, state: InstanceCellState | null, json: boolean | undefined, interrupted: boolean): void {
  if (json) process.stdout.write(JSON.stringify({ reply, state }, null, 2) + '\n');
  else {
    const why = reply.reason ? `: ${reply.reason}${reply.detail && reply.status === 'rejected' ? ` (${reply.detail})` : ''}` : '';
    process.stdout.write(
      `${reply.operation_id}: ${reply.status}${why}; ${reply.instance_id} is ${reply.state ?? 'unknown'} (generation ${reply.generation})\n`,
    );
    if (state?.last_error && (state.state === 'failed' || reply.status === 'failed')) process.stdout.write(`  ${state.last_error}\n`);
  }
  if (interrupted) process.exitCode = EXIT_INTERRUPTED;
  else if (reply.status === 'rejected') process.exitCode = EXIT_REJECTED;
  else if (reply.status === 'failed' || state?.state === 'failed') process.exitCode = EXIT_FAILED;
  else if (state && (reply.status !== 'succeeded' || !['ready', 'stopped', 'destroyed'].includes(state.state)))
    process.exitCode = EXIT_PENDING;
  else process.exitCode = EXIT_OK;
}

function positiveInt(text: string, flag: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1) throw new InputError(`${flag} ${text}: expected a positive whole number`);
  return n;
}

function seconds(text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new InputError(`--timeout ${text}: expected a positive number of seconds`);
  return n;
}
