import type { Command } from 'commander';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError } from '../protocol/inputError.js';
import { runGit } from '../workspace/safeGit.js';
import { fixFromFlags } from './fixCommand.js';

/** samples/ ships next to dist/ (and next to runner/ in a checkout): found by walking up. */
export function findSamplesDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'samples', 'README.md'))) return join(dir, 'samples');
    const parent = dirname(dir);
    if (parent === dir) throw new Error('the bundled samples/ directory is missing');
    dir = parent;
  }
}

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('Offline demo of Fix Issue in Cells: fixes the bundled sample repositories with the replay model, in host cells.')
    .option('--sample <name>', 'one sample (py-calc, js-slug, c-clamp) or all', 'all')
    .action(async (flags: { sample: string }) => {
      const samples = findSamplesDir();
      const names = readdirSync(samples).filter((n) => existsSync(join(samples, n, 'replay.json')));
      const chosen = flags.sample === 'all' ? names : names.filter((n) => n === flags.sample);
      if (chosen.length === 0) throw new InputError(`no sample "${flags.sample}"; choose one of: ${names.join(', ')}, all`);
      let allFixed = true;
      for (const name of chosen) {
        const work = mkdtempSync(join(tmpdir(), `forge-demo-${name}-`));
        const repo = join(work, 'repo');
        cpSync(join(samples, name, 'repo'), repo, { recursive: true });
        const identity = {
          GIT_AUTHOR_NAME: 'Forge Demo',
          GIT_AUTHOR_EMAIL: 'demo@forge.local',
          GIT_COMMITTER_NAME: 'Forge Demo',
          GIT_COMMITTER_EMAIL: 'demo@forge.local',
        };
        const git = (...args: string[]) => runGit({ cwd: repo }, args, { env: identity });
        await git('init', '-q', '-b', 'main');
        await git('add', '-A');
        await git('commit', '-q', '-m', `${name}: code with a bug`);
        const replay = join(samples, name, 'replay.json');
        const attempts = (JSON.parse(readFileSync(replay, 'utf8')) as { attempts: unknown[] }).attempts.length;
        process.stdout.write(`\n== ${name}: ${readFileSync(join(samples, name, 'issue.md'), 'utf8').trim()}\n`);
        const { report } = await fixFromFlags(
          {
            repo,
            issueFile: join(samples, name, 'issue.md'),
            model: `replay:${replay}`,
            attempts: String(attempts),
            temperature: '0.7',
            provider: 'host',
            maxTurns: '30',
            maxTokens: '200000',
            timeoutPerAttempt: '600',
            cellTimeout: '120',
            out: join(work, 'out'),
          },
          (line) => process.stdout.write(`   ${line}\n`),
        );
        allFixed &&= report.status === 'fixed';
        process.stdout.write(
          report.winner
            ? `-> fixed by ${report.winner.attempts.join(' + ')} (agreement ${report.winner.agreement}, ${report.winner.diff_size} changed lines)\n` +
                `   diff:    ${join(work, 'out', 'winner.diff')}\n   summary: ${join(work, 'out', 'summary.md')}\n   branch:  ${report.winner.branch} in ${repo}\n`
            : `-> not fixed; report: ${join(work, 'out', 'report.json')}\n`,
        );
      }
      process.exitCode = allFixed ? 0 : 1;
    });
}
