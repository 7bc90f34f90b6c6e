// The layer rules in eslint.config.js fire: in-memory code at a path inside each layer, linted
// with exactly those rule blocks through ESLint's Node API (no type information, so it is fast).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ESLint, type Linter } from 'eslint';
import tseslint from 'typescript-eslint';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('lint: layer rules (eslint.config.js)', function () {
  this.timeout(60_000);
  let config: Linter.Config[];
  let layerRules: Linter.Config[];
  let eslint: ESLint;

  before(async () => {
    // A computed specifier: the config is plain JavaScript outside the TypeScript project.
    const mod = (await import(pathToFileURL(join(root, 'eslint.config.js')).href)) as {
      default: Linter.Config[];
      layerRules: Linter.Config[];
    };
    config = mod.default;
    layerRules = mod.layerRules;
    eslint = new ESLint({
      cwd: root,
      overrideConfigFile: true,
      overrideConfig: [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser as Linter.Parser } }, ...layerRules],
    });
  });

  async function restricted(filePath: string, code: string): Promise<string[]> {
    const [result] = await eslint.lintText(code, { filePath: `${root}/${filePath}` });
    assert.ok(result);
    assert.equal(result.fatalErrorCount ?? 0, 0, JSON.stringify(result.messages));
    return result.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
  }

  it('the repository config includes every layer block', () => {
    assert.equal(layerRules.length, 7);
    for (const block of layerRules) assert.ok(config.includes(block), `${block.name} missing from the default export`);
  });

  it('runner/: no vscode import (vscode-jsonrpc is fine)', async () => {
    const errors = await restricted('runner/src/server/x.ts', "import * as vscode from 'vscode';\nexport const v = vscode;\n");
    assert.equal(errors.length, 1);
    assert.match(errors[0]!, /never imports the VS Code API/);
    assert.deepEqual(
      await restricted('runner/src/server/x.ts', "import { ErrorCodes } from 'vscode-jsonrpc/node';\nexport const e = ErrorCodes;\n"),
      [],
    );
    assert.equal((await restricted('runner/src/cells/x.ts', "import 'vscode';\n")).length, 1, 'the cells block keeps the vscode rule');
  });

  it('hostguard imports only protocol/ and itself (issue 28: the bottom layer)', async () => {
    for (const [file, code] of [
      ['runner/src/hostguard/x.ts', "import { runGit } from '../workspace/safeGit.js';\nexport const r = runGit;\n"],
      ['runner/src/hostguard/x.ts', "import type { CellProvider } from '../cells/provider.js';\nexport type P = CellProvider;\n"],
      ['runner/src/hostguard/deep/x.ts', "export { openStore } from '../../store/openStore.js';\n"],
    ] as const) {
      const errors = await restricted(file, code);
      assert.equal(errors.length, 1, `${file}: ${code}`);
      assert.match(errors[0]!, /bottom layer of the runner/);
    }
    for (const [file, code] of [
      ['runner/src/hostguard/x.ts', "import { InputError } from '../protocol/inputError.js';\nexport const e = InputError;\n"],
      ['runner/src/hostguard/x.ts', "import { displayText } from './displayText.js';\nexport const d = displayText;\n"],
      ['runner/src/hostguard/deep/x.ts', "import { displayText } from '../displayText.js';\nexport const d = displayText;\n"],
      ['runner/src/hostguard/x.ts', "import { openSync } from 'node:fs';\nexport const o = openSync;\n"],
    ] as const)
      assert.deepEqual(await restricted(file, code), [], `${file}: ${code}`);
  });

  it('the store imports no other layer (issue 28: no folder cycle through a row type)', async () => {
    const bad = await restricted(
      'runner/src/store/x.ts',
      "import type { SlotRow } from '../cells/cellScheduling.js';\nexport type R = SlotRow;\n",
    );
    assert.equal(bad.length, 1);
    assert.match(bad[0]!, /imports no other layer/);
    assert.equal((await restricted('runner/src/store/x.ts', "import 'vscode';\n")).length, 1, 'the store block keeps the vscode rule');
    assert.deepEqual(await restricted('runner/src/store/x.ts', "import type { Db } from './openStore.js';\nexport type D = Db;\n"), []);
  });

  it('/proc/self/fd paths are spelled only in hostguard (issue 28: one beneath primitive)', async () => {
    const syntax = async (file: string, code: string) => {
      const [result] = await eslint.lintText(code, { filePath: `${root}/${file}` });
      return result!.messages.filter((m) => m.ruleId === 'no-restricted-syntax').map((m) => m.message);
    };
    for (const code of [
      'export const p = (fd: number, n: string) => `/proc/self/fd/${fd}/${n}`;\n',
      "export const p = '/proc/self/fd/3';\n",
    ]) {
      const errors = await syntax('runner/src/repair/tools/x.ts', code);
      assert.equal(errors.length, 1, code);
      assert.match(errors[0]!, /hostguard\/beneath\.ts/);
    }
    assert.deepEqual(await syntax('runner/src/hostguard/x.ts', "export const p = '/proc/self/fd/3';\n"), []);
    assert.deepEqual(await syntax('runner/src/cells/x.ts', "export const p = '/proc/self/limits';\n"), []);
  });

  it('cells never import repair (value or type imports, at any depth)', async () => {
    for (const [file, code] of [
      ['runner/src/cells/x.ts', "import { selectWinner } from '../repair/selectWinner.js';\nexport const s = selectWinner;\n"],
      ['runner/src/cells/qemu/x.ts', "import type { FixReport } from '../../repair/fixRun.js';\nexport type F = FixReport;\n"],
      ['runner/src/cells/x.ts', "export { replay } from '../repair/models/replay.js';\n"],
    ] as const) {
      const errors = await restricted(file, code);
      assert.equal(errors.length, 1, `${file}: ${code}`);
      assert.match(errors[0]!, /never import the repair layer/);
    }
    assert.deepEqual(await restricted('runner/src/cells/x.ts', "import { tail } from './tailRing.js';\nexport const t = tail;\n"), []);
    assert.deepEqual(
      await restricted('runner/src/repair/x.ts', "import { c } from '../cells/cellProvider.js';\nexport const x = c;\n"),
      [],
    );
  });

  it('extension imports only runner/src/protocol from the runner', async () => {
    const bad = await restricted(
      'extension/src/views/x.ts',
      "import { openStore } from '../../runner/src/store/openStore.js';\nexport const o = openStore;\n",
    );
    assert.equal(bad.length, 1);
    assert.match(bad[0]!, /import only runner\/src\/protocol/);
    assert.deepEqual(
      await restricted(
        'extension/src/views/x.ts',
        "import type { FixRunView } from '../../runner/src/protocol/rpcFix.js';\nexport type V = FixRunView;\n",
      ),
      [],
    );
    assert.deepEqual(
      await restricted('extension/src/views/x.ts', "import { connect } from '../runner/runnerConnection.js';\nexport const c = connect;\n"),
      [],
    );
  });

  it('webview imports only runner/src/protocol, no extension code and no vscode module', async () => {
    const file = 'webview/src/x.ts';
    assert.equal((await restricted(file, "import { x } from '../../runner/src/repair/fixRun.js';\nexport const y = x;\n")).length, 1);
    assert.equal((await restricted(file, "import { s } from '../../extension/src/settings.js';\nexport const y = s;\n")).length, 1);
    assert.equal((await restricted(file, "import 'vscode';\n")).length, 1);
    assert.deepEqual(await restricted(file, "import type { H } from '../../runner/src/protocol/health.js';\nexport type Y = H;\n"), []);
  });
});
