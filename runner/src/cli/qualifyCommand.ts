import { type Command, Option } from 'commander';
import { realpathSync } from 'node:fs';
import { formatQualification, runQualification } from '../instances/qualify/runQualification.js';
import { EXIT_FAILED, EXIT_OK } from './exitCodes.js';

export function registerQualifyCommand(program: Command): void {
  program
    .command('qualify')
    .description(
      'Run the go/no-go measures for durable instances in a private state directory: duplicate delivery, management restart during provision ' +
        '(the runner SIGKILLed at named fault points), stale-generation destructive commands, lost responses, worker capability honesty (in workerd), ' +
        'and the Celld-disabled regression. Reduced counts by default; --full runs 10,000 repeats per action and 100 restart trials.\n' +
        'Exit status: 0 all GO, 5 any NO-GO, 2 bad input.',
    )
    .option('--full', 'the full go/no-go counts (takes minutes)')
    .addOption(new Option('--provider <name>', 'runtime for the trial instances').choices(['host', 'docker']).default('host'))
    .option('--image <image>', 'image for docker trial instances', 'forge-test/busybox:1')
    .option('--json', 'print the report as JSON')
    .action(async (flags: { full?: boolean; provider: 'host' | 'docker'; image: string; json?: boolean }) => {
      const report = await runQualification({
        full: Boolean(flags.full),
        runnerPath: realpathSync(process.argv[1]!),
        provider: flags.provider,
        image: flags.image,
        onProgress: (l) => process.stderr.write(`forge-runner: ${l}\n`),
      });
      process.stdout.write(flags.json ? JSON.stringify(report, null, 2) + '\n' : formatQualification(report));
      process.exitCode = report.go ? EXIT_OK : EXIT_FAILED;
    });
}
