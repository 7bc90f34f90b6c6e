#!/usr/bin/env bash
# A 3-node Docker Swarm on one machine for the swarm cell provider's tests and bench, laid out
# as separate hosts: the local dockerd is the manager on 10.210.0.1 (the address of the bridge
# forgeswarm0), and two more engines run as plain processes each in a network namespace of
# its own (forge-swarm-node2, -node3: a veth on that bridge, 10.210.0.12 and 10.210.0.13, no
# route anywhere else) and join as workers. Overlay networks span the nodes as between hosts.
# Debian's docker-registry listens on 10.210.0.1:5000; every node, the manager included,
# reaches it as 127.0.0.1:5000 through a forwarder on its own loopback (the node-local
# registry proxy of minikube's registry addon), so image names are the same on every node and
# no engine needs an insecure-registry setting. Docker-in-Docker cannot run on our machines
# (see ../shared/FACTS.md, "Checked 2026-12-01", for the namespace recipe).
#
#   scripts/swarm-cluster.sh up       start and join everything (idempotent)
#   scripts/swarm-cluster.sh down     leave the swarm, stop the engines, forwarders and the
#                                     registry, remove the namespaces, veths, bridge, iptables
#                                     rule and data, then check nothing of it is left (exit 1
#                                     naming what is); idempotent; docker0 stays
#   scripts/swarm-cluster.sh status   what runs, one line each; exit 1 when the cluster is not up
#
# Runs as root. FORGE_SWARM_ROOT changes where the extra engines keep their state.
set -euo pipefail
cd "$(dirname "$0")/.."

root=${FORGE_SWARM_ROOT:-/var/lib/forge-swarm}
workers=(2 3)
bridge=forgeswarm0
subnet_prefix=10.210.0
manager_addr=$subnet_prefix.1
registry_port=5000
# Where the registry really listens (the cluster's network), and where every node reaches it.
registry_listen=$manager_addr:$registry_port
registry_addr=127.0.0.1:$registry_port
# Marks the one iptables rule this script adds, so down finds it.
rule_comment=forge-swarm-cluster

say() { printf 'swarm-cluster: %s\n' "$*"; }
die() {
  printf 'swarm-cluster: %s\n' "$*" >&2
  exit 1
}

