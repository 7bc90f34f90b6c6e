import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import type { CellSpec } from '../../protocol/cellSpec.js';
import { caBundleEnv } from '../hostCaBundle.js';
import { shellQuote } from '../../protocol/shellQuote.js';

/**
 * What runs inside a swarm cell's task, and how its answer is read back. Pure.
 *
 * The task starts the wrapper below as root (with only the capabilities to switch users and
 * take links down). It takes every network link but `lo` down and
 * checks it, writes the attempt's changes into the base tree as the cell user, runs the
 * command as that user with no_new_privs, then sends back the exit status, the list of
 * files and the files that changed, framed on the container's stderr: the command's stdout
 * and stderr both go to the container's stdout, so it has no way to write that channel, and
 * every frame line carries a nonce that only root inside the task can read (a Swarm secret).
 */

/** Where the runner's static busybox and the wrapper live in every swarm base image. */
export const SWARM_TOOLS_DIR = '/forge';
export const SWARM_BUSYBOX = `${SWARM_TOOLS_DIR}/busybox`;
export const SWARM_WRAPPER = `${SWARM_TOOLS_DIR}/wrapper.sh`;
/** Mounted from Swarm configs and a secret (root-only where it says so). */
export const SWARM_CELL_SCRIPT = '/forge-in/cell.sh';
export const SWARM_INPUT_TAR = '/forge-in/input.tar';
export const SWARM_NONCE_SECRET = 'forge-nonce';
export const SWARM_HOME = '/tmp/forge-home';

/** Files over this size are named, not brought back (the same bound diff capture has for untracked files). */
export const SWARM_RETURN_FILE_BYTES = 8 * 1024 * 1024;
/** Most bytes of changed files one cell sends back through the frame. */
export const SWARM_RETURN_TOTAL_BYTES = 16 * 1024 * 1024;
/**
 * Most bytes of the archive that carries them: a tar header and padding per file besides the
 * content (40,000 small files are 40 MB of archive for a few hundred KB of content).
 */
export const SWARM_RETURN_ARCHIVE_BYTES = 64 * 1024 * 1024;

/** What one cell may send back: per file, in all, and as the archive that carries it. */
export interface ReturnBudget {
  fileBytes: number;
  totalBytes: number;
  archiveBytes: number;
}

export const CELL_RETURN_BUDGET: ReturnBudget = {
  fileBytes: SWARM_RETURN_FILE_BYTES,
  totalBytes: SWARM_RETURN_TOTAL_BYTES,
  archiveBytes: SWARM_RETURN_ARCHIVE_BYTES,
};

/**
 * A cell whose product is what it leaves in the worktree (no diff asked: the run's install
 * step) sends back far more: a node_modules of 7,000 files and 44 MB is an ordinary install.
 * Still bounded: the frame of an incompressible archive this size fits the task's log.
 */
export const INSTALL_RETURN_BUDGET: ReturnBudget = {
  fileBytes: 64 * 1024 * 1024,
  totalBytes: 256 * 1024 * 1024,
  archiveBytes: 320 * 1024 * 1024,
};

/** Pure: the budget of a cell (see INSTALL_RETURN_BUDGET). */
export function returnBudgetFor(spec: Pick<CellSpec, 'capture_diff'>): ReturnBudget {
  return spec.capture_diff ? CELL_RETURN_BUDGET : INSTALL_RETURN_BUDGET;
}

/** The wrapper's variables that carry a cell's budget (set on the service, out of the command's reach). */
export function returnBudgetEnv(b: ReturnBudget): string[] {
  return [`FORGE_RETURN_FILE=${b.fileBytes}`, `FORGE_RETURN_TOTAL=${b.totalBytes}`, `FORGE_RETURN_ARCHIVE=${b.archiveBytes}`];
}

/** Most bytes of the frame's files section as the wrapper reads it (before compression). */
const filesSectionBytes = (b: ReturnBudget) => b.archiveBytes + 1024 * 1024;
const SWARM_ALL_SECTION_BYTES = 256 * 1024 * 1024;

