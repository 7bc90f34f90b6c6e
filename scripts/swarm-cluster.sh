#!/usr/bin/env bash
# A 3-node Docker Swarm on one machine for the swarm cell provider's tests and bench:
# the local dockerd is the manager (127.0.0.1), two more engines run as plain processes
# (own data root, exec root, socket and bridge) and join as workers on 127.0.0.2 and
# 127.0.0.3, and Debian's docker-registry serves 127.0.0.1:5000 for the nodes to pull from.
# Docker-in-Docker cannot run on our machines (see ../shared/FACTS.md for the checked recipe).
#
#   scripts/swarm-cluster.sh up       start and join everything (idempotent)
#   scripts/swarm-cluster.sh down     leave the swarm, stop the engines and the registry, remove
#                                     their bridges and data (idempotent; docker0 stays)
#   scripts/swarm-cluster.sh status   what runs, one line each; exit 1 when the cluster is not up
#
# Runs as root. FORGE_SWARM_ROOT changes where the extra engines keep their state.
set -euo pipefail
cd "$(dirname "$0")/.."

root=${FORGE_SWARM_ROOT:-/var/lib/forge-swarm}
workers=(2 3)
registry_addr=127.0.0.1:5000
manager_addr=127.0.0.1

say() { printf 'swarm-cluster: %s\n' "$*"; }
die() {
  printf 'swarm-cluster: %s\n' "$*" >&2
  exit 1
}

node_dir() { echo "$root/node$1"; }
node_sock() { echo "$(node_dir "$1")/docker.sock"; }
# Interface names are at most 15 characters.
node_bridge() { echo "forgeswarm$1"; }
dk() { docker -H "unix://$(node_sock "$1")" "${@:2}"; }
# An engine can hang a swarm call forever (a CI run once sat 50 minutes in a worker's
# `swarm leave`): every call that changes membership gets a deadline, and down goes on without it.
within() { timeout -k 5 "$@"; }
answers() { curl -sf --max-time 2 --unix-socket "$1" http://localhost/_ping >/dev/null 2>&1; }
registry_answers() { curl -sf --max-time 2 "http://$registry_addr/v2/" >/dev/null 2>&1; }
swarm_state() { docker "$@" info --format '{{.Swarm.LocalNodeState}}' 2>/dev/null || echo unreachable; }
pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start_registry() {
  if registry_answers; then
    say "registry: already answers on $registry_addr"
    [ -d "$root/registry" ] && chmod 0700 "$root/registry" "$root/registry/data" 2>/dev/null
    return
  fi
  command -v docker-registry >/dev/null || die "docker-registry is not installed: apt-get install docker-registry"
  local dir="$root/registry"
  mkdir -p "$dir/data"
  # The registry's blobs are every cell's tree and changes: readable only through the
  # registry itself, never as files (a host cell sees the host's root read-only).
  chmod 0700 "$dir" "$dir/data"
  cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
http:
  addr: $registry_addr
EOF
  nohup docker-registry serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
  echo $! >"$dir/pid"
  for _ in $(seq 1 60); do
    if registry_answers; then
      say "registry: started on $registry_addr (log: $dir/registry.log)"
      return
    fi
    sleep 0.25
  done
  tail -20 "$dir/registry.log" >&2
  die "registry did not answer on $registry_addr within 15 s"
}

init_manager() {
  bash scripts/ensure-dockerd.sh >/dev/null
  local state
  state=$(swarm_state)
  if [ "$state" = active ]; then
    say "manager: already in a swarm"
  else
    within 60 docker swarm init --advertise-addr "$manager_addr" --listen-addr "$manager_addr:2377" >/dev/null
    say "manager: swarm initialised on $manager_addr:2377"
  fi
  [ "$(docker info --format '{{.Swarm.ControlAvailable}}')" = true ] || die "the local engine is in a swarm but not a manager; run: docker swarm leave --force"
}

start_worker() {
  local n=$1 dir sock bridge
  dir=$(node_dir "$n")
  sock=$(node_sock "$n")
  bridge=$(node_bridge "$n")
  mkdir -p "$dir/data" "$dir/exec"
  # Its own bridge: an engine started with --bridge none deletes the main engine's docker0.
  if ! ip link show "$bridge" >/dev/null 2>&1; then
    ip link add name "$bridge" type bridge
    ip addr add "10.201.$n.1/24" dev "$bridge"
  fi
  ip link set "$bridge" up
  if answers "$sock"; then
    say "node$n: engine already answers ($sock)"
  else
    nohup dockerd --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$dir/dockerd.pid" \
      -H "unix://$sock" --bridge "$bridge" --iptables=false --ip-masq=false \
      >"$dir/dockerd.log" 2>&1 &
    for _ in $(seq 1 120); do
      answers "$sock" && break
      sleep 0.5
    done
    answers "$sock" || {
      tail -20 "$dir/dockerd.log" >&2
      die "node$n: dockerd did not answer within 60 s"
    }
    say "node$n: engine started (log: $dir/dockerd.log)"
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
    local token
    token=$(within 30 docker swarm join-token -q worker)
    within 60 docker -H "unix://$sock" swarm join --token "$token" --listen-addr "127.0.0.$n:2377" --advertise-addr "127.0.0.$n" "$manager_addr:2377" >/dev/null
    say "node$n: joined as worker on 127.0.0.$n"
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
  [ "$(id -u)" = 0 ] || die "run as root (it starts engines and makes bridges)"
  # The nodes' engines and the registry keep every cell's image here: root's alone.
  mkdir -p "$root" && chmod 0700 "$root"
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
  local n=$1 dir sock bridge
  dir=$(node_dir "$n")
  sock=$(node_sock "$n")
  bridge=$(node_bridge "$n")
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
  # A killed engine leaves its containerd shim mounts and network namespaces behind.
  if [ -d "$dir" ]; then
    grep -o " $dir[^ ]*" /proc/self/mounts | sort -r | while read -r m; do within 10 umount -l "$m" 2>/dev/null || true; done
    within 60 rm -rf "$dir" || say "node$n: could not remove $dir within 60 s"
  fi
  if ip link show "$bridge" >/dev/null 2>&1; then
    ip link del "$bridge"
    say "node$n: bridge $bridge removed"
  fi
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
  if pid_alive "$root/registry/pid"; then
    kill "$(cat "$root/registry/pid")"
    say "registry: stopped"
  fi
  rm -rf "$root"
  if ip link show docker0 >/dev/null 2>&1; then
    say "down: the main engine's docker0 is still there"
  else
    say "warning: docker0 is missing; restart the main dockerd"
  fi
}

cmd_status() {
  local ok=0
  if registry_answers; then say "registry: answers on $registry_addr"; else
    say "registry: not answering on $registry_addr"
    ok=1
  fi
  local state
  state=$(swarm_state)
  say "manager: swarm $state"
  [ "$state" = active ] || ok=1
  for n in "${workers[@]}"; do
    if answers "$(node_sock "$n")"; then say "node$n: engine answers, swarm $(swarm_state -H "unix://$(node_sock "$n")")"; else
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
  *) die "usage: scripts/swarm-cluster.sh up|down|status" ;;
esac
