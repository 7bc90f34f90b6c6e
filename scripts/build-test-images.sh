#!/usr/bin/env bash
# Builds the local Docker images the tests use. No registry is reachable on our machines,
# so images come from root filesystems built here and `docker import`ed:
#   forge-test/busybox:1      busybox-static applets (fast conformance image)
#   forge-test/bookworm:3     debootstrap'd Debian bookworm with python3-pytest, pip, nodejs, npm,
#                             gcc, make and go (the toolchains the stack and corpus tests need),
#                             built on forge-test/bookworm-base:1
# Idempotent: an image that exists is kept. Needs root, dockerd, busybox-static, debootstrap.
# The Debian mirror is the one this machine's apt already uses (FORGE_DEBIAN_MIRROR overrides).
set -euo pipefail

# Prints the first http(s) URI of a non-security `deb` source: deb822 *.sources files first
# (Types/URIs/Suites stanzas), then one-line sources.list entries.
apt_debian_mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && suites !~ /-security/ && uri != "") { print uri; found = 1; exit }
        types = ""; uris = ""; suites = ""; uri = ""
      }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      tolower($1) == "types:"  { $1 = ""; types = $0 }
      tolower($1) == "suites:" { $1 = ""; suites = $0 }
      tolower($1) == "uris:"   { for (i = 2; i <= NF; i++) if ($i ~ /^https?:\/\//) { uri = $i; break } }
      END { if (!found) flush() }
    ' "$f" | head -1
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    # deb [options] URI suite components...
    sed -E 's/\[[^]]*\]//' "$f" | awk '$1 == "deb" && $2 ~ /^https?:\/\// && $3 !~ /-security/ { print $2 }'
  done
}
mirror=${FORGE_DEBIAN_MIRROR:-$(apt_debian_mirror | head -1)}
mirror=${mirror%/}
work=$(mktemp -d /var/tmp/forge-images.XXXXXX)
trap 'rm -rf "$work"' EXIT

have() { docker image inspect "$1" >/dev/null 2>&1; }

if have forge-test/busybox:1; then
  echo "forge-test/busybox:1 present"
else
  root="$work/busybox"
  mkdir -p "$root/bin" "$root/tmp" "$root/etc" "$root/work"
  chmod 1777 "$root/tmp"
  cp "$(command -v busybox)" "$root/bin/busybox"
  for applet in $("$root/bin/busybox" --list); do [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"; done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
  tar -C "$root" -c . | docker import -c 'ENV PATH=/bin' - forge-test/busybox:1 >/dev/null
  echo "built forge-test/busybox:1"
fi

if have forge-test/bookworm-base:1; then
  echo "forge-test/bookworm-base:1 present"
else
  root="$work/bookworm"
  if [ -z "$mirror" ]; then
    echo "no Debian mirror: none in /etc/apt/sources.list{,.d/*.list,.d/*.sources}; set FORGE_DEBIAN_MIRROR" >&2
    exit 1
  fi
  echo "debootstrap bookworm from $mirror (about a minute)..."
  debootstrap --variant=minbase --include=python3-pytest,nodejs,gcc,libc6-dev,make,git bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -30 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$root/var/cache/apt/archives/"*.deb
  tar -C "$root" -c . | docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - forge-test/bookworm-base:1 >/dev/null
  echo "built forge-test/bookworm-base:1"
fi

# npm and pip do not configure inside debootstrap's --include; apt in a container does.
if have forge-test/bookworm:3; then
  echo "forge-test/bookworm:3 present"
elif have forge-test/bookworm:2; then
  # :2 plus go (the corpus has a Go module): one layer on the image a machine already has.
  mkdir -p "$work/ctx3"
  cat > "$work/ctx3/Dockerfile" <<'DOCKERFILE'
FROM forge-test/bookworm:2
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
DOCKERFILE
  docker build -q -t forge-test/bookworm:3 "$work/ctx3" >/dev/null
  echo "built forge-test/bookworm:3"
else
  mkdir -p "$work/ctx"
  cat > "$work/ctx/Dockerfile" <<'DOCKERFILE'
FROM forge-test/bookworm-base:1
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm python3-pip golang-go >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
DOCKERFILE
  docker build -q -t forge-test/bookworm:3 "$work/ctx" >/dev/null
  echo "built forge-test/bookworm:3"
fi
