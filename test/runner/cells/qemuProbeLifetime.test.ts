import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findQemuTools } from '../../../runner/src/cells/qemu/qemuRuntime.js';
import { requireQemu } from '../../helpers/qemu.js';
import { requireFeature } from '../../helpers/requirement.js';
import { waitFor } from '../../helpers/waitFor.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the KVM probe boot does not outlive its runner', function () {
  this.timeout(60_000);
  let work = '';
  before(function () {
    requireQemu(this);
    let kvm = false;
    try {
      kvm = statSync('/dev/kvm').isCharacterDevice();
    } catch {
      /* none */
    }
    requireFeature(this, kvm, 'no /dev/kvm: the accelerator probe only boots with one');
    work = mkdtempSync(join(tmpdir(), 'forge-probe-life-'));
  });
  after(() => work && rmSync(work, { recursive: true, force: true }));

  it('a runner killed while its probe VM hangs takes the VM with it', async () => {
    // A qemu that hangs as KVM does on these machines: it records its pid and sleeps.
    const pidFile = join(work, 'qemu.pid');
    const fakeQemu = join(work, 'hanging-qemu');
    writeFileSync(fakeQemu, `#!/bin/sh\necho $$ > ${pidFile}\nexec sleep 600\n`);
    chmodSync(fakeQemu, 0o755);
    const tools = findQemuTools();
    assert.ok(!('missing' in tools));
    const script = join(work, 'probe.mts');
    writeFileSync(
      script,
      `import { chooseAccelerator } from ${JSON.stringify(join(process.cwd(), 'runner/src/cells/qemu/qemuRuntime.ts'))};\n` +
        `await chooseAccelerator(${JSON.stringify({ ...tools, qemu: fakeQemu })}, ${JSON.stringify(join(work, 'cache'))}, { FORGE_QEMU_ACCEL: 'kvm' });\n`,
    );
    const runner = spawn(process.execPath, ['--import', 'tsx', script], { stdio: 'ignore' });
    await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', 30_000, 'the probe qemu to start');
    const qemuPid = Number(readFileSync(pidFile, 'utf8').trim());
    assert.ok(alive(qemuPid));
    runner.kill('SIGKILL');
    await waitFor(() => !alive(qemuPid), 10_000, `the probe qemu (pid ${qemuPid}) to end with its runner`);
  });
});
