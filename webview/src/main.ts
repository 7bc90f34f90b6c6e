import { css, html, LitElement, nothing, type TemplateResult } from 'lit';
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-collapsible/index.js';
import '@vscode-elements/elements/dist/vscode-divider/index.js';
import '@vscode-elements/elements/dist/vscode-icon/index.js';
import '@vscode-elements/elements/dist/vscode-table/index.js';
import '@vscode-elements/elements/dist/vscode-table-body/index.js';
import '@vscode-elements/elements/dist/vscode-table-cell/index.js';
import '@vscode-elements/elements/dist/vscode-table-header/index.js';
import '@vscode-elements/elements/dist/vscode-table-header-cell/index.js';
import '@vscode-elements/elements/dist/vscode-table-row/index.js';
import { ansiText } from './ansiText.js';
import { formatCost, formatDuration, formatTokens, usageTokens } from '../../runner/src/protocol/usageWords.js';
import type {
  AttemptActionName,
  AttemptActionStates,
  AttemptDetailsData,
  DetailsMessage,
  DetailsPageMessage,
  InstanceDetailsData,
} from '../../runner/src/protocol/webviewMessages.js';

/**
 * Attempt details and Instance details. The extension posts `{kind, data}` (the runner's
 * attempts/details or instances/status + history answers); this page only renders it.
 * Colors and fonts come from the theme's CSS variables.
 */
declare function acquireVsCodeApi(): { postMessage(message: DetailsPageMessage): void };

type AttemptData = AttemptDetailsData;
type Verdict = NonNullable<AttemptData['verdict']>;

const shared = css`
  :host {
    display: block;
    font-family: var(--vscode-font-family);
    font-size: var(--vscode-font-size);
    color: var(--vscode-foreground);
    padding: 0 16px 24px;
  }
  h1 {
    font-size: 1.4em;
    font-weight: 600;
    margin: 16px 0 4px;
    display: flex;
    gap: 8px;
    align-items: center;
  }
  h2 {
    font-size: 1.1em;
    font-weight: 600;
    margin: 20px 0 8px;
  }
  .sub {
    color: var(--vscode-descriptionForeground);
    margin-bottom: 12px;
  }
  .facts {
    display: grid;
    grid-template-columns: max-content 1fr;
    gap: 4px 16px;
  }
  .facts dt {
    color: var(--vscode-descriptionForeground);
  }
  .facts dd {
    margin: 0;
  }
  pre {
    font-family: var(--vscode-editor-font-family);
    font-size: var(--vscode-editor-font-size);
    background: var(--vscode-textCodeBlock-background);
    padding: 8px;
    overflow: auto;
    max-height: 320px;
    white-space: pre-wrap;
    word-break: break-word;
    margin: 4px 0;
  }
  .ok {
    color: var(--vscode-testing-iconPassed);
  }
  .bad {
    color: var(--vscode-testing-iconFailed);
  }
  .warn {
    color: var(--vscode-editorWarning-foreground);
  }
  .stopped {
    color: var(--vscode-disabledForeground);
  }
  .call {
    margin: 6px 0 10px;
  }
  .tool {
    font-weight: 600;
  }
  vscode-collapsible {
    margin-bottom: 4px;
  }
  .actions {
    display: flex;
    flex-wrap: wrap;
    gap: 8px;
    margin: 8px 0 12px;
  }
`;

type PostMessage = (message: DetailsPageMessage) => void;

class ForgeDetails extends LitElement {
  static override styles = shared;
  static override properties = { message: { state: true } };
  // `declare`: a class field would shadow Lit's reactive accessor (useDefineForClassFields).
  declare message: DetailsMessage | null;

  constructor() {
    super();
    this.message = null;
  }

  /** acquireVsCodeApi may be called once per page. */
  private post: PostMessage = () => undefined;

  override connectedCallback(): void {
    super.connectedCallback();
    window.addEventListener('message', (e: MessageEvent<DetailsMessage>) => {
      this.message = e.data;
    });
    const api = acquireVsCodeApi();
    this.post = (m) => api.postMessage(m);
    this.post({ type: 'ready' });
  }

  override render(): TemplateResult {
    if (!this.message) return html`<p class="sub">Loading…</p>`;
    return this.message.kind === 'attempt'
      ? renderAttempt(this.message.data, this.message.actions, this.post)
      : renderInstance(this.message.data);
  }
}

