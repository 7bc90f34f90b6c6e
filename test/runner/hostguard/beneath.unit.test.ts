// hostguard/beneath.ts: the one primitive every host-side walk of a hostile tree stands on.
// Each case tries to make it follow a link, leave its directory, write through a link or a
// hard link, or read more than its bound.
import assert from 'node:assert/strict';
import {
  closeSync,
  constants,
  linkSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  fileIdentityAt,
  listDirectory,
  lstatAt,
  mkdirAt,
  O_PATH,
  openAt,
  openDirectoryAt,
  readRegularAt,
  replaceAt,
  walkDirectories,
  withDescriptors,
} from '../../../runner/src/hostguard/beneath.js';

describe('hostguard/beneath: one name at a time beneath a descriptor, never through a link', () => {
  let dir: string;
  let outside: string;
  let fd: number;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'forge-beneath-'));
    outside = mkdtempSync(join(tmpdir(), 'forge-beneath-outside-'));
    writeFileSync(join(outside, 'secret'), 'host secret\n');
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'sub', 'file'), 'inside\n');
    symlinkSync(outside, join(dir, 'away'));
    symlinkSync(join(outside, 'secret'), join(dir, 'secret-link'));
    fd = openSync(dir, O_PATH | constants.O_DIRECTORY);
  });

  afterEach(() => {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  it('a name is one component: "..", "a/b", "" and NUL are refused before anything is opened', () => {
    for (const name of ['..', '.', 'sub/file', '', 'a\0b', '../secret'])
      assert.throws(() => openAt(fd, name, constants.O_RDONLY), /is not one name in a directory/, JSON.stringify(name));
  });

  it('a link at the name is never followed: open refuses it, read and identity see nothing', () => {
    assert.throws(() => openAt(fd, 'secret-link', constants.O_RDONLY), { code: 'ELOOP' });
    assert.throws(
      () => openDirectoryAt(fd, 'away'),
      (e: NodeJS.ErrnoException) => e.code === 'ELOOP' || e.code === 'ENOTDIR',
    );
    assert.equal(readRegularAt(fd, 'secret-link', 1024), null);
    assert.equal(fileIdentityAt(fd, 'secret-link'), null);
    assert.ok(lstatAt(fd, 'secret-link').isSymbolicLink());
  });

  it('a walk stops at the first link on the way and names it', () => {
    const r = withDescriptors((track) => walkDirectories(fd, ['away'], track));
    assert.ok('code' in r);
    assert.equal(r.at, 'away');
    const ok = withDescriptors((track) => {
      const w = walkDirectories(fd, ['sub'], track);
      assert.ok('fd' in w);
      return readRegularAt(w.fd, 'file', 1024);
    });
    assert.equal(ok?.toString(), 'inside\n');
  });

  it('reads are bounded and only of regular files', () => {
    assert.deepEqual(readRegularAt(fd, 'sub', 1024), null, 'a directory is not read');
    writeFileSync(join(dir, 'big'), Buffer.alloc(4096, 1));
    assert.deepEqual(readRegularAt(fd, 'big', 4095), { tooLarge: 4096 });
    assert.equal((readRegularAt(fd, 'big', 4096) as Buffer).length, 4096);
    assert.equal(readRegularAt(fd, 'missing', 10), null);
  });

  it('replace never writes through a link or a hard link: the name gets a new file', () => {
    replaceAt(fd, 'secret-link', Buffer.from('mine\n'), 0o644);
    assert.equal(readFileSync(join(outside, 'secret'), 'utf8'), 'host secret\n', 'the link target is untouched');
    assert.ok(lstatAt(fd, 'secret-link').isFile());
    linkSync(join(outside, 'secret'), join(dir, 'hard'));
    replaceAt(fd, 'hard', Buffer.from('mine\n'), 0o600);
    assert.equal(readFileSync(join(outside, 'secret'), 'utf8'), 'host secret\n', 'the other name of a hard link is untouched');
    assert.equal(readFileSync(join(dir, 'hard'), 'utf8'), 'mine\n');
    assert.equal(lstatAt(fd, 'hard').mode & 0o777, 0o600, 'the mode asked for, whatever the umask');
    assert.deepEqual(
      listDirectory(fd).entries.filter((e) => e.name.toString().startsWith('.forge-write-')),
      [],
      'no temporary file is left',
    );
  });

  it('mkdir over a link says it exists; the link is then refused as a directory', () => {
    assert.equal(mkdirAt(fd, 'away', 0o755), false);
    assert.throws(() => openDirectoryAt(fd, 'away'));
    assert.equal(mkdirAt(fd, 'fresh', 0o755), true);
    assert.ok(lstatAt(fd, 'fresh').isDirectory());
  });

  it('listing is bounded and in name order; identity changes when a file is rewritten', () => {
    for (let i = 0; i < 20; i++) writeFileSync(join(dir, `f${String(i).padStart(2, '0')}`), '');
    const some = listDirectory(fd, 5);
    assert.equal(some.cut, true);
    assert.equal(some.entries.length, 5);
    const all = listDirectory(fd);
    assert.equal(all.cut, false);
    const names = all.entries.map((e) => e.name.toString());
    assert.deepEqual(names, [...names].sort());
    const before = fileIdentityAt(fd, 'f00');
    assert.ok(before);
    replaceAt(fd, 'f00', Buffer.from('x'), 0o644);
    assert.notEqual(fileIdentityAt(fd, 'f00'), before);
  });
});
