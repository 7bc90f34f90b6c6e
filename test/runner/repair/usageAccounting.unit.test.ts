import assert from 'node:assert/strict';
import type { AttemptSnapshot, RunSummary } from '../../../runner/src/protocol/rpcFix.js';
import type { Usage } from '../../../runner/src/protocol/usage.js';
import { FixRequestSchema, FixStartParamsSchema } from '../../../runner/src/protocol/fixRequest.js';
import { anthropicUsage } from '../../../runner/src/repair/models/anthropicModel.js';
import { reportedCount } from '../../../runner/src/repair/models/httpModel.js';
import { parseReplayScript } from '../../../runner/src/repair/models/replayScript.js';
import { ReplayModel } from '../../../runner/src/repair/models/replayModel.js';
import { ModelPricesSchema, parsePricePairs, priceForModel } from '../../../runner/src/protocol/modelPrices.js';
import {
  addTurn,
  budgetBeforeTurn,
  costEstimate,
  isBudgetStop,
  NO_USAGE,
  RunTokenBudget,
  sumUsage,
  UNKNOWN_USAGE,
} from '../../../runner/src/repair/usage/usageAccounting.js';
import { cellTimes, storedPrice, usageOf, wallBetween } from '../../../runner/src/repair/usage/usageFigures.js';
import { describeTokens, formatTokens, shortTokens, usageLine } from '../../../runner/src/protocol/usageWords.js';
import { openStore } from '../../../runner/src/store/openStore.js';
import { RunStore } from '../../../runner/src/store/runStore.js';
import { attemptSnapshot } from '../../../runner/src/server/runSnapshots.js';
import { runEnding } from '../../../runner/src/repair/explainEnding.js';
import { attemptView, runView } from '../../../extension/src/views/presentation.js';
import { fixStartParams, priceParam } from '../../../extension/src/settings.js';

const PRICE = { input_per_mtok: 3, output_per_mtok: 15 };