export const SWARM_WRAPPER_SCRIPT = `# forge swarm cell wrapper: runs as root inside the task, the command never does.
B=${SWARM_BUSYBOX}
W=$FORGE_WORKDIR
U=$FORGE_CELL_UID
$B mkdir -m 700 /forge-run || exit 125
exec 3>&2 2>>/forge-run/err
nonce=$($B cat /run/secrets/${SWARM_NONCE_SECRET})
[ -n "$nonce" ] || exit 125
say() { echo "FORGE $nonce $*" >&3; }
section() { say "$1"; $B head -c "$3" "$2" | $B base64 >&3; }
# Compressed: the frame travels through the node's log, the manager and its log stream (a few
# MB/s), and the node's log is capped: a tar of many small files is mostly headers and padding.
zsection() { say "$1"; $B head -c "$3" "$2" | $B gzip -c | $B base64 >&3; }
fail() { say "fail $*"; section notes /forge-run/err 4096; say "exit 125"; exit 125; }
run_as() { $B nsenter -S "$U" -G "$U" $B setpriv --nnp "$@"; }

# No network but the way to the egress relay (FORGE_NET_RELAY, only for a cell with allow_net),
# whatever the node gives its tasks: every other link goes down, then it is checked.
keep=
if [ -n "\${FORGE_NET_RELAY:-}" ]; then
  keep=$($B ip route get "$FORGE_NET_RELAY" 2>/dev/null | $B sed -n 's/.* dev \\([^ ]*\\).*/\\1/p' | $B head -1)
  [ -n "$keep" ] || fail "no link reaches the egress relay $FORGE_NET_RELAY"
fi
for dev in $($B ls /sys/class/net); do
  { [ "$dev" = lo ] || [ "$dev" = "$keep" ]; } && continue
  $B ip link set dev "$dev" down || fail "could not take the link $dev down"
done
[ -z "$($B ip -o link show up | $B grep -vE ": (lo|\${keep:-lo})(@[^:]*)?:")" ] || fail "a network link is still up"
# The relay's overlay is internal: a link route to its subnet, never a default route.
[ -z "$($B ip route show | $B grep -vE "^[0-9./]+ dev \${keep:-none} ")" ] || fail "routes remain besides the relay's network"
[ -z "$($B ip -6 route show 2>/dev/null | $B grep -vE '^(fe80|ff00|local|multicast)')" ] || fail "IPv6 routes remain after the links went down"

$B tar -xf ${SWARM_INPUT_TAR} -C /forge-run || fail "the cell's input could not be read"
cd "$W" || fail "no directory $W in the image"
if [ -s /forge-run/overlay.tar ]; then
  run_as $B tar -xf - -C "$W" </forge-run/overlay.tar || fail "the attempt's changes could not be written"
fi
if [ -s /forge-run/deleted ]; then
  run_as $B xargs -r -0 $B rm -rf -- </forge-run/deleted || fail "the attempt's deletions could not be made"
fi
$B touch /forge-run/stamp
since=$($B stat -c %z /forge-run/stamp)

# The command's output reaches the task's stdout through a counter, so the runner knows when all of it arrived.
$B mkfifo -m 600 /forge-run/out || fail "no output pipe"
exec 4>&1
# The output cap holds at the source too (logs can lag far behind a firehose): one byte past
# it is enough for the runner to see it, and the command gets SIGPIPE on its next write.
# dd, not head -c: busybox's head holds what it read until it ends, so a cell's output would
# not stream and a cell killed for its timeout would lose all of it.
cap="$B cat"
if [ "\${FORGE_OUTPUT_LIMIT:-0}" -gt 0 ]; then cap="$B dd bs=65536 count=$((FORGE_OUTPUT_LIMIT + 1)) iflag=count_bytes status=none"; fi
($cap </forge-run/out | $B tee /dev/fd/4 | $B wc -c >/forge-run/count) 3>&- &
counter=$!
run_as $B sh ${SWARM_CELL_SCRIPT} </dev/null >/forge-run/out 2>&1 3>&- 4>&-
code=$?
# What the command left running (its user's processes only) would keep writing and changing the tree.
run_as $B kill -9 -1 2>/dev/null
wait $counter
# A last line without a newline may never leave the node's log: the runner drops this one.
echo

cd "$W"
NL='
'
# .git and the installed dependencies (FORGE_PRUNE, one ./path a line) are not the worktree's to send back.
set -- -path ./.git -prune
saved_ifs=$IFS
IFS=$NL
set -f
for p in $FORGE_PRUNE; do set -- "$@" -o -path "$p" -prune; done
set +f
IFS=$saved_ifs
run_as $B find . \\( "$@" \\) -o ! -type d ! -path "*$NL*" -print0 >/forge-run/all || fail "the worktree could not be listed"
# NUL-separated: a name with a newline would read as several names (and could hide a deletion).
run_as $B find . \\( "$@" \\) -o ! -type d -path "*$NL*" -print0 >/forge-run/newline
: >/forge-run/changed
: >/forge-run/omitted
# Changed since the stamp by ctime, which no command can set back; same tick counts as changed.
run_as $B xargs -r -0 $B stat -c '%z %s %n' </forge-run/all >/forge-run/stat
# The archive's own size is counted too (header and padding per file, a long name's extra header).
ret_file=\${FORGE_RETURN_FILE:-${SWARM_RETURN_FILE_BYTES}}
ret_total=\${FORGE_RETURN_TOTAL:-${SWARM_RETURN_TOTAL_BYTES}}
ret_archive=\${FORGE_RETURN_ARCHIVE:-${SWARM_RETURN_ARCHIVE_BYTES}}
$B awk -v since="$since" -v max="$ret_file" -v budget="$ret_total" -v archmax="$ret_archive" '
  { ct = substr($0, 1, 35); rest = substr($0, 37); sp = index(rest, " ")
    size = substr(rest, 1, sp - 1) + 0; path = substr(rest, sp + 1)
    if (ct < since) next
    if (size > max) { print "too-large " size " " path >> "/forge-run/omitted"; next }
    arch = 512 + int((size + 511) / 512) * 512 + (length(path) > 98 ? 1024 + int((length(path) + 512) / 512) * 512 : 0)
    if (total + size > budget || archived + arch > archmax) { print "budget " size " " path >> "/forge-run/omitted"; next }
    total += size; archived += arch; print path >> "/forge-run/changed" }' /forge-run/stat
: >/forge-run/files.tar
# No tar -T in busybox: xargs may split the list, so files.tar can be several archives in a row.
if [ -s /forge-run/changed ]; then $B tr '\\n' '\\0' </forge-run/changed | run_as $B xargs -r -0 $B tar -cf - >/forge-run/files.tar; fi
zsection files /forge-run/files.tar $((ret_archive + 1048576))
zsection all /forge-run/all ${SWARM_ALL_SECTION_BYTES}
section omitted /forge-run/omitted 1048576
zsection newline /forge-run/newline 1048576
section notes /forge-run/err 4096
say "output $($B cat /forge-run/count)"
# The task's own cgroup (v1 or v2) says whether the kernel killed something for memory.
say "oom $($B cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null | $B awk '$1 == "oom_kill" { print $2; exit }')"
say "exit $code"
exit "$code"
`;

