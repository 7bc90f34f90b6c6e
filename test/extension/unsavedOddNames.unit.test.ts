import assert from 'node:assert/strict';
import { SAVE_AND_APPLY, saveUnsavedBeforeApply, unsavedInRepo } from '../../extension/src/review/unsavedBeforeApply.js';
import { fake, FakeTextDocument, Uri, workspace } from './fakes/vscode.js';

const dirty = (path: string) => {
  const d = new FakeTextDocument(Uri.file(path), 'python', '');
  d.isDirty = true;
  return d;
};

/**
 * Red team (issue 31): a file of the repository whose name starts with two dots (`..env.py`,
 * a folder `...`) is inside it: the guard must not take it for a path out of the repository,
 * or Apply writes under its unsaved editor.
 */
describe('Apply with unsaved editors: names that start with ".."', () => {
  it('counts ..env.py and .../x.py inside the repository, not ../r2/x.py', () => {
    const docs = [dirty('/r/..env.py'), dirty('/r/.../x.py'), dirty('/r2/x.py'), dirty('/x.py')];
    assert.deepEqual(
      unsavedInRepo(docs, '/r').map((u) => u.path),
      ['..env.py', '.../x.py'],
    );
    assert.deepEqual(
      unsavedInRepo(docs, '/r', ['..env.py']).map((u) => u.path),
      ['..env.py'],
    );
  });
});

/**
 * Red team (issue 31): a notebook (.ipynb) with unsaved cells is no text document (its cells
 * are vscode-notebook-cell: documents): the guard must ask about it too, or an attempt that
 * changes the notebook is applied under its unsaved editor.
 */
describe('Apply with unsaved editors: notebooks', () => {
  beforeEach(() => fake.reset());
  afterEach(() => {
    delete (workspace as { notebookDocuments?: unknown }).notebookDocuments;
  });

  it('an unsaved notebook the apply touches is named and saved by Save and Apply', async () => {
    const notebook = {
      uri: Uri.file('/r/analysis.ipynb'),
      isDirty: true,
      isUntitled: false,
      save: async () => {
        notebook.isDirty = false;
        return true;
      },
    };
    (workspace as { notebookDocuments?: unknown }).notebookDocuments = [notebook];
    fake.messageAnswers.push(SAVE_AND_APPLY);
    assert.equal(await saveUnsavedBeforeApply('/r', async () => ['analysis.ipynb']), true);
    assert.equal(fake.messages.length, 1, 'the modal names the notebook');
    assert.match(fake.messages[0]!.text, /^analysis\.ipynb has unsaved changes/);
    assert.equal(notebook.isDirty, false, 'saved before the apply');
  });
});
