#!/usr/bin/env bash
# Installs code-server 4.100.3 (VS Code 1.100, Node 20) for the end-to-end suite, outside
# the project's node_modules. Its postinstall needs root tweaks and downloads ripgrep, so the
# steps are done by hand (see ../shared/FACTS.md). Idempotent: a finished install is kept.
# Needs the Debian packages pkg-config libkrb5-dev libxkbfile-dev libsecret-1-dev libx11-dev
# ripgrep (.ci/run installs them).
set -euo pipefail
dir="${FORGE_CODE_SERVER_DIR:-$HOME/.cache/forge-cells/code-server-4.100.3}"
if [ -f "$dir/.forge-ready" ]; then echo "code-server: $dir"; exit 0; fi
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"
echo '{"name":"forge-code-server","private":true}' > package.json
echo "code-server: npm install (into $dir)"
npm install --ignore-scripts --no-audit --no-fund --loglevel=error code-server@4.100.3
cd node_modules/code-server/lib/vscode
npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error
npm_config_yes=true npm rebuild --loglevel=error node-pty @parcel/watcher @vscode/spdlog native-watchdog @vscode/deviceid kerberos
mkdir -p node_modules/@vscode/ripgrep/bin
ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
ln -sfn node_modules node_modules.asar
# argon2 (password auth) is hoisted next to code-server in this install.
cd "$dir"
npm rebuild --loglevel=error argon2
touch "$dir/.forge-ready"
echo "code-server: $dir"
