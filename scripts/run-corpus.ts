import { corpusEntries, prepareCorpusRepo, runCorpusFix, type CorpusOutcome } from '../test/corpus/corpusRepos.js';

/**
 * `npm run corpus [-- --provider host|docker|qemu] [--image IMG] [--only NAME]`: every corpus
 * repository, fixed with default flags after its ordinary install step; a line each.
 */
const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const provider = (flag('--provider') ?? 'host') as 'host' | 'docker' | 'qemu';
if (!['host', 'docker', 'qemu'].includes(provider)) {
  process.stderr.write(`run-corpus: --provider ${provider}: expected host, docker or qemu\n`);
  process.exit(2);
}
const image = flag('--image') ?? (provider === 'docker' ? 'forge-test/bookworm:3' : undefined);
const only = flag('--only');
const results: CorpusOutcome[] = [];
for (const entry of corpusEntries().filter((e) => (!only || e.name === only) && (!e.providers || e.providers.includes(provider)))) {
  process.stderr.write(`${entry.name}: installing (${entry.setup ?? 'nothing to install'}) and fixing on ${provider} cells...\n`);
  let out: CorpusOutcome;
  try {
    const repo = prepareCorpusRepo(entry);
    try {
      out = runCorpusFix(entry, repo, provider, image);
    } finally {
      repo.cleanup();
    }
  } catch (e) {
    out = {
      name: entry.name,
      provider,
      fixed: false,
      winner: null,
      regressions: [],
      seconds: 0,
      report: null,
      exitCode: null,
      stderr: (e as Error).message,
    };
  }
  results.push(out);
  const said = out.fixed
    ? `fixed   winner ${out.winner}`
    : `NOT FIXED (exit ${out.exitCode}): ${out.stderr.trim().split('\n').at(-1) ?? ''}`;
  process.stdout.write(
    `${entry.name.padEnd(22)} ${said}  regressions named: ${out.regressions.length > 0 ? out.regressions.join('; ') : 'none'}  ${out.seconds.toFixed(1)} s\n`,
  );
}
const fixed = results.filter((r) => r.fixed).length;
process.stdout.write(`${fixed}/${results.length} fixed on ${provider} cells\n`);
process.exit(fixed === results.length ? 0 : 1);
