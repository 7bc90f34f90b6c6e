import assert from 'node:assert/strict';
import { type PathStep, untrustedStep } from '../../../runner/src/hostguard/pathTrust.js';

const dir = (path: string, uid: number, mode: number): PathStep => ({ path, uid, mode: 0o040000 | mode, dev: 1, ino: path.length });
const ROOT_ONLY = new Set([0]);

describe('untrustedStep: who could swap a directory on the way to a worktree', () => {
  it('a path of root-owned directories nobody else can write is trusted, whoever owns the worktree', () => {
    assert.equal(untrustedStep([dir('/', 0, 0o755), dir('/srv', 0, 0o755), dir('/srv/w', 1234, 0o777)], ROOT_ONLY), null);
  });

  it('a directory owned by another user is named, with its owner', () => {
    assert.deepEqual(
      untrustedStep([dir('/', 0, 0o755), dir('/home', 0, 0o755), dir('/home/al', 1000, 0o700), dir('/home/al/w', 0, 0o755)], ROOT_ONLY),
      {
        path: '/home/al',
        why: 'is owned by uid 1000',
      },
    );
  });

  it('a group- or world-writable directory without the sticky bit is named', () => {
    assert.match(
      untrustedStep([dir('/', 0, 0o755), dir('/srv', 0, 0o775), dir('/srv/w', 0, 0o755)], ROOT_ONLY)!.why,
      /writable by its group/,
    );
    assert.match(
      untrustedStep([dir('/', 0, 0o755), dir('/srv', 0, 0o757), dir('/srv/w', 0, 0o755)], ROOT_ONLY)!.why,
      /writable by other users/,
    );
  });

  it('a sticky world-writable directory (/tmp) is safe only for an entry a trusted user owns', () => {
    assert.equal(untrustedStep([dir('/', 0, 0o755), dir('/tmp', 0, 0o1777), dir('/tmp/w', 0, 0o700)], ROOT_ONLY), null);
    assert.deepEqual(untrustedStep([dir('/', 0, 0o755), dir('/tmp', 0, 0o1777), dir('/tmp/w', 1234, 0o700)], ROOT_ONLY), {
      path: '/tmp',
      why: 'is writable by other users and /tmp/w in it is owned by uid 1234',
    });
  });

  it('the runner trusts the users it is given (itself, the cell user of a root runner)', () => {
    const steps = [dir('/', 0, 0o755), dir('/tmp', 0, 0o1777), dir('/tmp/r', 65532, 0o700), dir('/tmp/r/w', 65532, 0o755)];
    assert.notEqual(untrustedStep(steps, ROOT_ONLY), null);
    assert.equal(untrustedStep(steps, new Set([0, 65532])), null);
  });

  it('only directories above the worktree are judged: the worktree itself may be writable by anyone', () => {
    assert.equal(untrustedStep([dir('/', 0, 0o755), dir('/w', 1234, 0o777)], ROOT_ONLY), null);
    assert.equal(untrustedStep([dir('/', 0, 0o755)], ROOT_ONLY), null);
  });
});
