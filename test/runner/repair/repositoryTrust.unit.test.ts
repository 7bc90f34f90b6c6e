import assert from 'node:assert/strict';
import { includedFileRules } from '../../../runner/src/workspace/baseIgnoreRules.js';
import { decideRepositoryRequests } from '../../../runner/src/repair/trust/repositoryConsent.js';
import type { RepositoryFiles } from '../../../runner/src/repair/trust/repositoryFiles.js';
import { looksLikeSecret } from '../../../runner/src/repair/trust/secretNames.js';

describe('repository trust (pure): what a run takes from a repository’s own files', () => {
  it('names that hold credentials, by any path component, are recognised; ordinary project files are not', () => {
    const secret = [
      '.env',
      '.ENV',
      '.env.local',
      '.env-production',
      '.env_local',
      '.env~',
      '.env/production',
      'prod.env',
      'config/.env.test',
      'credentials/db.json',
      'private/signing',
      'keys/deploy',
      'kubeconfig',
      'terraform.tfstate',
      '.terraform/terraform.tfstate',
      'infra/prod.tfvars',
      '.dockercfg',
      '.yarnrc',
      '.npmrc',
      '.dev.vars',
      '.vault-token',
      '.my.cnf',
      '.s3cfg',
      'id_rsa',
      'id_rsa_deploy',
      'id_ed25519_sk',
      '.ssh/config',
      '.config/gh/hosts.yml',
      'certs/server.key',
      'config/master.key',
      'client_secret.json',
      'db-password.txt',
    ];
    for (const p of secret) assert.equal(looksLikeSecret(p), true, p);
    const plain = [
      'src/index.js',
      'config/local.json',
      'package.json',
      'README.md',
      'test/fixtures/data.csv',
      'keyboard.js',
      'src/environment.ts',
    ];
    for (const p of plain) assert.equal(looksLikeSecret(p), false, p);
  });

  it("a file's requests count only once its exact content is confirmed; exclude always counts; the user's flags always count", () => {
    const files: RepositoryFiles = {
      include: { state: 'read', sha256: 'i1', value: ['config/local.json'], summary: 'copies "config/local.json" into every attempt' },
      config: {
        state: 'read',
        sha256: 'c1',
        value: { dependencies: { share: ['vendor/bundle'], exclude: ['venv'] } },
        summary: 'shares "vendor/bundle" with every cell; excludes "venv"',
      },
    };
    const none = decideRepositoryRequests(files, () => false, { include: ['fixtures/*.db'], share: [] }, '/r');
    assert.deepEqual(none.include, [{ glob: 'fixtures/*.db', from: 'you' }]);
    assert.deepEqual(none.share, []);
    assert.deepEqual(none.exclude, ['venv']);
    assert.deepEqual(
      none.unconfirmed.map((u) => u.file),
      ['.forgeinclude', '.forge/config.json'],
    );
    assert.match(
      none.notes[0]!,
      /\.forgeinclude copies "config\/local\.json" into every attempt: not used, .*forge-runner trust --repo \/r/,
    );
    const some = decideRepositoryRequests(files, (file, sha) => file === '.forgeinclude' && sha === 'i1', { include: [], share: [] }, '/r');
    assert.deepEqual(some.include, [{ glob: 'config/local.json', from: 'repository' }]);
    assert.deepEqual(
      some.unconfirmed.map((u) => u.file),
      ['.forge/config.json'],
    );
    const refused = decideRepositoryRequests(
      { include: { state: 'refused', why: '.forgeinclude is a symbolic link; it is not read' }, config: { state: 'absent' } },
      () => true,
      { include: [], share: [] },
      '/r',
    );
    assert.deepEqual(refused.include, []);
    assert.match(refused.notes[0]!, /symbolic link/);
  });

  it('the files the runner copied in are excluded literally from every captured diff', () => {
    assert.equal(includedFileRules(['config/local.json', 'a*b[1].txt', 'bad\nname', '']), '/config/local.json\n/a\\*b\\[1\\].txt\n');
  });
});