/** "41 s (cells 12 s)". */
function usageTime(u: NonNullable<AttemptData['attempt']['usage']>): string {
  return `${u.wall_ms === null ? 'unknown' : formatDuration(u.wall_ms)} (cells ${formatDuration(u.cell_ms)})`;
}

/** " · 1.2k in / 80 out" for a turn whose endpoint reported usage. */
function turnTokens(t: AttemptData['turns'][number]): string {
  if (t.input_tokens == null && t.output_tokens == null) return '';
  return ` · ${formatTokens(t.input_tokens ?? 0)} in / ${formatTokens(t.output_tokens ?? 0)} out`;
}

const BUTTONS: readonly { action: AttemptActionName; label: string; icon: string; secondary: boolean }[] = [
  { action: 'viewDiff', label: 'View Diff', icon: 'diff', secondary: false },
  { action: 'apply', label: 'Apply', icon: 'check', secondary: false },
  { action: 'applyPart', label: 'Apply Part…', icon: 'checklist', secondary: true },
  { action: 'compareWithWinner', label: 'Compare with Winner', icon: 'diff-multiple', secondary: true },
];

/** The attempt's actions: the extension says which apply (and checks again when one is pressed). */
function renderActions(actions: AttemptActionStates | undefined, post: PostMessage): TemplateResult | typeof nothing {
  if (!actions) return nothing;
  const shown = BUTTONS.filter((b) => actions[b.action].show);
  return html`<div class="actions" data-testid="attempt-actions">
    ${shown.map(
      (b) =>
        html`<vscode-button
          data-action=${b.action}
          icon=${b.icon}
          ?secondary=${b.secondary}
          ?disabled=${actions[b.action].why !== null}
          title=${actions[b.action].why ?? ''}
          @click=${() => {
            if (actions[b.action].why === null) post({ type: 'action', action: b.action });
          }}
          >${b.label}</vscode-button
        >`,
    )}
  </div>`;
}

