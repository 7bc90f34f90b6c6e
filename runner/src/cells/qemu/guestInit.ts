/**
 * The guest's /init (busybox sh), run as PID 1 from the initramfs. It loads the virtio
 * modules, opens the status port before anything else runs (a virtio port can be open only
 * once), mounts the shared root read-only under a private tmpfs overlay and the worktree
 * read-write at its host path (all nosuid, nodev; /dev nosuid, noexec), and runs the command chrooted, as the
 * unprivileged cell user (never root: it cannot reach /init's descriptors, /proc/1 or the
 * status port) with no_new_privs, from a script the runner wrote (exact argv, exact
 * environment). /init waits for the command itself and reports
 * `forge-status <nonce> exit <code>`; nothing the command does can write that line.
 *
 * A pooled VM (mode "pool", vmPool.ts) boots before its cell exists: it does everything that
 * does not depend on the cell (modules, ports, network, root and overlay), reports
 * `forge-status <boot nonce> waiting`, then reads the cell's request archive from the
 * forge.request port (the runner writes it once and closes: a VM serves one cell) and goes on
 * as a "run" boot. Its worktree arrives through the forge-work share: the runner bind-mounts
 * it into the VM's own hand-over directory before it sends the request.
 */
export const GUEST_INIT = `#!/bin/busybox sh
export PATH=/bin
/bin/busybox --install -s /bin
mount -t proc -o nosuid,nodev,noexec proc /proc
mount -t sysfs -o nosuid,nodev,noexec sys /sys
# devtmpfs: its device nodes (null, the virtio ports) must work, so no nodev; nothing in it runs.
mount -t devtmpfs -o nosuid,noexec dev /dev
NONCE=$(cat /forge/nonce)
rm -f /forge/nonce
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
  env -i /bin/sh /forge/cmd </dev/null >&4 2>&4 3>&-
  echo "forge-status $NONCE exit $?" >&3
  poweroff -f
fi
ip link set lo up 2>/dev/null
if [ "$(cat /forge/net)" = on ]; then
  # slirp's fixed addresses; restrict=on leaves only the forwarded egress proxy reachable.
  ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2 || fail "cannot configure the network"
fi
mkdir -p /lower /upper /newroot
mount -t virtiofs forge-root /lower -o ro,nosuid,nodev || fail "cannot mount the shared root"
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /upper
mkdir -p /upper/u /upper/w
mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w,nosuid,nodev /newroot || fail "cannot mount the overlay"
mount -t proc -o nosuid,nodev,noexec proc /newroot/proc
mount -t sysfs -o nosuid,nodev,noexec,ro sys /newroot/sys
mount -t devtmpfs -o nosuid,noexec dev /newroot/dev
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /newroot/tmp
# devtmpfs has no /dev/shm: POSIX semaphores and shared memory (Python's multiprocessing) need one.
mkdir -p /newroot/dev/shm && mount -t tmpfs -o mode=1777,nosuid,nodev shm /newroot/dev/shm
mkdir -p /newroot/var/tmp && mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /newroot/var/tmp
mkdir -p /newroot/tmp/forge-home /newroot/tmp/forge-work /newroot/.forge
chmod 0777 /newroot/tmp/forge-home /newroot/tmp/forge-work
chmod 0755 /newroot/.forge
if [ "$MODE" = pool ]; then
  echo "forge-status $NONCE waiting" >&3
  REQ=$(port forge.request)
  [ -n "$REQ" ] || fail "no request port"
  # The request replaces the boot's files under /forge (nonce, mode, command, user, worktree).
  ( cd / && cpio -i -d -m -u < "$REQ" ) 2>/dev/null || fail "unreadable request"
  NONCE=$(cat /forge/nonce)
  rm -f /forge/nonce
  MODE=$(cat /forge/mode)
  [ "$MODE" = run ] || fail "a pooled VM runs one cell"
  HANDOVER=1
fi
cp /bin/busybox /newroot/.forge/busybox
cp /forge/cmd /newroot/.forge/cmd
[ -s /forge/ready ] && cp /forge/ready /newroot/.forge/ready
chmod 0644 /newroot/.forge/cmd /newroot/.forge/ready 2>/dev/null
WT=$(cat /forge/worktree)
if [ -n "$WT" ] && [ -n "$HANDOVER" ]; then
  # The VM's hand-over share: the runner mounted the worktree at w/ (its .git read-only there).
  mkdir -p /handover "/newroot$WT"
  mount -t virtiofs forge-work /handover -o nosuid,nodev || fail "cannot mount the hand-over share"
  mount --bind /handover/w "/newroot$WT" || fail "cannot mount the worktree"
elif [ -n "$WT" ]; then
  mkdir -p "/newroot$WT"
  mount -t virtiofs forge-work "/newroot$WT" -o nosuid,nodev || fail "cannot mount the worktree"
fi
# virtiofsd holds a host descriptor per guest inode it serves, up to the host's limit: when
# the guest caches more than half of that, unused inodes are dropped (FUSE FORGET closes
# them). Runs as root beside the command, which cannot stop it.
BUDGET=$(cat /forge/fdbudget 2>/dev/null)
if [ -n "$BUDGET" ] && [ "$BUDGET" -gt 0 ]; then
  ( while sleep 0.2; do n=$(awk '/^fuse_inode /{print $2}' /proc/slabinfo); [ "\${n:-0}" -gt "$BUDGET" ] && echo 2 > /proc/sys/vm/drop_caches; done ) </dev/null >/dev/null 2>&1 3>&- 4>&- &
fi
read CUID CGID < /forge/user
[ -n "$CUID" ] && [ "$CUID" != 0 ] || fail "no unprivileged cell user"
# Shared dependencies: read-only virtiofs, under an overlay whose upper layer is guest memory
# (discarded with the VM) when tools may write caches there; its top belongs to the cell user.
i=0
while IFS='	' read -r TAG DMODE TARGET; do
  [ -n "$TAG" ] || continue
  i=$((i+1))
  mkdir -p /deps/l$i /upper/d$i /upper/dw$i "/newroot$TARGET"
  mount -t virtiofs "$TAG" /deps/l$i -o ro,nosuid,nodev || fail "cannot mount the shared dependency $TARGET"
  if [ "$DMODE" = rw ]; then
    mount -t overlay overlay -o lowerdir=/deps/l$i,upperdir=/upper/d$i,workdir=/upper/dw$i,nosuid,nodev "/newroot$TARGET" || fail "cannot mount the layer over $TARGET"
    chown -h "$CUID:$CGID" "/newroot$TARGET"
    # Caches installed with the dependencies are not the cell's: it gets empty ones.
    for c in .cache .vite .vitest; do
      if [ -d "/deps/l$i/$c" ] && [ ! -L "/deps/l$i/$c" ]; then mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "/newroot$TARGET/$c"; fi
    done
  else
    mount --bind /deps/l$i "/newroot$TARGET" && mount -o remount,bind,ro,nosuid,nodev "/newroot$TARGET" || fail "cannot mount the shared dependency $TARGET"
  fi
done < /forge/deps
# chroot, become the cell user for good, no setuid gains, then the runner's script.
as_cell() { chroot /newroot /.forge/busybox nsenter -S "$CUID" -G "$CGID" -- /.forge/busybox setpriv --nnp -- /.forge/busybox env -i /.forge/busybox sh "$1"; }
sync
if [ "$MODE" = instance ]; then
  # A long-lived instance: start the command, report ready once the readiness probe passes.
  as_cell /.forge/cmd </dev/null >&4 2>&4 3>&- &
  CHILD=$!
  echo "forge-status $NONCE started" >&3
  if [ -s /newroot/.forge/ready ]; then
    until as_cell /.forge/ready </dev/null >/dev/null 2>&1 3>&- 4>&-; do
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
as_cell /.forge/cmd </dev/null >&4 2>&4 3>&-
code=$?
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
