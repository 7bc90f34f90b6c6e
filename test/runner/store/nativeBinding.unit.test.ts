import assert from 'node:assert/strict';
import { chooseNativeBinding, nativeAbiProblem, nativeBindingOptions } from '../../../runner/src/store/nativeBinding.js';

describe('native binding choice (better-sqlite3 build per Node ABI)', () => {
  const shipped = {
    abis: [
      { modules: '115', node: '20', file: 'build/abi-115/better_sqlite3.node' },
      { modules: '127', node: '22', file: 'build/abi-127/better_sqlite3.node' },
      { modules: '137', node: '24', file: 'build/abi-137/better_sqlite3.node' },
    ],
  };

  it('a packaged runner takes the build for its own ABI', () => {
    assert.deepEqual(chooseNativeBinding(shipped, '127', '22.12.0'), { ok: true, file: 'build/abi-127/better_sqlite3.node' });
    assert.deepEqual(chooseNativeBinding(shipped, '137', '24.1.0'), { ok: true, file: 'build/abi-137/better_sqlite3.node' });
  });

  it('another Node is refused in one line naming the supported versions and the setting', () => {
    const choice = chooseNativeBinding(shipped, '147', '26.0.0');
    assert.equal(choice.ok, false);
    const message = (choice as { message: string }).message;
    assert.equal(message.split('\n').length, 1);
    assert.match(
      message,
      /this is Node 26\.0\.0 \(ABI 147\), but its SQLite module is shipped for Node 20, 22 or 24 \(ABI 115, 127, 137\)/,
    );
    assert.match(message, /forge\.runner\.nodePath/);
  });

  it('without the shipped list (a dev checkout) better-sqlite3 loads its default build', () => {
    assert.deepEqual(chooseNativeBinding(null, '147', '26.0.0'), { ok: true, file: null });
    assert.equal(nativeAbiProblem(), null);
    assert.deepEqual(nativeBindingOptions(), {});
  });
});
