import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { activate, deactivate } from '../../extension/src/extension.js';
import { fake, fakeExtensionContext } from './fakes/vscode.js';

interface Manifest {
  contributes: {
    commands: { command: string }[];
    menus: Record<string, { command: string }[]>;
  };
}

/**
 * Commands the extension registers on purpose without contributing them in package.json
 * (not in the palette or any menu), each with the reason. Empty today: every command is
 * user-facing. Add an id here only with its reason.
 */
const INTERNAL_COMMANDS = new Map<string, string>([]);

/**
 * package.json and activate() agree on the commands: a contributed command that nothing
 * registers fails with "command not found" in the palette or a menu, and a registered
 * command nothing contributes has no title and no way in for the user.
 */
describe('command contributions', () => {
  const manifest = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as Manifest;
  const contributed = manifest.contributes.commands.map((c) => c.command);
  let registered: string[];

  before(() => {
    fake.reset();
    // A runtime that cannot run: activation still registers everything, and no runner process is started.
    fake.config.set('forge.runner.nodePath', '/nonexistent/node');
    activate(fakeExtensionContext(process.cwd()) as never);
    registered = [...fake.commands.keys()];
  });
  after(async () => {
    await deactivate();
    fake.reset();
  });

  it('registers every contributed command', () => {
    assert.deepEqual(
      contributed.filter((id) => !registered.includes(id)),
      [],
    );
  });

  it('contributes every registered command, except the internal ones listed with a reason', () => {
    assert.deepEqual(
      registered.filter((id) => !contributed.includes(id) && !INTERNAL_COMMANDS.has(id)),
      [],
    );
    for (const id of INTERNAL_COMMANDS.keys()) assert.ok(registered.includes(id), `${id} is listed as internal but not registered`);
  });

  it('contributes each command once, and menus name only contributed commands', () => {
    assert.deepEqual(
      contributed.filter((id, i) => contributed.indexOf(id) !== i),
      [],
    );
    const inMenus = Object.values(manifest.contributes.menus)
      .flat()
      .map((m) => m.command);
    assert.deepEqual([...new Set(inMenus.filter((id) => !contributed.includes(id)))], []);
  });
});
