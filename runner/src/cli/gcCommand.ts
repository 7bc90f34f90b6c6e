import type { Command } from 'commander';
import { collectGarbage } from '../cells/garbageCollection.js';
import { InputError } from '../protocol/inputError.js';
import { gcOldRuns } from './gcOldRuns.js';

interface GcFlags {
  repo: string;
  dockerHost?: string;
  registry?: string;
  dryRun?: boolean;
  json?: boolean;
  olderThan?: string;
  yes?: boolean;
}

export function registerGcCommand(program: Command): void {
  program
    .command('gc')
    .description(
      'Remove what crashed runners left behind: attempt worktrees under <repo>/.git/forge-cells with their forge/attempt/* branches,\n' +
        'cell containers (label forge.cell), swarm cells and qemu cell directories whose runner process is gone, and in the swarm registry\n' +
        'the forge-cell-input tags of gone runners and the forge-cell-deps tags no live runner uses. Worktrees kept for review, runs still\n' +
        'in progress, branches without a worktree and forge-cell-base tags are left alone.',
    )
    .option('--repo <dir>', 'repository whose attempt worktrees to clean', '.')
    .option(
      '--docker-host <url>',
      "swarm: the manager whose services, configs and secrets of this host's dead runners to remove (default $DOCKER_HOST, else the local engine)",
    )
    .option(
      '--registry <host:port>',
      "swarm: the registry whose tags of this host's gone runners to remove (default $FORGE_SWARM_REGISTRY)",
    )
    .option('--dry-run', 'report what would be removed, remove nothing')
    .option('--json', 'print the report as JSON')
    .option(
      '--older-than <duration>',
      'instead: list the runs not reviewed (applied or discarded) for longer than this (3d, 12h, 90m) with their forge/attempt/* branches ' +
        'and worktrees, and branches of runs the store no longer knows, in every repository the store knows (or --repo if given); ' +
        'removes them only with --yes',
    )
    .option('--yes', 'with --older-than: remove what it lists (discard those runs)')
    .action(async (flags: GcFlags, cmd: Command) => {
      if (flags.olderThan !== undefined) {
        const explicitRepo = cmd.getOptionValueSource('repo') === 'cli';
        return gcOldRuns({
          olderThan: flags.olderThan,
          yes: flags.yes,
          dryRun: flags.dryRun,
          json: flags.json,
          ...(explicitRepo ? { repo: flags.repo } : {}),
        });
      }
      if (flags.yes) throw new InputError('--yes only goes with --older-than (plain gc removes what crashed runners left without asking)');
      const dryRun = flags.dryRun ?? false;
      const { repo, items, notes } = await collectGarbage(flags.repo, dryRun, {
        ...(flags.dockerHost ? { dockerHost: flags.dockerHost } : {}),
        ...(flags.registry ? { registry: flags.registry } : {}),
      });
      if (flags.json) {
        process.stdout.write(JSON.stringify({ dry_run: dryRun, repo, items, notes }, null, 2) + '\n');
        return;
      }
      const acted = items.filter((i) => i.action !== 'left');
      for (const i of items) {
        // Registry tags in a line of their own form: "registry: removed forge-cell-input:TAG (runner 1234@host gone)".
        if (i.kind === 'registry') process.stdout.write(`registry: ${i.action} ${i.id} (${i.reason})\n`);
        else process.stdout.write(`${i.action.padEnd(12)} ${i.kind.padEnd(9)} ${i.id}: ${i.reason}\n`);
      }
      const tags = acted.filter((i) => i.kind === 'registry').length;
      if (items.some((i) => i.kind === 'registry'))
        process.stdout.write(`registry: ${tags} tag${tags === 1 ? '' : 's'} ${dryRun ? 'to remove' : 'removed'}\n`);
      for (const n of notes) process.stdout.write(`note: ${n}\n`);
      process.stdout.write(`${acted.length} ${dryRun ? 'to remove' : 'removed'}, ${items.length - acted.length} left\n`);
    });
}
