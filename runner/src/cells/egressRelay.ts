/**
 * How a host cell with allow_net reaches the runner's egress proxy without any host network:
 * the sandbox has its own network namespace (only `lo`), the proxy's per-cell Unix socket is
 * bound into it, and a relay inside listens on the sandbox's own 127.0.0.1 and carries each
 * TCP connection to that socket, so `HTTP(S)_PROXY` works for npm, pip, curl and git.
 *
 * The relay is no boundary: the cell runs as the same user and could talk to the socket
 * itself. The socket is the only way out, and the proxy behind it checks the cell's token and
 * allowlist. The relay is the runner's own node binary running a script passed on its command
 * line (nothing the cell can replace before it starts); socat is not on these machines, and
 * node is always there since the runner runs on it.
 */

/** Where the sandbox sees the relay's parts: under /run, which no worktree or dependency can cover. */
export const SANDBOX_EGRESS = {
  dir: '/run/forge-egress',
  socket: '/run/forge-egress/proxy.sock',
  node: '/run/forge-egress/node',
  /** The relay's port on the sandbox's own loopback (the cell's HTTP(S)_PROXY). */
  host: '127.0.0.1',
  port: 3128,
} as const;

/**
 * The relay: listens on 127.0.0.1:PORT and pipes each connection to the Unix socket. It says
 * "ready" on its stdout once listening and then lets go of it (the starter waits for that
 * line, and for the pipe to close, before the command runs).
 */
export const RELAY_SCRIPT = [
  "const net = require('net'), fs = require('fs');",
  'const [port, socket] = process.argv.slice(1);',
  'const server = net.createServer({ allowHalfOpen: true }, (client) => {',
  '  const up = net.connect({ path: socket, allowHalfOpen: true });',
  '  const end = () => { client.destroy(); up.destroy(); };',
  "  for (const s of [client, up]) { s.on('error', end); s.on('close', end); }",
  '  client.pipe(up); up.pipe(client);',
  '});',
  "server.on('error', (e) => { fs.writeSync(1, 'failed ' + e.code + '\\n'); process.exit(1); });",
  // fd 1 is given /dev/null rather than left free: the next socket would otherwise take it.
  "server.listen(Number(port), '127.0.0.1', () => { fs.writeSync(1, 'ready\\n'); fs.closeSync(1); fs.openSync('/dev/null', 'w'); });",
].join('\n');

/**
 * Runs as the cell user with PATH alone (before the spec's environment is set, so no
 * NODE_OPTIONS reaches the relay): starts the relay in the background (it is reparented to
 * the sandbox's init and dies with the pid namespace), waits until it listens, then execs the
 * rest of its arguments. A relay that did not start fails the cell before the command runs.
 */
const STARTER =
  'ready=$("$1" --v8-pool-size=1 --max-old-space-size=32 -e "$2" "$3" "$4" 2>/dev/null &); ' +
  '[ "$ready" = ready ] || { echo "forge: the cell\'s egress relay did not start (${ready:-no answer}); the command did not run" >&2; exit 125; }; ' +
  'shift 4; exec "$@"';

/** Pure: the argv prefix that starts the relay inside the sandbox and then runs what follows. */
export function relayStarterArgv(): string[] {
  return ['/bin/sh', '-c', STARTER, 'forge-egress', SANDBOX_EGRESS.node, RELAY_SCRIPT, String(SANDBOX_EGRESS.port), SANDBOX_EGRESS.socket];
}