/** Pure: a hash of the wrapper, part of every base image's tag (a new wrapper makes new images). */
export function wrapperDigest(): string {
  return createHash('sha256').update(SWARM_WRAPPER_SCRIPT).digest('hex').slice(0, 16);
}

/**
 * Pure: the script the cell user runs. The exact argv and environment as quoted words (no
 * word parsing anywhere), a scrubbed environment, the image's /bin/sh as the docker cell's
 * entry wrapper uses it, and "exec" so the command is what exits.
 */
export function buildCellScript(
  spec: Pick<CellSpec, 'cmd' | 'env'>,
  workdir: string,
  caBundle: string | null,
  /** allow_net: the proxy variables naming the relay, after the spec's own as for docker cells. */
  networkEnv: Record<string, string> = {},
): string {
  const argv = typeof spec.cmd === 'string' ? ['/bin/sh', '-c', spec.cmd] : spec.cmd;
  const env: Record<string, string> = {
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    CI: 'true',
    PYTHONDONTWRITEBYTECODE: '1',
    HOME: SWARM_HOME,
    TMPDIR: '/tmp',
    ...(caBundle ? caBundleEnv(caBundle) : {}),
    ...spec.env,
    ...networkEnv,
  };
  const words = [
    ...(spec.env.PATH === undefined ? ['"PATH=$PATH"'] : []),
    ...Object.entries(env).map(([k, v]) => shellQuote(`${k}=${v}`)),
    shellQuote('/bin/sh'),
    shellQuote('-c'),
    shellQuote('mkdir -p "$HOME" 2>/dev/null; exec "$@"'),
    shellQuote('forge-cell'),
    ...argv.map(shellQuote),
  ];
  return `cd ${shellQuote(workdir)} || exit 126\nexec ${SWARM_BUSYBOX} env -i ${words.join(' ')}\n`;
}

