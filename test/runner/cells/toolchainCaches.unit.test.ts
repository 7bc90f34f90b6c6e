import assert from 'node:assert/strict';
import { goBuildCacheDir, toolchainCaches } from '../../../runner/src/cells/cellWorktree.js';

describe("the user's toolchain caches a cell may read", () => {
  it("finds the Go build cache where go itself does: $GOCACHE, else the user's cache directory", () => {
    assert.equal(goBuildCacheDir({ GOCACHE: '/srv/gocache', HOME: '/home/me' }), '/srv/gocache');
    assert.equal(goBuildCacheDir({ XDG_CACHE_HOME: '/home/me/.xdg', HOME: '/home/me' }), '/home/me/.xdg/go-build');
    assert.equal(goBuildCacheDir({ HOME: '/home/me' }), '/home/me/.cache/go-build');
  });

  it('has none when the cache is off or nothing says where it is (never a relative path or /)', () => {
    assert.equal(goBuildCacheDir({ GOCACHE: 'off', HOME: '/home/me' }), null);
    assert.equal(goBuildCacheDir({}), null);
    assert.equal(goBuildCacheDir({ HOME: '/' }), null);
    // A relative GOCACHE is not go's either (go refuses it): the default stands.
    assert.equal(goBuildCacheDir({ GOCACHE: 'cache', HOME: '/home/me' }), '/home/me/.cache/go-build');
    assert.equal(goBuildCacheDir({ XDG_CACHE_HOME: 'rel', HOME: '/home/me' }), '/home/me/.cache/go-build');
  });

  it('lets the Go build cache through the home-directory rule beside the module cache', () => {
    const allowed = toolchainCaches({ HOME: '/root' });
    assert.ok(allowed.includes('/root/.cache/go-build'));
    assert.ok(allowed.includes('/root/go/pkg/mod'));
    // Whole paths only: never a prefix that would open the home directory (or /) to shares.
    assert.ok(
      allowed.every((p) => p.startsWith('/root/') && p.length > '/root/'.length),
      allowed.join(' '),
    );
  });
});
