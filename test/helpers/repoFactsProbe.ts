// Child process of repoFileLinks.unit.test.ts: runs what stack detection, bake and repository
// discovery read from a checkout, for each directory given, with standard input a pipe the
// parent never writes (a read through /proc/self/fd/0 would block). One JSON line per
// directory, preceded by a "start" line so a block names its row.
import { readRepoFacts } from '../../runner/src/images/readRepoFacts.js';
import { detectStacks } from '../../runner/src/images/detectStack.js';
import { readBakeInputs } from '../../runner/src/images/bakeImage.js';
import { discoverRepository } from '../../runner/src/workspace/repoLocation.js';

const attempt = <T>(f: () => T): T | { error: string } => {
  try {
    return f();
  } catch (e) {
    return { error: (e as Error).message.split('\n')[0] ?? 'error' };
  }
};

for (const { dir, name } of JSON.parse(process.argv[2] ?? '[]') as { dir: string; name: string }[]) {
  process.stdout.write(JSON.stringify({ start: dir }) + '\n');
  const started = Date.now();
  const facts = readRepoFacts(dir);
  const read = facts.read(name);
  const stacks = detectStacks(facts).map((s) => ({ stack: s.stack, test: s.test, lockfiles: s.lockfiles }));
  const bake = attempt(() => {
    const inputs = readBakeInputs(dir, undefined);
    const custom = readBakeInputs(dir, 'true');
    return {
      lockfiles: [...inputs.lockfiles, ...custom.lockfiles],
      bytes: [...inputs.contents, ...custom.contents].map((c) => c.content.toString('latin1')),
    };
  });
  const repo = await discoverRepository(dir).then(
    (loc) => (loc ? { top: loc.top } : null),
    (e: Error) => ({ error: e.message.split('\n')[0] }),
  );
  process.stdout.write(
    JSON.stringify({
      dir,
      files: [...facts.files],
      venv: facts.venv ?? null,
      read,
      stacks,
      bake,
      repo,
      ms: Date.now() - started,
      rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
    }) + '\n',
  );
}