export interface ReturnedFrame {
  /** The command's exit status as the wrapper saw it (125: the wrapper itself failed). */
  exitCode: number;
  /** Why the wrapper failed before or around the command, when it did. */
  failure: string | null;
  files: Buffer;
  /** Every file and link in the worktree after the command (paths relative, "./" stripped). */
  all: string[];
  omitted: { path: string; reason: string }[];
  notes: string;
  /** Bytes of output the command wrote (the runner waits until that many arrived). */
  outputBytes: number | null;
  /** Processes the kernel killed in the task's cgroup for memory. */
  oomKills: number;
}

/**
 * Pure: reads the wrapper's frame out of the task's stderr. Only lines carrying the nonce
 * count; null when no complete frame (ending in an exit line) is there.
 */
export function parseReturnedFrame(stderr: string, nonce: string, budget: ReturnBudget = CELL_RETURN_BUDGET): ReturnedFrame | null {
  const sections = new Map<string, string[]>();
  let current: string[] | null = null;
  let exitCode: number | null = null;
  let failure: string | null = null;
  let outputBytes: number | null = null;
  let oomKills = 0;
  const tag = `FORGE ${nonce} `;
  for (const line of stderr.split('\n')) {
    if (line.startsWith(tag)) {
      const [word, ...rest] = line.slice(tag.length).split(' ');
      current = null;
      if (word === 'exit') {
        const n = Number(rest[0]);
        if (!Number.isInteger(n) || n < 0 || n > 255) return null;
        exitCode = n;
        break;
      }
      if (word === 'fail') failure = rest.join(' ');
      else if (word === 'oom') oomKills = /^\d+$/.test(rest[0] ?? '') ? Number(rest[0]) : 0;
      else if (word === 'output') outputBytes = /^\d+$/.test(rest[0] ?? '') ? Number(rest[0]) : null;
      else if (word) {
        current = [];
        sections.set(word, current);
      }
    } else if (current) current.push(line);
  }
  if (exitCode === null) return null;
  const decode = (name: string) => Buffer.from((sections.get(name) ?? []).join(''), 'base64');
  // The wrapper bounded what it compressed: more out of it, or a broken stream, is not its frame.
  let unreadable: string | null = null;
  const inflate = (name: string, max: number) => {
    const raw = decode(name);
    if (raw.length === 0) return raw;
    try {
      return gunzipSync(raw, { maxOutputLength: max });
    } catch (e) {
      unreadable ??= `the frame's ${name} section could not be read (${(e as Error).message})`;
      return Buffer.alloc(0);
    }
  };
  const omitted = decode('omitted')
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [kind, size, ...path] = line.split(' ');
      const p = stripDot(path.join(' '));
      const reason =
        kind === 'too-large'
          ? `file larger than ${budget.fileBytes} bytes (${size}): not brought back from the swarm node`
          : kind === 'budget'
            ? `past the budget of files a swarm cell sends back (${budget.totalBytes} bytes of content, ${budget.archiveBytes} as an archive)`
            : 'not brought back from the swarm node';
      return { path: p, reason };
    })
    .concat(
      inflate('newline', 1024 * 1024)
        .toString('utf8')
        .split('\0')
        .filter(Boolean)
        .map((path) => ({ path: stripDot(path), reason: 'its path has a newline: not brought back from the swarm node' })),
    );
  const files = inflate('files', filesSectionBytes(budget));
  const all = inflate('all', SWARM_ALL_SECTION_BYTES).toString('utf8').split('\0').filter(Boolean).map(stripDot);
  return {
    exitCode,
    // The command's exit is known; what it changed is not: nothing is brought back.
    failure: failure ?? unreadable,
    files,
    all,
    omitted,
    notes: decode('notes').toString('utf8'),
    outputBytes,
    oomKills,
  };
}

function stripDot(p: string): string {
  return p.replace(/^(\.\/)+/, '');
}
