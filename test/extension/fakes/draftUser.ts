import { waitFor } from '../../helpers/waitFor.js';
import { fake, FakeTextDocument, window } from './vscode.js';

/** Runs a registered command the way VS Code would (the guard inside catches and shows failures). */
export function runCommand(id: string, ...args: unknown[]): Promise<unknown> {
  const f = fake.commands.get(id);
  if (!f) throw new Error(`command ${id} not registered`);
  return f(...args) as Promise<unknown>;
}

/** Fix Issue in Cells up to its issue draft: "Write or paste the issue…" picked, the draft open and active. */
export async function openIssueDraft(): Promise<{ flow: Promise<unknown>; draft: FakeTextDocument }> {
  fake.quickPickAnswers.push((items) => items.find((i) => /Write or paste the issue/.test(i.label)));
  const flow = runCommand('forge.fixIssue');
  const draft = await waitFor(
    () => {
      const doc = window.activeTextEditor?.document;
      return doc instanceof FakeTextDocument && doc.uri.scheme === 'untitled' && !doc.isClosed ? doc : undefined;
    },
    30_000,
    'the issue draft to open',
  );
  return { flow, draft };
}

/** The user writes `issue` where the cursor is (the draft's first line) and presses Start Fix in its title bar; the flow goes on. */
export async function writeIssueAndStart(draft: FakeTextDocument, issue: string): Promise<void> {
  fake.typeInActiveEditor(`${issue}${draft.getText()}`);
  await runCommand('forge.startFixFromEditor', draft.uri);
}

/** The whole of it: Fix Issue in Cells with `issue` written in the draft; resolves when the run's flow ends. */
export async function fixIssueWrittenInDraft(issue: string): Promise<unknown> {
  const { flow, draft } = await openIssueDraft();
  await writeIssueAndStart(draft, issue);
  return flow;
}
