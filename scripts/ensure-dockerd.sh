#!/usr/bin/env bash
# Starts a Docker engine if none answers on /var/run/docker.sock, and waits until it does.
# Used by .ci/run and by developers on machines without systemd (no engine runs by default
# on our machines: see ../shared/FACTS.md). Idempotent.
set -euo pipefail
sock=/var/run/docker.sock
answers() { curl -sf --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1; }
if answers; then echo "dockerd: already running"; exit 0; fi
command -v dockerd >/dev/null || { echo "dockerd is not installed: apt-get install docker.io" >&2; exit 1; }
log=${DOCKERD_LOG:-/var/log/forge-dockerd.log}
nohup dockerd --host "unix://$sock" >"$log" 2>&1 &
for _ in $(seq 1 120); do
  if answers; then echo "dockerd: started (log: $log)"; exit 0; fi
  sleep 0.5
done
echo "dockerd did not answer within 60 s; last lines of $log:" >&2
tail -20 "$log" >&2
exit 1
