import type { Command } from 'commander';
import Docker from 'dockerode';
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { bakeFromContainer, bakeImage, type BakeResult } from '../images/bakeImage.js';
import { InputError } from '../protocol/inputError.js';

interface BakeFlags {
  repo: string;
  base?: string;
  /** commander: a string from --install, false from --no-install, undefined otherwise. */
  install?: string | false;
  fromContainer?: string;
  json?: boolean;
}

export function registerBakeCommand(program: Command): void {
  program
    .command('bake')
    .description(
      'Build the image docker cells run in: the base image plus the install step of the detected stack (or --install),\n' +
        'tagged forge-prj-<hash>:bootstrap where hash = sha256(base image id + lockfile contents + install command).\n' +
        'A second bake with nothing changed reuses the image. The result is recorded in <repo>/.forge/bake.json.',
    )
    .option('--repo <dir>', 'repository to bake for', '.')
    .option('--base <image>', 'local base image (no registry is reachable: docker import or build one); default $FORGE_BASE_IMAGE')
    .option('--install <cmd>', 'install command to run over the lockfiles instead of the detected one')
    .option('--no-install', 'bake without an install step')
    .option('--from-container <id>', 'docker commit of a scratch container configured by hand or by an agent')
    .option('--json', 'print the result as JSON')
    .action(async (flags: BakeFlags) => {
      const repo = resolve(flags.repo);
      if (!existsSync(repo) || !statSync(repo).isDirectory()) throw new InputError(`--repo ${flags.repo} is not a directory`);
      const docker = new Docker({ socketPath: '/var/run/docker.sock' });
      await docker.ping().catch((e: Error) => {
        throw new Error(`no Docker Engine answers on /var/run/docker.sock (${e.message}); start dockerd`);
      });
      let result: BakeResult;
      if (flags.fromContainer) {
        result = await bakeFromContainer(docker, repo, flags.fromContainer);
      } else {
        const base = flags.base ?? process.env.FORGE_BASE_IMAGE;
        if (!base) throw new InputError('bake needs a base image: pass --base IMAGE (any local image) or set FORGE_BASE_IMAGE');
        const install = flags.install === false ? null : flags.install;
        result = await bakeImage(docker, {
          repo,
          base,
          ...(install !== undefined ? { install } : {}),
          onProgress: flags.json ? undefined : (line) => process.stderr.write(line),
        });
      }
      if (flags.json) {
        process.stdout.write(JSON.stringify(result, null, 2) + '\n');
        return;
      }
      process.stdout.write(
        `${result.reused ? 'reused' : 'baked'} ${result.image} (${result.image_id.slice(0, 19)}) in ${result.duration_ms} ms\n` +
          `  base: ${result.base}\n  stack: ${result.stack ?? 'none detected'}\n  install: ${result.install ?? '(none)'}\n` +
          `  test: ${result.test ?? '(none detected)'}\n  lockfiles: ${result.lockfiles.join(', ') || '(none)'}\n`,
      );
    });
}
