import assert from 'node:assert/strict';
import type { FixReport } from '../../../runner/src/protocol/fixReport.js';
import { FixReportSchema } from '../../../runner/src/protocol/fixReport.js';
import { attemptReason, runEnding } from '../../../runner/src/repair/explainEnding.js';
import { renderSummary } from '../../../runner/src/repair/renderSummary.js';
import { classifyBaseline, describeBrokenEnvironment } from '../../../runner/src/repair/verdicts/classifyBaseline.js';
import {
  type DeniedEgress,
  deniedEgressLine,
  deniedEgressOf,
  runDeniedEgressLine,
} from '../../../runner/src/repair/verdicts/deniedEgress.js';
import { judgeTestRun } from '../../../runner/src/repair/verdicts/judgeTestRun.js';
import { parseTestOutput } from '../../../runner/src/repair/verdicts/parsers.js';
import { storedVerdict } from '../../../runner/src/repair/verdicts/storedVerdict.js';
import { aVerdict } from '../../helpers/verdicts.js';

const npm: DeniedEgress = { host: 'registry.npmjs.org', port: 443, count: 3, refused_by: 'allow_net' };

describe('what the egress proxy refused, in words (issue 30)', () => {
  it("names the destination and the way out: --allow-net for hosts outside the allowlist, --deny-net for the user's own", () => {
    assert.equal(
      deniedEgressLine([npm], 'the tests'),
      'the tests tried to reach registry.npmjs.org:443, which is not allowed: pass --allow-net registry.npmjs.org',
    );
    assert.equal(
      deniedEgressLine([npm, { host: '2001:db8::1', port: 80, count: 1, refused_by: 'allow_net' }], 'its tests'),
      'its tests tried to reach registry.npmjs.org:443 and [2001:db8::1]:80, which are not allowed: pass --allow-net registry.npmjs.org --allow-net [2001:db8::1]',
    );
    assert.equal(
      deniedEgressLine([{ host: 'telemetry.example', port: 443, count: 1, refused_by: 'deny_net' }], 'the tests'),
      'the tests tried to reach telemetry.example:443, which --deny-net refuses: drop it from --deny-net if they need it',
    );
    const many = Array.from({ length: 5 }, (_, i): DeniedEgress => ({ host: `h${i}.test`, port: 443, count: 1, refused_by: 'allow_net' }));
    assert.equal(
      deniedEgressLine(many, 'the tests'),
      'the tests tried to reach h0.test:443, h1.test:443, h2.test:443 and 2 more, which are not allowed: pass --allow-net h0.test --allow-net h1.test --allow-net h2.test',
    );
    assert.equal(deniedEgressLine([], 'the tests'), null);
    assert.deepEqual(deniedEgressOf([{ ...npm, first_at: '2026-01-01T00:00:00.000Z' }]), [npm]);
    assert.deepEqual(deniedEgressOf(undefined), []);
  });

  it('a baseline whose tests never ran because the proxy refused them is a broken environment that says which host', () => {
    const output = 'npm error 403 Forbidden - GET https://registry.npmjs.org/left-pad\n';
    const facts = { exitCode: 1, timedOut: false, output, report: parseTestOutput(output), testCmd: 'npm test', cellTimeoutS: 600 };
    assert.equal(classifyBaseline(facts), null, 'without the record nothing in the output says the network');
    const broken = classifyBaseline({ ...facts, egressDenied: [npm] });
    assert.deepEqual(broken, {
      cause: 'network',
      detail: 'the tests tried to reach registry.npmjs.org:443, which is not allowed',
      fix: 'pass --allow-net registry.npmjs.org',
    });
    assert.equal(
      describeBrokenEnvironment(broken!),
      'the tests could not run on the base commit, so there is nothing to fix yet: the tests tried to reach registry.npmjs.org:443, which is not allowed; pass --allow-net registry.npmjs.org',
    );
    // Tests that ran and failed stay the oracle: a request refused beside them does not stop the run.
    const failing = 'not ok 1 - adds\n# tests 1\n# pass  0\n# fail  1\n';
    assert.equal(
      classifyBaseline({ ...facts, output: failing, report: parseTestOutput(failing), egressDenied: [npm] }),
      null,
      'a failing test is still the oracle',
    );
    const passedSome = 'ok 1 - a\nnot ok 2 - b\n# tests 2\n# pass  1\n# fail  1\n';
    assert.equal(classifyBaseline({ ...facts, output: passedSome, report: parseTestOutput(passedSome), egressDenied: [npm] }), null);
  });

  it("a red attempt's reason and the run's ending say what its tests were refused", () => {
    const red = aVerdict(false, { failing: ['t_fetch'], egress_denied: [npm] });
    assert.equal(
      attemptReason(red, null),
      '"t_fetch" still fails (its tests tried to reach registry.npmjs.org:443, which is not allowed: pass --allow-net registry.npmjs.org)',
    );
    assert.equal(attemptReason(aVerdict(true, { egress_denied: [npm] }), null), null, 'a green attempt has no reason to give');
    assert.equal(attemptReason(aVerdict(false, { failing: ['t_fetch'] }), null), '"t_fetch" still fails');
  });

  it('the summary names every refused destination once, with the runs it was refused to', () => {
    assert.equal(
      runDeniedEgressLine([
        { who: 'baseline', denied: [npm] },
        { who: 'attempt 0', denied: [npm, { host: 'x.test', port: 80, count: 1, refused_by: 'allow_net' }] },
        { who: 'attempt 1', denied: [] },
      ]),
      'the tests tried to reach registry.npmjs.org:443 (baseline and attempt 0) and x.test:80 (attempt 0), which are not allowed: pass --allow-net registry.npmjs.org --allow-net x.test',
    );
    assert.equal(runDeniedEgressLine([{ who: 'baseline', denied: [] }]), null);

    const baseline = { ...judgeTestRun(1, 'not ok 1 - fetch\n# tests 1\n# pass  0\n# fail  1\n', null), egress_denied: [npm] };
    const attempt = aVerdict(false, { failing: ['fetch'], egress_denied: [npm] });
    const report = {
      run_id: 'r',
      status: 'not_fixed',
      repo: '/r',
      base_commit: 'a'.repeat(40),
      test_cmd: 'npm test',
      provider: 'docker',
      image: 'img',
      model: 'replay:x',
      baseline,
      environment: null,
      dependencies: [],
      attempts: [
        {
          index: 0,
          attempt_id: 'r-a0',
          temperature: 0,
          status: 'finished',
          stop: 'finish',
          turns: 2,
          tokens: 10,
          verdict: attempt,
          diff_size: 1,
          review_warnings: [],
          omitted: [],
          generated: [],
          error: null,
        },
      ],
      winner: null,
      best: null,
      ground_truth: null,
      applied_to: null,
      cells: 2,
      duration_ms: 1000,
    } satisfies FixReport;
    assert.equal(FixReportSchema.safeParse(report).success, true);
    const ending = runEnding(report);
    assert.match(
      ending,
      /attempt 0: "fetch" still fails \(its tests tried to reach registry\.npmjs\.org:443, which is not allowed: pass --allow-net registry\.npmjs\.org\)/,
    );
    const summary = renderSummary({ ...report, ending });
    assert.match(
      summary,
      /^The tests tried to reach registry\.npmjs\.org:443 \(baseline and attempt 0\), which is not allowed: pass --allow-net registry\.npmjs\.org\.$/m,
    );
  });

  it('verdicts recorded before the record existed read back with none', () => {
    const old = { ...aVerdict(false) } as Record<string, unknown>;
    delete old.egress_denied;
    assert.deepEqual(storedVerdict(JSON.stringify(old)).egress_denied, []);
    assert.deepEqual(FixReportSchema.shape.baseline.parse(old).egress_denied, []);
  });
});
