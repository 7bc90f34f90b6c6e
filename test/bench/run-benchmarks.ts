// `npm run bench`: speed targets live here, never in timed tests. Every figure is a ratio of
// variants measured side by side in this one run; absolute times on shared machines are noise.
import { benchHostCellOverhead, type BenchLine } from './hostCellOverhead.js';

const runsArg = process.argv.indexOf('--runs');
const runs = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 40;
const json = process.argv.includes('--json');

async function main(): Promise<void> {
  const suites: Record<string, BenchLine[]> = {};
  console.error(`host cell overhead: ${runs} interleaved runs of each variant...`);
  suites['host cell overhead'] = await benchHostCellOverhead(runs);
  if (json) {
    console.log(JSON.stringify({ runs, suites }, null, 2));
    return;
  }
  for (const [suite, lines] of Object.entries(suites)) {
    console.log(`\n## ${suite} (${runs} interleaved rounds; times are medians, ratios are medians of per-round ratios)`);
    for (const l of lines) {
      const value = l.unit === 'x' ? `${l.value.toFixed(2)}x` : `${l.value.toFixed(2)} ${l.unit}`;
      const target = l.target ? `   target ${l.target}: ${l.met ? 'met' : 'MISSED'}` : '';
      console.log(`  ${l.name.padEnd(38)} ${value.padStart(10)}${target}`);
    }
  }
}

main().catch((e) => {
  console.error(`bench failed: ${(e as Error).message}`);
  process.exitCode = 1;
});