describe('usage accounting (issue 31)', () => {
  it('sums input and output apart; a turn without figures is unknown, not 0; one side reported counts', () => {
    let t = addTurn(NO_USAGE, { input: 1000, output: 200, estimated: false });
    t = addTurn(t, UNKNOWN_USAGE);
    t = addTurn(t, { input: 50, output: null, estimated: false });
    assert.deepEqual(t, { turns: 3, input_tokens: 1050, output_tokens: 200, unknown_turns: 1, estimated: false });
    const est = addTurn(NO_USAGE, { input: 10, output: 5, estimated: true });
    assert.equal(sumUsage([t, est]).estimated, true);
    assert.deepEqual(sumUsage([t, est]), { turns: 4, input_tokens: 1060, output_tokens: 205, unknown_turns: 1, estimated: true });
    assert.deepEqual(sumUsage([]), NO_USAGE);
    // An unknown turn is not "estimated".
    assert.equal(addTurn(NO_USAGE, { ...UNKNOWN_USAGE, estimated: true }).estimated, false);
  });

  it("a cost only with a price, in the price's units per million tokens", () => {
    assert.equal(costEstimate({ input_tokens: 2500, output_tokens: 300 }, PRICE), 0.012);
    assert.equal(costEstimate({ input_tokens: 2500, output_tokens: 300 }, null), null);
    assert.equal(costEstimate({ input_tokens: 2500, output_tokens: 300 }, undefined), null);
    assert.equal(costEstimate({ input_tokens: 0, output_tokens: 0 }, PRICE), 0);
  });

  it("budgets are checked before a turn on input + output: the attempt's own first, then the run's shared one", () => {
    assert.equal(budgetBeforeTurn(0, 5000, 0, null), null);
    assert.equal(budgetBeforeTurn(4999, 5000, 0, null), null);
    assert.equal(budgetBeforeTurn(5000, 5000, 0, null), 'tokens');
    assert.equal(budgetBeforeTurn(100, 5000, 7000, 7000), 'run_tokens');
    assert.equal(budgetBeforeTurn(6000, 5000, 7000, 7000), 'tokens');
    assert.equal(budgetBeforeTurn(100, 5000, 6999, 7000), null);
    assert.equal(budgetBeforeTurn(100, 5000, 1e9, undefined), null);
    const run = new RunTokenBudget(7000, 3000);
    run.add(4000);
    assert.equal(run.used, 7000);
    assert.equal(budgetBeforeTurn(0, 5000, run.used, run.max), 'run_tokens');
    assert.ok(isBudgetStop('tokens') && isBudgetStop('run_tokens'));
    assert.ok(!isBudgetStop('max_turns') && !isBudgetStop('deadline') && !isBudgetStop(null));
  });

  it("times: an attempt's wall time runs to now while it goes on; cell time per attempt and for all", () => {
    assert.equal(wallBetween('2026-01-01T00:00:00.000Z', '2026-01-01T00:00:41.000Z', 0), 41_000);
    assert.equal(wallBetween('2026-01-01T00:00:00.000Z', null, Date.parse('2026-01-01T00:00:05.000Z')), 5000);
    assert.equal(wallBetween(null, null, 0), null);
    const times = cellTimes([
      { attempt_idx: null, duration_ms: 1000 },
      { attempt_idx: 0, duration_ms: 200 },
      { attempt_idx: 0, duration_ms: 300 },
      { attempt_idx: 1, duration_ms: 50 },
    ]);
    assert.equal(times.all, 1550);
    assert.equal(times.byAttempt.get(0), 500);
    assert.equal(times.byAttempt.get(2), undefined);
  });

  it('words: honest about unknown and estimated tokens', () => {
    assert.equal(formatTokens(999), '999');
    assert.equal(formatTokens(12_400), '12k');
    assert.equal(formatTokens(1_234), '1.2k');
    const u: Usage = usageOf(
      41_000,
      12_000,
      { turns: 3, input_tokens: 11_000, output_tokens: 1_400, unknown_turns: 0, estimated: false },
      PRICE,
    );
    assert.equal(shortTokens(u), '12k tok');
    assert.equal(usageLine(u), '41 s (cells 12 s), 3 turns, 11k in / 1.4k out, cost ~0.05');
    assert.equal(describeTokens({ turns: 2, input_tokens: 0, output_tokens: 0, unknown_turns: 2, estimated: false }), 'tokens unknown');
    assert.equal(shortTokens({ ...u, unknown_turns: 3 }), '? tok');
    assert.equal(shortTokens({ ...u, estimated: true, unknown_turns: 1 }), '~12k+? tok');
  });

  it("model endpoints' counts are untrusted: only non-negative whole numbers; Anthropic cache tokens count as input", () => {
    assert.equal(reportedCount(12), 12);
    for (const bad of [-1, 1.5, '12', null, undefined, Number.NaN, 2 ** 60]) assert.equal(reportedCount(bad), null);
    assert.deepEqual(anthropicUsage({ input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 7 }), {
      input: 117,
      output: 5,
      estimated: false,
    });
    assert.deepEqual(anthropicUsage(undefined), UNKNOWN_USAGE);
  });

  it('the replay format carries usage per turn, validated: non-negative whole numbers, bounded, nothing else', async () => {
    const ok = parseReplayScript(
      JSON.stringify({ version: 1, attempts: [[{ content: 'hi', usage: { input: 7, output: 3 } }, { content: 'no usage' }]] }),
      'r.json',
    );
    const model = new ReplayModel('replay:r.json', ok);
    const req = { attemptIndex: 0, temperature: 0, messages: [] };
    assert.deepEqual((await model.reply({ ...req, turnIndex: 0 })).usage, { input: 7, output: 3, estimated: false });
    assert.deepEqual((await model.reply({ ...req, turnIndex: 1 })).usage, UNKNOWN_USAGE);
    for (const usage of [
      { input: -1, output: 0 },
      { input: 1.5, output: 0 },
      { input: 1e12, output: 0 },
      { input: 1 },
      { input: 1, output: 1, cost: 2 },
      'lots',
    ])
      assert.throws(
        () => parseReplayScript(JSON.stringify({ version: 1, attempts: [[{ content: 'x', usage }]] }), 'bad.json'),
        /replay file bad\.json/,
        JSON.stringify(usage),
      );
  });

  it('prices: input=N,output=M or a map by model (whole spec, else the name after the provider); bad input refused', () => {
    assert.deepEqual(parsePricePairs('input=3,output=15'), PRICE);
    assert.deepEqual(parsePricePairs(' output = 15 , input=3 '), PRICE);
    assert.equal(parsePricePairs('prices.json'), null);
    for (const bad of ['input=3', 'input=-1,output=2', 'input=x,output=2', 'in=3,output=2', 'input=3=4,output=1'])
      assert.ok('error' in (parsePricePairs(bad) as object), bad);
    const map = ModelPricesSchema.parse({
      'anthropic:claude-sonnet-4': { inputPerMTok: 3, outputPerMTok: 15 },
      'gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10 },
    });
    assert.deepEqual(priceForModel(map, 'anthropic:claude-sonnet-4'), PRICE);
    assert.deepEqual(priceForModel(map, 'openai:gpt-4o'), { input_per_mtok: 2.5, output_per_mtok: 10 });
    assert.equal(priceForModel(map, 'openai:gpt-5'), null);
    assert.equal(priceForModel(map, 'toString'), null, 'no prototype keys');
    assert.equal(ModelPricesSchema.safeParse({ m: { inputPerMTok: -1, outputPerMTok: 1 } }).success, false);
    assert.equal(ModelPricesSchema.safeParse({ m: { inputPerMTok: 1, outputPerMTok: 1, currency: 'x' } }).success, false);
    // The request takes a price and a run budget over fix/start; a stored price is read back checked.
    assert.ok(FixStartParamsSchema.safeParse({ repo: '/r', issue: 'x', model: 'm', max_run_tokens: 1000, price: PRICE }).success);
    assert.equal(FixRequestSchema.safeParse({ repo: '/r', issue: 'x', model: 'm', max_run_tokens: 0 }).success, false);
    assert.deepEqual(storedPrice(JSON.stringify({ price: PRICE })), PRICE);
    assert.equal(storedPrice(JSON.stringify({ price: { input_per_mtok: -3, output_per_mtok: 1 } })), null);
    assert.equal(storedPrice('{'), null);
  });

  it("the editor sends the chosen model's price and the run budget; a malformed setting sends none", () => {
    const settings = {
      attempts: 3,
      provider: 'host' as const,
      image: '',
      testCommand: '',
      model: 'anthropic:claude-sonnet-4',
      maxTurns: 30,
      cellTimeout: 300,
    };
    const prices = { 'claude-sonnet-4': { inputPerMTok: 3, outputPerMTok: 15 } };
    const p = fixStartParams({ ...settings, maxRunTokens: 50_000, modelPrices: prices }, '/r', 'x', 'anthropic:claude-sonnet-4');
    assert.deepEqual(p.price, PRICE);
    assert.equal(p.max_run_tokens, 50_000);
    assert.ok(FixStartParamsSchema.safeParse(p).success);
    const none = fixStartParams({ ...settings, maxRunTokens: 0, modelPrices: { x: 'cheap' } }, '/r', 'x', 'm');
    assert.equal(none.price, undefined);
    assert.equal(none.max_run_tokens, undefined);
    assert.deepEqual(priceParam(undefined, 'vscode-lm'), {});
  });

  it('the store keeps usage per turn; turns of older runs (no figures) read as unknown; a budget stop shows as "budget"', () => {
    const store = new RunStore(openStore(':memory:'));
    store.createRun(
      {
        id: 'r1',
        repo: '/r',
        base_commit: 'b',
        issue: 'i',
        test_cmd: 't',
        provider: 'host',
        image: '',
        model: 'm',
        attempts: 2,
        runner_pid: 1,
        install_cmd: null,
      },
      [0, 0.7],
    );
    store.recordTurn('r1', 0, 0, {}, [], { input: 100, output: 20, estimated: false });
    store.recordTurn('r1', 0, 1, {}, [], { input: 200, output: 30, estimated: true });
    store.recordTurn('r1', 1, 0, {}, [], UNKNOWN_USAGE);
    const usage = store.attemptUsage('r1');
    assert.deepEqual(usage.get(0), { turns: 2, input_tokens: 300, output_tokens: 50, unknown_turns: 0, estimated: true });
    assert.deepEqual(usage.get(1), { turns: 1, input_tokens: 0, output_tokens: 0, unknown_turns: 1, estimated: false });
    store.finishAttempt('r1', 0, { verdict: { green: false }, patch: Buffer.from('x'), turns: 2, tokens: 350, stop: 'tokens' });
    // The verdict itself is not what this checks.
    const row = { ...store.attempts('r1')[0]!, verdict_json: null };
    assert.equal(row.stop, 'tokens');
    assert.equal(row.status, 'finished', 'judged and kept like any finished attempt');
    assert.equal(attemptSnapshot(row, null, 2).status, 'budget');
    assert.equal(attemptSnapshot({ ...row, stop: 'max_turns' }, null, 2).status, 'finished');
  });
});

