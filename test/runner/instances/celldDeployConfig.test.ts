import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { COMPATIBLE_CELLD_VERSIONS } from '../../../runner/src/instances/celld/celldCellHost.js';

// Celld refuses unknown config keys; this is the allowlist of its v0.2.1 deploy command.
const CELLD_KEYS = new Set([
  '$schema',
  'name',
  'main',
  'compatibility_date',
  'compatibility_flags',
  'durable_objects',
  'migrations',
  'assets',
  'services',
  'triggers',
  'vars',
  'd1_databases',
  'kv_namespaces',
  'queues',
  'workflows',
  'r2_buckets',
  'worker_loaders',
  'containers',
  'no_bundle',
  'define',
  'rules',
]);

describe('celld/wrangler.jsonc (deployment to a Celld fleet)', () => {
  const file = join(process.cwd(), 'celld', 'wrangler.jsonc');
  const config = JSON.parse(readFileSync(file, 'utf8').replace(/^\s*\/\/.*$/gm, '')) as Record<string, unknown>;

  it('uses only keys Celld accepts, a valid script name, and no secret', () => {
    for (const k of Object.keys(config)) assert.ok(CELLD_KEYS.has(k), `Celld would refuse key ${k}`);
    assert.match(String(config.name), /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/);
    assert.ok(!JSON.stringify(config).includes('FORGE_CELLD_SECRET'), 'the secret is delivered separately');
  });

  it('points at the built worker bundle and binds the InstanceCell class as SQLite-backed', () => {
    assert.equal(resolve(dirname(file), String(config.main)), join(process.cwd(), 'dist', 'instance-cell-worker.js'));
    assert.ok(existsSync(resolve(dirname(file), String(config.main))), 'npm run build makes it');
    assert.deepEqual(config.durable_objects, { bindings: [{ name: 'INSTANCE_CELL', class_name: 'InstanceCell' }] });
    assert.deepEqual((config.migrations as Array<{ new_sqlite_classes: string[] }>)[0]!.new_sqlite_classes, ['InstanceCell']);
    assert.ok(
      COMPATIBLE_CELLD_VERSIONS.has(String((config.vars as Record<string, string>).CELLD_VERSION)),
      'the pinned version is one the adapter accepts',
    );
  });
});
