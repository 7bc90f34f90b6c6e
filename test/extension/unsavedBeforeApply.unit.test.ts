import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SAVE_AND_APPLY, saveUnsavedBeforeApply, unsavedInRepo, unsavedWarning } from '../../extension/src/review/unsavedBeforeApply.js';
import { fake, FakeTextDocument, Uri, workspace } from './fakes/vscode.js';

const doc = (uri: Uri, dirty = true) => {
  const d = new FakeTextDocument(uri, 'python', '');
  d.isDirty = dirty;
  return d;
};

describe('Apply with unsaved editors: which documents count and what the modal says', () => {
  it('counts dirty file: documents inside the repository only', () => {
    const docs = [
      doc(Uri.file('/r/calc.py')),
      doc(Uri.file('/r/src/a.py')),
      doc(Uri.file('/r/clean.py'), false),
      doc(Uri.file('/other/calc.py')),
      doc(Uri.file('/r2/calc.py')), // a sibling whose name starts like the repo's
      doc(Uri.from({ scheme: 'untitled', path: 'Untitled-1' })),
      doc(Uri.from({ scheme: 'forge-review', path: '/r/calc.py' })),
      doc(Uri.file('/r')), // the repository itself is not a file of it
    ];
    assert.deepEqual(
      unsavedInRepo(docs, '/r').map((u) => u.path),
      ['calc.py', 'src/a.py'],
    );
    // A trailing slash or a dotted path names the same repository.
    assert.deepEqual(
      unsavedInRepo(docs, '/x/../r/').map((u) => u.path),
      ['calc.py', 'src/a.py'],
    );
  });

  it('when the apply names its files, only those count', () => {
    const docs = [doc(Uri.file('/r/calc.py')), doc(Uri.file('/r/src/a.py')), doc(Uri.file('/r/notes.md'))];
    assert.deepEqual(
      unsavedInRepo(docs, '/r', ['src/a.py', './calc.py']).map((u) => u.path),
      ['calc.py', 'src/a.py'],
    );
    assert.deepEqual(unsavedInRepo(docs, '/r', []), []);
  });

  it('resolves symlinks so a document opened through a link matches its repository', () => {
    const dir = mkdtempSync(join(tmpdir(), 'forge-unsaved-'));
    try {
      mkdirSync(join(dir, 'repo'));
      writeFileSync(join(dir, 'repo', 'calc.py'), '');
      symlinkSync(join(dir, 'repo'), join(dir, 'link'));
      const real = (p: string) => realpathSync(p);
      assert.deepEqual(
        unsavedInRepo([doc(Uri.file(join(dir, 'link', 'calc.py')))], join(dir, 'repo'), undefined, real).map((u) => u.path),
        ['calc.py'],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names at most three files, then how many more', () => {
    assert.equal(
      unsavedWarning(['calc.py']),
      'calc.py has unsaved changes. Forge applies to the files on disk: save them first so the attempt is merged with your edits.',
    );
    assert.match(unsavedWarning(['a', 'b']), /^a, b have unsaved changes\./);
    assert.match(unsavedWarning(['a', 'b', 'c', 'd', 'e']), /^a, b, c and 2 more have unsaved changes\./);
  });
});

describe('Apply with unsaved editors: the modal and the saves (fake VS Code)', () => {
  beforeEach(() => fake.reset());

  const open = (...docs: FakeTextDocument[]) => workspace.textDocuments.push(...docs);

  it('nothing unsaved in the repository: no modal, no lookup of the files, the apply goes on', async () => {
    open(doc(Uri.file('/other/calc.py')), doc(Uri.file('/r/calc.py'), false));
    let asked = false;
    const ok = await saveUnsavedBeforeApply('/r', async () => {
      asked = true;
      return ['calc.py'];
    });
    assert.equal(ok, true);
    assert.equal(asked, false);
    assert.deepEqual(fake.messages, []);
  });

  it('an unsaved file the apply does not touch: no modal', async () => {
    open(doc(Uri.file('/r/notes.md')));
    assert.equal(await saveUnsavedBeforeApply('/r', async () => ['calc.py']), true);
    assert.deepEqual(fake.messages, []);
  });

  it('Save and Apply saves exactly the unsaved files the apply touches, then goes on', async () => {
    const calc = doc(Uri.file('/r/calc.py'));
    const notes = doc(Uri.file('/r/notes.md'));
    open(calc, notes);
    fake.messageAnswers.push(SAVE_AND_APPLY);
    assert.equal(await saveUnsavedBeforeApply('/r', async () => ['calc.py']), true);
    assert.equal(fake.messages.length, 1);
    assert.equal(fake.messages[0]!.level, 'warning');
    assert.match(fake.messages[0]!.text, /^calc\.py has unsaved changes\. Forge applies to the files on disk/);
    assert.deepEqual(fake.messages[0]!.items, [SAVE_AND_APPLY]);
    assert.equal(calc.isDirty, false, 'saved');
    assert.equal(notes.isDirty, true, 'a file the apply does not touch is left unsaved');
  });

  it('Cancel (or the modal closed) applies nothing and saves nothing', async () => {
    const calc = doc(Uri.file('/r/calc.py'));
    open(calc);
    fake.messageAnswers.push(undefined);
    assert.equal(await saveUnsavedBeforeApply('/r', ['calc.py']), false);
    assert.equal(calc.isDirty, true);
  });

  it('a save that fails stops the apply with an error naming the file', async () => {
    const a = doc(Uri.file('/r/a.py'));
    const b = doc(Uri.file('/r/b.py'));
    b.saveFails = true;
    open(a, b);
    fake.messageAnswers.push(SAVE_AND_APPLY);
    assert.equal(await saveUnsavedBeforeApply('/r'), false);
    const error = fake.messages.find((m) => m.level === 'error');
    assert.ok(error);
    assert.match(error.text, /could not save b\.py; nothing was applied/);
  });

  it('the file lookup failing falls back to every unsaved file of the repository', async () => {
    open(doc(Uri.file('/r/notes.md')));
    fake.messageAnswers.push(undefined);
    assert.equal(await saveUnsavedBeforeApply('/r', () => Promise.reject(new Error('gone'))), false);
    assert.match(fake.messages[0]!.text, /^notes\.md has unsaved changes/);
  });
});