node_dir() { echo "$root/node$1"; }
node_sock() { echo "$(node_dir "$1")/docker.sock"; }
node_ns() { echo "forge-swarm-node$1"; }
node_addr() { echo "$subnet_prefix.1$1"; }
# Interface names are at most 15 characters.
node_veth() { echo "fswarm$1"; }
in_ns() { nsenter --net="/run/netns/$(node_ns "$1")" "${@:2}"; }
dk() { docker -H "unix://$(node_sock "$1")" "${@:2}"; }
# An engine can hang a swarm call forever (a CI run once sat 50 minutes in a worker's
# `swarm leave`): every call that changes membership gets a deadline, and down goes on without it.
within() { timeout -k 5 "$@"; }
answers() { curl -sf --max-time 2 --unix-socket "$1" http://localhost/_ping >/dev/null 2>&1; }
registry_answers() { curl -sf --max-time 2 "http://$1/v2/" >/dev/null 2>&1; }
swarm_state() { docker "$@" info --format '{{.Swarm.LocalNodeState}}' 2>/dev/null || echo unreachable; }
pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
stop_pid() {
  pid_alive "$1" || return 0
  local pid
  pid=$(cat "$1")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.25
  done
  kill -9 "$pid" 2>/dev/null || true
}

# A TCP forwarder on a node's loopback to the registry. Node is on every machine the runner
# runs on (socat is not); the script is on its command line, nothing on disk to swap.
FORWARDER='
const net = require("net");
const [listenHost, listenPort, toHost, toPort] = process.argv.slice(1);
net.createServer({ allowHalfOpen: true }, (c) => {
  const u = net.connect({ host: toHost, port: Number(toPort), allowHalfOpen: true });
  const end = () => { c.destroy(); u.destroy(); };
  for (const s of [c, u]) { s.on("error", end); s.on("close", end); }
  c.pipe(u); u.pipe(c);
}).listen(Number(listenPort), listenHost);'

# $1: where its pid goes; $2...: the command prefix that puts it in its namespace (or none).
start_forwarder() {
  local pidfile=$1
  shift
  pid_alive "$pidfile" && return 0
  nohup "$@" node -e "$FORWARDER" 127.0.0.1 "$registry_port" "$manager_addr" "$registry_port" >/dev/null 2>&1 &
  echo $! >"$pidfile"
}

ensure_bridge() {
  if ! ip link show "$bridge" >/dev/null 2>&1; then
    ip link add name "$bridge" type bridge
    ip addr add "$manager_addr/24" dev "$bridge"
  fi
  ip link set "$bridge" up
  # The main engine's FORWARD policy is DROP and bridged traffic passes through it: without
  # this the nodes cannot reach each other (join, gossip, VXLAN). Only bridge to bridge:
  # nothing the nodes send is forwarded anywhere else.
  iptables -w -C FORWARD -i "$bridge" -o "$bridge" -m comment --comment "$rule_comment" -j ACCEPT 2>/dev/null ||
    iptables -w -I FORWARD -i "$bridge" -o "$bridge" -m comment --comment "$rule_comment" -j ACCEPT
}

start_registry() {
  mkdir -p "$root/forwarders"
  if registry_answers "$registry_listen"; then
    say "registry: already answers on $registry_listen"
  else
    command -v docker-registry >/dev/null || die "docker-registry is not installed: apt-get install docker-registry"
    local dir="$root/registry"
    mkdir -p "$dir/data"
    # The registry's blobs are every cell's tree and changes: readable only through the
    # registry itself, never as files (a host cell sees the host's root read-only).
    chmod 0700 "$dir" "$dir/data"
    cat >"$dir/config.yml" <<CONF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
http:
  addr: $registry_listen
CONF
    nohup docker-registry serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
    echo $! >"$dir/pid"
    for _ in $(seq 1 60); do
      registry_answers "$registry_listen" && break
      sleep 0.25
    done
    registry_answers "$registry_listen" || {
      tail -20 "$dir/registry.log" >&2
      die "registry did not answer on $registry_listen within 15 s"
    }
    say "registry: started on $registry_listen (log: $dir/registry.log)"
  fi
  start_forwarder "$root/forwarders/manager.pid"
  for _ in $(seq 1 40); do
    registry_answers "$registry_addr" && return
    sleep 0.25
  done
  die "manager: nothing answers on $registry_addr (the forwarder to $registry_listen; is another process on that port?)"
}

init_manager() {
  bash scripts/ensure-dockerd.sh >/dev/null
  local state addr
  state=$(swarm_state)
  if [ "$state" = active ]; then
    addr=$(docker info --format '{{.Swarm.NodeAddr}}')
    [ "$addr" = "$manager_addr" ] ||
      die "the local engine is in a swarm on $addr, not on $manager_addr (an older cluster?); run scripts/swarm-cluster.sh down, then up"
    say "manager: already in a swarm on $manager_addr"
  else
    within 60 docker swarm init --advertise-addr "$manager_addr" --listen-addr "$manager_addr:2377" >/dev/null
    say "manager: swarm initialised on $manager_addr:2377"
  fi
  [ "$(docker info --format '{{.Swarm.ControlAvailable}}')" = true ] || die "the local engine is in a swarm but not a manager; run: docker swarm leave --force"
}

ensure_namespace() {
  local n=$1 ns veth addr
  ns=$(node_ns "$n")
  veth=$(node_veth "$n")
  addr=$(node_addr "$n")
  [ -e "/run/netns/$ns" ] || ip netns add "$ns"
  if ! ip link show "$veth" >/dev/null 2>&1; then
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" master "$bridge"
  fi
  ip link set "$veth" up
  in_ns "$n" ip link set lo up
  in_ns "$n" ip addr show dev eth0 | grep -q "inet $addr/" || in_ns "$n" ip addr add "$addr/24" dev eth0
  in_ns "$n" ip link set eth0 up
}

start_worker() {
  local n=$1 dir sock
  dir=$(node_dir "$n")
  sock=$(node_sock "$n")
  mkdir -p "$dir/data" "$dir/exec"
  ensure_namespace "$n"
  start_forwarder "$root/forwarders/node$n.pid" nsenter --net="/run/netns/$(node_ns "$n")"
  if answers "$sock"; then
    say "node$n: engine already answers ($sock)"
  else
    # nsenter, not `ip netns exec`: that remounts /sys, hides the cgroup mounts, and dockerd
    # fails with "Devices cgroup isn't mounted". The engine's own docker0 and iptables are
    # in its namespace: nothing of the host's changes.
    nohup nsenter --net="/run/netns/$(node_ns "$n")" dockerd --data-root "$dir/data" --exec-root "$dir/exec" \
      --pidfile "$dir/dockerd.pid" -H "unix://$sock" >"$dir/dockerd.log" 2>&1 &
    for _ in $(seq 1 120); do
      answers "$sock" && break
      sleep 0.5
    done
    answers "$sock" || {
      tail -20 "$dir/dockerd.log" >&2
      die "node$n: dockerd did not answer within 60 s"
    }
    say "node$n: engine started in namespace $(node_ns "$n") (log: $dir/dockerd.log)"
  fi
  # An engine restarted on its old data root rejoins by itself (pending until it reaches the manager).
  local state
  for _ in $(seq 1 60); do
    state=$(swarm_state -H "unix://$sock")
    [ "$state" = pending ] || break
    sleep 0.5
  done
  if [ "$state" = pending ]; then
    # The manager no longer knows it (removed while it was down): it joins again as a new node.
    within 30 docker -H "unix://$sock" swarm leave --force >/dev/null 2>&1 || true
    state=inactive
  fi
  if [ "$state" = active ]; then
    say "node$n: already joined"
  else
    local token addr
    addr=$(node_addr "$n")
    token=$(within 30 docker swarm join-token -q worker)
    within 60 docker -H "unix://$sock" swarm join --token "$token" --listen-addr "$addr:2377" --advertise-addr "$addr" "$manager_addr:2377" >/dev/null
    say "node$n: joined as worker on $addr"
  fi
}

wait_ready() {
  local want=$((1 + ${#workers[@]}))
  for _ in $(seq 1 120); do
    local ready
    ready=$(docker node ls --format '{{.Status}} {{.Availability}}' | grep -c '^Ready Active' || true)
    if [ "$ready" -ge "$want" ]; then
      say "cluster: $ready nodes ready"
      return
    fi
    sleep 0.5
  done
  docker node ls >&2
  die "cluster: fewer than $want nodes became ready within 60 s"
}

cmd_up() {
  [ "$(id -u)" = 0 ] || die "run as root (it starts engines and makes namespaces and bridges)"
  command -v nsenter >/dev/null || die "nsenter is missing: apt-get install util-linux"
  # The nodes' engines and the registry keep every cell's image here: root's alone.
  mkdir -p "$root" && chmod 0700 "$root"
  ensure_bridge
  start_registry
  init_manager
  for n in "${workers[@]}"; do start_worker "$n"; done
  # Nodes an earlier cluster left "down" (not one of these engines) would count against this one.
  local ours
  ours=$(for n in "${workers[@]}"; do dk "$n" info --format '{{.Swarm.NodeID}}'; done)
  docker node ls --format '{{.ID}} {{.Status}}' | awk '$2 == "Down" { print $1 }' | grep -vxF "$ours" | xargs -r docker node rm --force >/dev/null || true
  wait_ready
  cmd_status
}

stop_worker() {
  local n=$1 dir sock
  dir=$(node_dir "$n")
  sock=$(node_sock "$n")
  say "node$n: stopping"
  if answers "$sock"; then
    within 20 docker -H "unix://$sock" swarm leave --force >/dev/null 2>&1 || say "node$n: swarm leave did not finish within 20 s; stopping the engine anyway"
  fi
  if pid_alive "$dir/dockerd.pid"; then
    local pid
    pid=$(cat "$dir/dockerd.pid")
    kill "$pid"
    for _ in $(seq 1 60); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.5
    done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    say "node$n: engine stopped"
  fi
  stop_pid "$root/forwarders/node$n.pid"
  # Whatever still runs in the namespace (a containerd shim of a killed engine) goes with it.
  if [ -e "/run/netns/$(node_ns "$n")" ]; then
    ip netns pids "$(node_ns "$n")" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  fi
  # A killed engine leaves its containerd shim mounts and network namespaces behind.
  if [ -d "$dir" ]; then
    { grep -o " $dir[^ ]*" /proc/self/mounts || true; } | sort -r | while read -r m; do within 10 umount -l "$m" 2>/dev/null || true; done
    within 60 rm -rf "$dir" || say "node$n: could not remove $dir within 60 s"
  fi
  # The namespace takes its end of the veth with it, and the veth its other end.
  if [ -e "/run/netns/$(node_ns "$n")" ]; then
    ip netns del "$(node_ns "$n")"
    say "node$n: namespace $(node_ns "$n") removed"
  fi
  ip link del "$(node_veth "$n")" 2>/dev/null || true
  # Left by the script before nodes had namespaces (their own bridge in the root namespace).
  ip link del "forgeswarm$n" 2>/dev/null || true
}

# What up makes and down must leave behind: one line each, none when clean.
leftovers() {
  local n
  for n in "${workers[@]}"; do
    [ -e "/run/netns/$(node_ns "$n")" ] && echo "network namespace $(node_ns "$n")"
    ip link show "$(node_veth "$n")" >/dev/null 2>&1 && echo "veth $(node_veth "$n")"
    ip link show "forgeswarm$n" >/dev/null 2>&1 && echo "bridge forgeswarm$n"
  done
  ip link show "$bridge" >/dev/null 2>&1 && echo "bridge $bridge"
  iptables -w -S FORWARD 2>/dev/null | grep -q -- "$rule_comment" && echo "iptables FORWARD rule $rule_comment"
  grep -q " $root" /proc/self/mounts && echo "mounts under $root"
  [ -e "$root" ] && echo "directory $root"
  registry_answers "$registry_listen" && echo "registry on $registry_listen"
  registry_answers "$registry_addr" && echo "something on $registry_addr"
  return 0
}

cmd_down() {
  [ "$(id -u)" = 0 ] || die "run as root"
  for n in "${workers[@]}"; do stop_worker "$n"; done
  if answers /var/run/docker.sock && [ "$(swarm_state)" != inactive ]; then
    if within 60 docker swarm leave --force >/dev/null; then
      say "manager: left the swarm"
    else
      say "warning: the manager did not leave the swarm within 60 s; run: docker swarm leave --force"
    fi
  fi
  stop_pid "$root/forwarders/manager.pid"
  if pid_alive "$root/registry/pid"; then
    stop_pid "$root/registry/pid"
    say "registry: stopped"
  fi
  rm -rf "$root"
  while iptables -w -D FORWARD -i "$bridge" -o "$bridge" -m comment --comment "$rule_comment" -j ACCEPT 2>/dev/null; do :; done
  ip link del "$bridge" 2>/dev/null || true
  if ip link show docker0 >/dev/null 2>&1; then
    say "down: the main engine's docker0 is still there"
  elif answers /var/run/docker.sock; then
    say "warning: docker0 is missing; restart the main dockerd"
  fi
  local left
  left=$(leftovers)
  [ -z "$left" ] || die "down left behind: $(echo "$left" | paste -sd ';' | sed 's/;/; /g')"
  say "down: nothing of the cluster is left"
}

cmd_status() {
  local ok=0
  if registry_answers "$registry_listen"; then say "registry: answers on $registry_listen"; else
    say "registry: not answering on $registry_listen"
    ok=1
  fi
  if registry_answers "$registry_addr"; then say "manager: reaches the registry as $registry_addr"; else
    say "manager: nothing answers on $registry_addr"
    ok=1
  fi
  local state
  state=$(swarm_state)
  say "manager: swarm $state"
  [ "$state" = active ] || ok=1
  for n in "${workers[@]}"; do
    if answers "$(node_sock "$n")"; then
      local reg=no
      in_ns "$n" curl -sf --max-time 2 "http://$registry_addr/v2/" >/dev/null 2>&1 && reg=yes
      say "node$n: engine answers in $(node_ns "$n") on $(node_addr "$n"), swarm $(swarm_state -H "unix://$(node_sock "$n")"), registry reachable: $reg"
      [ "$reg" = yes ] || ok=1
    else
      say "node$n: no engine"
      ok=1
    fi
  done
  if [ "$state" = active ]; then docker node ls --format 'swarm-cluster:   {{.Hostname}} {{.Status}} {{.Availability}} {{.ManagerStatus}} {{.ID}}'; fi
  return $ok
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  leftovers) leftovers ;;
  *) die "usage: scripts/swarm-cluster.sh up|down|status|leftovers" ;;
esac
