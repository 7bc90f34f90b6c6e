/** Pure: the qemu command line of one micro-VM cell (microvm machine, no default devices). */
export interface QemuPlan {
  accel: 'kvm' | 'tcg';
  kernel: string;
  initrd: string;
  memoryMib: number;
  cpus: number;
  /** Host TSC rate: with TCG the guest cannot always calibrate its TSC and hangs without it. */
  tscKhz: number | null;
  consoleLog: string;
  statusFile: string;
  /** Unix socket the runner listens on for the command's output. */
  outputSocket: string | null;
  /** Pooled VMs: unix socket the runner listens on to send the cell's request (forge.request). */
  requestSocket?: string | null;
  /** virtiofs: tag -> vhost-user socket of its virtiofsd. */
  shares: Array<{ tag: string; socket: string }>;
  /**
   * allow_net: a user-mode NIC that can reach nothing (restrict=on) except the runner's
   * egress proxy, forwarded from GUEST_PROXY inside the guest.
   */
  egressProxyPort?: number | null;
  /** A static busybox on the host: its `nc` carries each forwarded connection to the proxy. */
  busybox?: string;
}

export const GUEST_PROXY = { host: '10.0.2.100', port: 3128 } as const;

export const KERNEL_ARGS = [
  'console=ttyS0',
  'quiet',
  'panic=-1',
  'reboot=t',
  'pci=off',
  'nokaslr',
  'no_timer_check',
  'i8042.noaux',
  'i8042.nomux',
  'i8042.nopnp',
  'i8042.dumbkbd',
  '8250.nr_uarts=1',
  'cryptomgr.notests',
];

export function buildQemuArgs(p: QemuPlan): string[] {
  const append = [...KERNEL_ARGS, ...(p.accel === 'tcg' && p.tscKhz ? [`tsc_early_khz=${p.tscKhz}`, 'tsc=reliable'] : [])].join(' ');
  const args = [
    '-accel',
    p.accel,
    '-M',
    'microvm,memory-backend=mem',
    // vhost-user devices (virtiofsd) need modern virtio-mmio.
    '-global',
    'virtio-mmio.force-legacy=false',
    '-m',
    `${p.memoryMib}M`,
    '-object',
    `memory-backend-memfd,id=mem,size=${p.memoryMib}M,share=on`,
    '-smp',
    String(p.cpus),
    '-nodefaults',
    '-no-user-config',
    '-display',
    'none',
    '-no-reboot',
    '-kernel',
    p.kernel,
    '-initrd',
    p.initrd,
    '-append',
    append,
    '-serial',
    `file:${p.consoleLog}`,
  ];
  for (const s of p.shares)
    args.push('-chardev', `socket,id=fs-${s.tag},path=${s.socket}`, '-device', `vhost-user-fs-device,chardev=fs-${s.tag},tag=${s.tag}`);
  args.push('-object', 'rng-random,id=rng,filename=/dev/urandom', '-device', 'virtio-rng-device,rng=rng');
  if (p.egressProxyPort) {
    // cmd: forwards each guest connection separately (a tcp: chardev would carry only one).
    const forward = `cmd:${p.busybox ?? '/bin/busybox'} nc 127.0.0.1 ${p.egressProxyPort}`;
    args.push(
      '-netdev',
      `user,id=net0,restrict=on,guestfwd=tcp:${GUEST_PROXY.host}:${GUEST_PROXY.port}-${forward}`,
      '-device',
      'virtio-net-device,netdev=net0',
    );
  }
  args.push('-device', 'virtio-serial-device');
  args.push('-chardev', `file,id=status,path=${p.statusFile}`, '-device', 'virtserialport,chardev=status,name=forge.status');
  if (p.outputSocket)
    args.push('-chardev', `socket,id=output,path=${p.outputSocket}`, '-device', 'virtserialport,chardev=output,name=forge.output');
  if (p.requestSocket)
    args.push('-chardev', `socket,id=request,path=${p.requestSocket}`, '-device', 'virtserialport,chardev=request,name=forge.request');
  return args;
}

/** Pure: the host TSC rate in kHz from /proc/cpuinfo. */
export function tscKhzFromCpuinfo(cpuinfo: string): number | null {
  const m = /^cpu MHz\s*:\s*([\d.]+)/m.exec(cpuinfo);
  return m ? Math.round(Number(m[1]) * 1000) : null;
}