function renderAttempt(d: AttemptData, actions: AttemptActionStates | undefined, post: PostMessage): TemplateResult {
  const a = d.attempt;
  const state =
    a.status !== 'finished'
      ? a.status
      : a.winner
        ? 'winner'
        : a.green
          ? a.provisional
            ? 'green so far'
            : 'green'
          : a.could_not_run
            ? 'could not run'
            : 'red';
  return html`
    <h1 data-testid="attempt-title">Attempt ${a.index} <vscode-badge variant=${a.green ? 'counter' : 'default'}>${state}</vscode-badge></h1>
    <div class="sub">${d.run.issue_title} · started ${new Date(d.run.created_at).toLocaleString()}</div>
    ${renderActions(actions, post)}
    <dl class="facts">
      <dt>Temperature</dt>
      <dd>${a.temperature}</dd>
      <dt>Turns</dt>
      <dd data-testid="turns">${a.turns}</dd>
      ${
        a.usage
          ? html`<dt>Time</dt>
              <dd data-testid="time">${usageTime(a.usage)}</dd>
              <dt>Tokens</dt>
              <dd data-testid="tokens">
                ${usageTokens(a.usage)}${a.usage.cost !== null ? ` · ${formatCost(a.usage.cost)} at your prices` : ''}
              </dd>`
          : nothing
      }
      ${
        a.status === 'budget'
          ? html`<dt>Budget</dt>
              <dd data-testid="budget">
                ${a.stop === 'run_tokens' ? "The run's token budget (shared by its attempts) ran out" : 'Its token budget ran out'} before
                another turn; what it made was judged and is kept for review.
              </dd>`
          : nothing
      }
      <dt>Diff</dt>
      <dd>
        ${a.diff_lines ? `+${a.diff_lines.added} −${a.diff_lines.removed} lines` : `${a.diff_size} changed lines`}${a.agrees_with.length > 0 ? ` · the same change as attempt ${a.agrees_with.join(', ')}` : ''}
      </dd>
      <dt>Model</dt>
      <dd>${d.run.model}</dd>
      <dt>Cells</dt>
      <dd>${d.run.provider}</dd>
      <dt>Run id</dt>
      <dd data-testid="run-id"><code>${d.run.run_id}</code></dd>
      ${
        a.error
          ? html`<dt>Error</dt>
              <dd class="bad">${a.error}</dd>`
          : nothing
      }
    </dl>
    <h2>Verdict</h2>
    ${d.verdict ? renderVerdict(d.verdict, d.run.test_cmd) : html`<p class="sub">No verdict (the attempt did not finish).</p>`}
    ${
      (a.review_warnings ?? []).length
        ? html`<div data-testid="review-warnings" class="warn">${(a.review_warnings ?? []).map((w) => html`<div>Note: ${w}</div>`)}</div>`
        : nothing
    }
    ${
      (d.generated ?? []).length > 0
        ? html`<div data-testid="generated" class="sub">
            Left out of its patch (generated, a tool marked it as its cache): ${(d.generated ?? []).join(', ')}
          </div>`
        : nothing
    }
    ${
      d.ranking.length > 0
        ? html`<h2>Ranking</h2>
            <ul data-testid="ranking">
              ${d.ranking.map((line) => html`<li>${line}</li>`)}
            </ul>`
        : nothing
    }
    <h2>Turns</h2>
    ${
      d.turns.length === 0
        ? html`<p class="sub">No model turns recorded.</p>`
        : d.turns.map(
            (t) =>
              html` <vscode-collapsible
                title="Turn ${t.turn + 1}"
                description=${`${t.tool_calls.map((c) => c.tool).join(', ') || 'reply'}${turnTokens(t)}`}
                ?open=${d.turns.length <= 6}
              >
                ${t.content ? html`<pre>${t.content}</pre>` : nothing}
                ${t.tool_calls.map(
                  (c) =>
                    html`<div class="call">
                      <span class="tool">${c.tool}</span> <code>${JSON.stringify(c.arguments)}</code>
                      <pre>${ansiText(c.result)}</pre>
                    </div>`,
                )}
              </vscode-collapsible>`,
          )
    }
    <h2>Cell runs</h2>
    <vscode-table zebra bordered-rows>
      <vscode-table-header slot="header">
        <vscode-table-header-cell>Purpose</vscode-table-header-cell><vscode-table-header-cell>Command</vscode-table-header-cell>
        <vscode-table-header-cell>Exit</vscode-table-header-cell><vscode-table-header-cell>Duration</vscode-table-header-cell>
      </vscode-table-header>
      <vscode-table-body slot="body">
        ${d.cells.map(
          (c) =>
            html`<vscode-table-row>
              <vscode-table-cell>${cellPurpose(c, d.attempt.index)}</vscode-table-cell><vscode-table-cell>${c.command}</vscode-table-cell>
              ${
                // A cell the run's cancel killed: its exit code (137) is no verdict on what it ran.
                c.killed_by === 'cancel'
                  ? html`<vscode-table-cell class="stopped">cancelled</vscode-table-cell>`
                  : html`<vscode-table-cell class=${c.exit_code === 0 ? 'ok' : 'bad'}
                      >${c.running ? 'running' : c.exit_code}${c.killed_by ? ` (${c.killed_by})` : ''}</vscode-table-cell
                    >`
              }
              <vscode-table-cell>${c.duration_ms === null ? '' : `${(c.duration_ms / 1000).toFixed(1)} s`}</vscode-table-cell>
            </vscode-table-row>`,
        )}
      </vscode-table-body>
    </vscode-table>
    ${d.cells.filter((c) => c.log).map((c) => html`<vscode-collapsible title="Log: ${cellPurpose(c, d.attempt.index)}" description=${c.cell_id}><pre>${ansiText(c.log ?? '')}</pre></vscode-collapsible>`)}
  `;
}

/** A cell's purpose, and whose it is when another attempt's (the verdict of the same change this attempt took). */
function cellPurpose(c: { purpose: string; purpose_words?: string; attempt_index: number | null }, index: number): string {
  const words = c.purpose_words ?? c.purpose;
  return c.attempt_index !== null && c.attempt_index !== index ? `${words} of attempt ${c.attempt_index} (the same change)` : words;
}

