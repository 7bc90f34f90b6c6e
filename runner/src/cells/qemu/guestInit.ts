/**
 * The guest's /init (busybox sh), run as PID 1 from the initramfs. It loads the virtio
 * modules, opens the status port before anything else runs (a virtio port can be open only
 * once, so the command cannot write to it), mounts the shared root read-only under a private
 * tmpfs overlay and the worktree read-write at its host path, runs the command chrooted with
 * exactly the environment it was given, and reports `forge-status <nonce> exit <code>`.
 * The command's output goes to its own port; nothing it prints can reach the status port.
 */
export const GUEST_INIT = `#!/bin/busybox sh
export PATH=/bin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
NONCE=$(cat /forge/nonce)
for m in $(cat /forge/modules); do insmod /lib/modules/$m.ko 2>/dev/null; done
port() { for p in /sys/class/virtio-ports/*; do [ "$(cat $p/name 2>/dev/null)" = "$1" ] && echo /dev/\${p##*/}; done; }
STATUS=$(port forge.status)
[ -n "$STATUS" ] || { echo "forge: no status port" >/dev/console; poweroff -f; }
exec 3>"$STATUS"
fail() { echo "forge-status $NONCE fail $*" >&3; sync; poweroff -f; }
MODE=$(cat /forge/mode)
if [ "$MODE" = probe ]; then echo "forge-status $NONCE probe ok" >&3; poweroff -f; fi
OUT=$(port forge.output)
[ -n "$OUT" ] || fail "no output port"
exec 4>"$OUT"
if [ "$MODE" = bare ]; then
  xargs -0 -x sh -c 'cd /; env -i "$@"; echo $? > /forge/exit' forge < /forge/argv >&4 2>&4 3>&-
  echo "forge-status $NONCE exit $(cat /forge/exit 2>/dev/null || echo 125)" >&3
  poweroff -f
fi
ip link set lo up 2>/dev/null
if [ "$(cat /forge/net)" = on ]; then
  # slirp's fixed addresses; restrict=on leaves only the forwarded egress proxy reachable.
  ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2 || fail "cannot configure the network"
fi
mkdir -p /lower /upper /newroot
mount -t virtiofs forge-root /lower -o ro || fail "cannot mount the shared root"
mount -t tmpfs -o mode=0755 tmpfs /upper
mkdir -p /upper/u /upper/w
mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w /newroot || fail "cannot mount the overlay"
mount -t proc proc /newroot/proc
mount -t sysfs sys /newroot/sys
mount -t devtmpfs dev /newroot/dev
mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp
mkdir -p /newroot/tmp/forge-home /newroot/tmp/forge-work /newroot/.forge
cp /bin/busybox /newroot/.forge/busybox
WT=$(cat /forge/worktree)
if [ -n "$WT" ]; then
  mkdir -p "/newroot$WT"
  mount -t virtiofs forge-work "/newroot$WT" || fail "cannot mount the worktree"
fi
CWD=$(cat /forge/cwd)
sync
if [ "$MODE" = instance ]; then
  # A long-lived instance: start the command, report ready once the readiness probe passes.
  xargs -0 -x chroot /newroot /.forge/busybox sh -c 'cd "$1" || exit 126; shift; exec /.forge/busybox env -i "$@"' forge "$CWD" < /forge/argv >&4 2>&4 3>&- &
  CHILD=$!
  if [ -s /forge/readiness ]; then
    until xargs -0 -x chroot /newroot /.forge/busybox sh -c 'cd "$1" || exit 126; shift; exec /.forge/busybox env -i "$@"' forge "$CWD" < /forge/readiness >/dev/null 2>&1 3>&- 4>&-; do
      kill -0 $CHILD 2>/dev/null || break
      sleep 0.2
    done
  fi
  kill -0 $CHILD 2>/dev/null && echo "forge-status $NONCE ready" >&3
  wait $CHILD
  code=$?
  sync
  echo "forge-status $NONCE exit $code" >&3
  poweroff -f
fi
xargs -0 -x chroot /newroot /.forge/busybox sh -c 'cd "$1" || exit 126; shift; /.forge/busybox env -i "$@"; echo $? > /.forge/exit' forge "$CWD" < /forge/argv >&4 2>&4 3>&-
code=$?
[ -f /newroot/.forge/exit ] && code=$(cat /newroot/.forge/exit)
sync
echo "forge-status $NONCE exit $code" >&3
poweroff -f
`;

/** Modules the cloud kernel builds as modules, in load order (dependencies first). */
export const GUEST_MODULES = [
  'drivers/virtio/virtio_ring',
  'drivers/virtio/virtio',
  'drivers/virtio/virtio_mmio',
  'drivers/char/virtio_console',
  'net/core/failover',
  'drivers/net/net_failover',
  'drivers/net/virtio_net',
  // Seeds the guest's CRNG at boot; without it getrandom() (e.g. Python's startup) blocks for seconds.
  'drivers/char/hw_random/virtio-rng',
  'fs/fuse/fuse',
  'fs/fuse/virtiofs',
  'fs/overlayfs/overlay',
];