describe('a budget stop in the ending (issue 31)', () => {
  it('a run not fixed says which attempt its budget stopped', () => {
    const ending = runEnding({
      status: 'not_fixed',
      winner: null,
      best: null,
      ground_truth: null,
      attempts: [
        { index: 0, status: 'budget', stop: 'run_tokens', verdict: null, error: null },
        { index: 1, status: 'failed', stop: null, verdict: null, error: 'model endpoint unreachable' },
      ] as never,
    });
    assert.match(ending, /attempt 0: stopped by the run's token budget, /);
    assert.doesNotMatch(ending, /attempt 1: stopped by/);
  });
});

describe('time and tokens in the Attempts view (issue 31)', () => {
  const usage: Usage = {
    wall_ms: 41_000,
    cell_ms: 12_000,
    turns: 3,
    input_tokens: 11_000,
    output_tokens: 1_400,
    unknown_turns: 0,
    estimated: false,
    cost: null,
  };
  const attempt = (over: Partial<AttemptSnapshot>): AttemptSnapshot => ({
    index: 0,
    attempt_id: 'r-a0',
    temperature: 0,
    status: 'finished',
    turns: 3,
    tokens: 12_400,
    green: true,
    passed: 4,
    failed: 0,
    diff_size: 2,
    winner: false,
    error: null,
    agrees_with: [],
    rank: null,
    reason: null,
    could_not_run: null,
    usage,
    ...over,
  });

  it('an attempt: "green · 3 turns · 12k tok · 41 s"; its tooltip has the whole line', () => {
    const v = attemptView(attempt({}));
    assert.equal(v.description, 'green · 3 turns · 12k tok · 41 s · 2 lines');
    assert.match(v.tooltip, /41 s \(cells 12 s\), 3 turns, 11k in \/ 1\.4k out/);
    // While it runs the time is not shown (it grows), its tokens are.
    assert.equal(attemptView(attempt({ status: 'running', green: null })).description, 'running · 3 turns · 12k tok');
    // Older runners send no usage.
    assert.equal(attemptView(attempt({ usage: undefined })).description, 'green · 3 turns · 2 lines');
  });

  it('"budget" is its own state: not an error, not red; its change can be reviewed', () => {
    const v = attemptView(attempt({ status: 'budget', green: false }), true);
    assert.match(v.description, /^budget · 3 turns · 12k tok · 41 s · 2 lines$/);
    assert.equal(v.icon, 'dashboard');
    assert.match(v.tooltip, /budget \(tokens spent; tests red\)/);
    assert.match(
      attemptView(attempt({ status: 'budget', stop: 'run_tokens', green: true })).tooltip,
      /budget \(the run's tokens spent; tests green\)/,
    );
    assert.equal(v.contextValue, 'attempt.changed.comparable');
  });

  it('the run node: its time and tokens once its snapshot is known', () => {
    const r: RunSummary = {
      run_id: 'run-1',
      status: 'fixed',
      created_at: '2026-01-01T10:00:00.000Z',
      updated_at: '',
      repo: '/r',
      base_commit: 'abcdef0123456789',
      issue_title: 'average is wrong',
      test_cmd: 'pytest',
      provider: 'host',
      image: '',
      model: 'replay:x',
      attempts: 3,
      winner_attempt: 0,
      review: 'pending',
      error: null,
      environment: null,
      ending: null,
    };
    const v = runView(r, new Date('2026-01-01T10:05:00.000Z'), 0, { ...usage, wall_ms: 95_000, cost: 0.05 });
    assert.match(v.description, /fixed · review · 3 on host · 12k tok · 1 min 35 s$/);
    assert.match(v.tooltip, /run: 1 min 35 s \(cells 12 s\), 3 turns, 11k in \/ 1\.4k out, cost ~0\.05/);
  });
});