function renderVerdict(v: Verdict, testCmd: string): TemplateResult {
  // Its test runner died before reporting: the counts are no test results, so none are shown.
  if (v.could_not_run)
    return html`<p data-testid="verdict" class="warn">
      the tests could not run: ${v.could_not_run} (exit ${v.exit_code}, twice; not ranked) · <code>${testCmd}</code>
    </p>`;
  return html` <p data-testid="verdict" class=${v.green ? 'ok' : 'bad'}>
      ${v.green ? (v.provisional ? 'green so far' : 'green') : 'red'}: ${v.passed} passed, ${v.failed} failed, ${v.skipped} skipped (exit
      ${v.exit_code}${v.framework ? `, ${v.framework}` : ''}) · <code>${testCmd}</code>
    </p>
    ${
      v.failing.filter((n) => !(v.failing_before ?? []).includes(n)).length
        ? html`<div>Failing: ${v.failing.filter((n) => !(v.failing_before ?? []).includes(n)).join(', ')}</div>`
        : nothing
    }
    ${
      (v.issue_tests ?? []).length && (v.failing_before ?? []).length
        ? html`<div data-testid="issue-tests">
            The issue's tests (${(v.issue_tests ?? []).every((n) => (v.fixed ?? []).includes(n)) ? 'all pass' : 'not all pass'}):
            ${(v.issue_tests ?? []).join(', ')}
          </div>`
        : nothing
    }
    ${
      (v.failing_before ?? []).length
        ? html`<div data-testid="failing-before" class="sub">
            ${
              v.provisional
                ? `Still failing as on the base commit: ${(v.failing_before ?? []).join(', ')}. Whether they are the issue's is known when every attempt has ended: if another attempt makes one of them pass, this one is red.`
                : `Failing before and after (not caused by this change): ${(v.failing_before ?? []).join(', ')}`
            }
          </div>`
        : nothing
    }
    ${
      v.regressions.length
        ? html`<div class="bad">
            Regressions: ${v.regressions.map((n) => ((v.new_failing ?? []).includes(n) ? `${n} (new test)` : n)).join(', ')}
          </div>`
        : nothing
    }
    ${
      !v.regressions_known && v.regressions_unknown
        ? html`<div data-testid="regressions-unknown">Regressions not known in full: ${v.regressions_unknown}.</div>`
        : nothing
    }
    ${
      v.reused_from
        ? html`<div data-testid="verdict-reused" class="sub">
            Verdict reused from ${v.reused_from}: the same tree was not tested twice.
          </div>`
        : nothing
    }
    ${
      v.targeted
        ? html`<div data-testid="verdict-targeted" class="sub">
            Red on the baseline's failing tests alone (${v.targeted.how}, ${v.targeted.seconds} s): ${v.targeted.still_failing.join(', ')}
            all failed again; the rest of the suite was not run.
          </div>`
        : nothing
    }`;
}

function renderInstance(d: InstanceDetailsData): TemplateResult {
  const s = d.status;
  return html` <h1>${s.instance_id} <vscode-badge>${s.cell?.state ?? 'unknown'}</vscode-badge></h1>
    <dl class="facts">
      <dt>Generation</dt>
      <dd>${s.cell?.generation ?? '-'}</dd>
      <dt>Observed</dt>
      <dd>${s.observation ? JSON.stringify(s.observation) : '-'}</dd>
    </dl>
    <h2>Pending operations</h2>
    ${
      s.open_operations.length === 0
        ? html`<p class="sub">None.</p>`
        : html`<ul>
            ${s.open_operations.map((o) => html`<li><code>${o.operation_id}</code> ${o.action} (gen ${o.generation}): ${o.status}</li>`)}
          </ul>`
    }
    <h2>Evidence</h2>
    <vscode-table zebra bordered-rows>
      <vscode-table-header slot="header">
        <vscode-table-header-cell>When</vscode-table-header-cell><vscode-table-header-cell>Event</vscode-table-header-cell>
        <vscode-table-header-cell>Transition</vscode-table-header-cell><vscode-table-header-cell>Operation</vscode-table-header-cell
        ><vscode-table-header-cell>Detail</vscode-table-header-cell>
      </vscode-table-header>
      <vscode-table-body slot="body">
        ${d.history.map(
          (e) =>
            html`<vscode-table-row>
              <vscode-table-cell>${new Date(e.at).toLocaleTimeString()}</vscode-table-cell><vscode-table-cell>${e.event}</vscode-table-cell>
              <vscode-table-cell>${e.from_state ?? ''}${e.to_state ? ` → ${e.to_state}` : ''}</vscode-table-cell>
              <vscode-table-cell>${e.operation_id ?? ''}</vscode-table-cell><vscode-table-cell>${e.detail ?? ''}</vscode-table-cell>
            </vscode-table-row>`,
        )}
      </vscode-table-body>
    </vscode-table>`;
}

customElements.define('forge-details', ForgeDetails);
