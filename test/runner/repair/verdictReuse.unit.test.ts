// Never run the same tree twice (issue 29): which earlier run may stand for a verdict.
import assert from 'node:assert/strict';
import type { CellResult } from '../../../runner/src/protocol/cellResult.js';
import type { TestRun } from '../../../runner/src/repair/fix/runCells.js';
import {
  AttemptTestRuns,
  RunVerdicts,
  sharedVerdictFrom,
  sharedVerdictSource,
  treeKey,
} from '../../../runner/src/repair/fix/verdictReuse.js';
import type { Verdict } from '../../../runner/src/repair/verdicts/judgeTestRun.js';
import { aVerdict } from '../../helpers/verdicts.js';

const verdict = aVerdict;

const testRun = (over: Partial<CellResult> = {}): TestRun => ({
  result: { exit_code: 0, timed_out: false, killed_by: null, ...over } as CellResult,
  output: '1 passed',
  logWhole: true,
  written: null,
});

describe('verdict reuse: never run the same tree twice', () => {
  it('a tree is named by its whole patch; a capture that leaves something out names none', () => {
    const a = treeKey({ patch: Buffer.from('diff a'), omitted: [], incomplete: null });
    assert.equal(a, treeKey({ patch: Buffer.from('diff a'), omitted: [], incomplete: null }));
    assert.notEqual(a, treeKey({ patch: Buffer.from('diff b'), omitted: [], incomplete: null }));
    assert.equal(treeKey({ patch: Buffer.from('diff a'), omitted: [{ path: 'big', reason: 'too large' }], incomplete: null }), null);
    assert.equal(treeKey({ patch: Buffer.from('diff a'), omitted: [], incomplete: 'deadline' }), null);
  });

  it("an attempt's run_tests stands for its verdict only on the same tree, with no command run since", async () => {
    const runs = new AttemptTestRuns();
    await runs.run(
      3,
      async () => 'tree-1',
      async () => testRun(),
    );
    assert.equal(runs.sameTree('tree-1')?.turn, 3);
    assert.equal(runs.sameTree('tree-2'), null, 'edited since');
    assert.equal(runs.sameTree(null), null, 'a tree the capture cannot name');
    runs.commandRan();
    assert.equal(runs.sameTree('tree-1'), null, 'a run_command since may have changed what no patch shows');
    await runs.run(
      4,
      async () => 'tree-1',
      async () => testRun(),
    );
    runs.fileWritten('local_settings.py');
    assert.equal(runs.sameTree('tree-1'), null, 'a file written since (an ignored one keeps the patch as it was: red team)');
    await runs.run(
      5,
      async () => 'tree-1',
      async () => testRun({ timed_out: true }),
    );
    assert.equal(runs.sameTree('tree-1'), null, 'a run the runner cut short says nothing about the tree');
    await runs.run(
      6,
      async () => {
        throw new Error('capture failed');
      },
      async () => testRun(),
    );
    assert.equal(runs.sameTree('tree-1'), null, 'a tree that could not be named is not remembered');
  });

  it('attempts with the same change share one verdict; the first judges, the others wait for it', async () => {
    const verdicts = new RunVerdicts();
    let judged = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = verdicts.judge('same', 0, async () => {
      judged++;
      await gate;
      return verdict(true);
    });
    const second = verdicts.judge('same', 1, async () => {
      judged++;
      return verdict(false);
    });
    release();
    const [a, b] = await Promise.all([first, second]);
    assert.equal(judged, 1);
    assert.equal(a.reused_from, null);
    assert.equal(b.green, true);
    assert.equal(b.reused_from, "attempt 0's verdict (the same change)");
    const other = await verdicts.judge('different', 2, async () => verdict(false));
    assert.equal(other.reused_from, null);
  });

  it("an attempt's own run on the tree is taken before waiting for another's; a verdict that could not run is not shared", async () => {
    const verdicts = new RunVerdicts();
    const never = new Promise<Verdict>(() => undefined);
    void verdicts.judge('t', 0, () => never);
    const own = await verdicts.judge(
      't',
      1,
      () => never,
      async () => verdict(true, { reused_from: "turn 2's run_tests" }),
    );
    assert.equal(own.reused_from, "turn 2's run_tests");
    const crashed = await verdicts.judge('c', 0, async () => verdict(false, { could_not_run: 'out of memory' }));
    assert.equal(crashed.could_not_run, 'out of memory');
    let judgedAgain = false;
    await verdicts.judge('c', 1, async () => ((judgedAgain = true), verdict(true)));
    assert.equal(judgedAgain, true);
    await assert.rejects(
      verdicts.judge('f', 0, async () => {
        throw new Error('boom');
      }),
    );
    assert.equal((await verdicts.judge('f', 1, async () => verdict(true))).reused_from, null, 'a failed judge offers nothing');
  });

  it('an attempt whose worktree holds more than its patch neither takes nor offers a verdict (red team: ignored files differ)', async () => {
    // The patch's paths as git lists them (NUL-separated), never read back from its headers:
    // a tracked "plan b/local_settings.py" does not make an ignored local_settings.py part of it (red team).
    const paths = ['calc.py', 'plan b/local_settings.py'];
    const plain = new AttemptTestRuns();
    plain.fileWritten('calc.py');
    assert.equal(plain.onlyItsPatch(paths), true);
    const ignored = new AttemptTestRuns();
    ignored.fileWritten('calc.py');
    ignored.fileWritten('local_settings.py');
    assert.equal(ignored.onlyItsPatch(paths), false);
    const commanded = new AttemptTestRuns();
    commanded.commandRan();
    assert.equal(commanded.onlyItsPatch(paths), false);
    // A test run can leave a build or cache in an ignored path that a later run reads (red team).
    const tested = new AttemptTestRuns();
    await tested.run(
      0,
      async () => 'tree',
      async () => testRun(),
    );
    assert.equal(tested.onlyItsPatch(paths), false);

    const verdicts = new RunVerdicts();
    await verdicts.judge('same', 0, async () => verdict(false), undefined, false);
    const honest = await verdicts.judge('same', 1, async () => verdict(true));
    assert.equal(honest.reused_from, null, 'nothing was offered by the attempt with more than its patch');
    assert.equal(honest.green, true);
    let judged = false;
    await verdicts.judge('same', 2, async () => ((judged = true), verdict(true)), undefined, false);
    assert.equal(judged, true, 'nor does it take one');
  });

  it("a verdict taken from another attempt names it, and the name gives the attempt back (its logs are that attempt's verdict cells)", () => {
    assert.equal(sharedVerdictSource(sharedVerdictFrom(3)), 3);
    assert.equal(sharedVerdictSource("turn 2's run_tests (the tree is unchanged since)"), null);
    assert.equal(sharedVerdictSource(null), null);
  });
});
