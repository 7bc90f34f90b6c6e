import assert from 'node:assert/strict';
import { unsavedInRepo } from '../../extension/src/review/unsavedBeforeApply.js';
import { FakeTextDocument, Uri } from './fakes/vscode.js';

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
