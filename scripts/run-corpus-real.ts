import { checkRealProject, realProjects, type RealOutcome } from '../test/corpus-real/realProjects.js';

/**
 * `npm run corpus:real [-- --only NAME[,NAME]] [--ci] [--provider host|docker]`: every
 * published project of test/corpus-real fetched by exact version, installed as its users
 * install it, fixed with default flags; one row each and the rate.
 */
const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(
    'usage: npm run corpus:real [-- --only NAME[,NAME...]] [--ci] [--provider host|docker] [--image IMG]\n' +
      '  Fetches each published project of test/corpus-real by exact version (cached in\n' +
      '  $FORGE_CORPUS_CACHE, default ~/.cache/forge-cells/corpus-real), plants its bug, runs its\n' +
      '  install step and `forge-runner fix` with its replay; prints one row per project and the rate.\n' +
      '  --ci runs only the subset CI runs; exit 1 when any row is not all yes.\n',
  );
  process.exit(0);
}
const provider = (flag('--provider') ?? 'host') as 'host' | 'docker';
if (!['host', 'docker'].includes(provider)) {
  process.stderr.write(`corpus:real: --provider ${provider}: expected host or docker\n`);
  process.exit(2);
}
const image = flag('--image') ?? (provider === 'docker' ? 'forge-test/bookworm:3' : undefined);
const only = flag('--only')?.split(',');
const all = realProjects();
for (const name of only ?? [])
  if (!all.some((p) => p.name === name)) {
    process.stderr.write(`corpus:real: --only ${name}: no such project in test/corpus-real (have: ${all.map((p) => p.name).join(', ')})\n`);
    process.exit(2);
  }
const chosen = all.filter((p) => (!only || only.includes(p.name)) && (!args.includes('--ci') || p.ci));
const yes = (b: boolean) => (b ? 'yes' : 'NO ');
const header = `${'project'.padEnd(26)} ${'pm'.padEnd(6)} ${'framework'.padEnd(12)} fixed+winner  regression  untouched  seconds`;
process.stdout.write(`${header}\n`);
const rows: RealOutcome[] = [];
for (const p of chosen) {
  process.stderr.write(
    `${p.name}: ${p.source.package}@${p.source.version} from ${p.source.registry}, ${p.setup ?? 'nothing to install'}, fixing on ${provider} cells...\n`,
  );
  const r = checkRealProject(p, provider, image);
  rows.push(r);
  process.stdout.write(
    `${p.name.padEnd(26)} ${p.packageManager.padEnd(6)} ${p.framework.padEnd(12)} ${yes(r.fixedRightWinner).padEnd(13)} ${yes(r.regressionNamed).padEnd(11)} ${yes(r.untouched).padEnd(10)} ${r.seconds.toFixed(1).padStart(7)}\n`,
  );
  if (r.problem) process.stdout.write(`  ${r.problem}\n`);
}
const good = rows.filter((r) => r.fixedRightWinner && r.regressionNamed && r.untouched).length;
process.stdout.write(
  `${good}/${rows.length} fixed with the right winner, the regression named and the checkout untouched (${rows.length ? Math.round((100 * good) / rows.length) : 0}%); ${new Set(chosen.map((p) => p.packageManager)).size} package managers, frameworks: ${[...new Set(chosen.map((p) => p.framework))].join(', ')}\n`,
);
process.exit(good === rows.length ? 0 : 1);
