import Docker from 'dockerode';
import { createHash } from 'node:crypto';
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { replaceAt } from '../hostguard/beneath.js';
import { readRegularFile } from '../hostguard/readRegularFile.js';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { InputError } from '../protocol/inputError.js';
import { excludeForgeDirIfRepo, FORGE_DIR } from '../workspace/attemptWorktree.js';
import { detectStacks, type DetectedStack } from './detectStack.js';
import { readRepoFacts } from './readRepoFacts.js';
import { caBundleEnv, CELL_CA_PATH, findHostCaBundle } from '../cells/hostCaBundle.js';

export interface BakeOptions {
  repo: string;
  base: string;
  /** Overrides the detected install command; null bakes without an install step. */
  install?: string | null;
  onProgress?: (line: string) => void;
}

export interface BakeResult {
  image: string;
  image_id: string;
  hash: string;
  reused: boolean;
  base: string;
  base_image_id: string;
  stack: string | null;
  install: string | null;
  test: string | null;
  lockfiles: string[];
  duration_ms: number;
}

/** Pure: the bake identity. Same base image, lockfile contents and install command -> same image. */
export function bakeHash(baseImageId: string, install: string | null, lockfiles: { name: string; content: Buffer }[]): string {
  const h = createHash('sha256');
  h.update(
    JSON.stringify([
      'forge-bake/1',
      baseImageId,
      install,
      lockfiles.map((l) => [l.name, createHash('sha256').update(l.content).digest('hex')]),
    ]),
  );
  return h.digest('hex').slice(0, 16);
}

/**
 * Pure: the Dockerfile of a bake. Cells bind the worktree over /work, which would hide
 * anything installed there, so node_modules moves to /node_modules (Node's resolution walks
 * up to it); Python, Go, Rust and Java caches already live outside the project directory.
 */
export function renderDockerfile(baseImageId: string, lockfiles: string[], install: string | null, hash: string, caBundle = false): string {
  const lines = [`FROM ${baseImageId}`, 'WORKDIR /work'];
  if (lockfiles.length > 0) lines.push(`COPY ${JSON.stringify([...lockfiles, './'])}`);
  if (install && caBundle) {
    // The host's CA bundle, for networks that inspect TLS; it stays for the cells, which get the same.
    lines.push(`COPY ${JSON.stringify([BAKE_CA_FILE, CELL_CA_PATH])}`);
    lines.push(
      `ENV ${Object.entries(caBundleEnv(CELL_CA_PATH))
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );
  }
  if (install) {
    // Debian-based images refuse system-wide pip installs (PEP 668); a throwaway image may.
    lines.push('ENV PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1');
    lines.push(`RUN ${JSON.stringify(['/bin/sh', '-c', install])}`);
    lines.push(
      `RUN ${JSON.stringify(['/bin/sh', '-c', 'if [ -d node_modules ]; then rm -rf /node_modules && mv node_modules /node_modules; fi'])}`,
    );
  }
  lines.push(`LABEL forge.bake.hash=${JSON.stringify(hash)}`);
  return lines.join('\n') + '\n';
}

/** The CA bundle's name in the build context (no lockfile is called that). */
const BAKE_CA_FILE = 'forge-host-ca.pem';

/**
 * The install step of a bake failed: bad input (the project's install, its network), not a
 * bug of the runner. One line: the step, its exit code, its last lines, the way out.
 */
export class BakeInstallError extends InputError {}

/** Pure: the one-line message for a failed build, from the daemon's error and the step's output. */
export function describeBakeFailure(install: string | null, daemonError: string, outputTail: string[]): string {
  const exit = /returned a non-zero code: (\d+)/.exec(daemonError)?.[1];
  const clean = (l: string) =>
    l
      // eslint-disable-next-line no-control-regex -- terminal escapes in a build's output
      .replace(/\x1b\[[0-9;]*[A-Za-z]/g, '')
      // eslint-disable-next-line no-control-regex -- control characters in a build's output
      .replace(/[\x00-\x1f\x7f]/g, ' ')
      .trim();
  const lines = outputTail
    .join('')
    .split('\n')
    .map(clean)
    .filter(
      (l) =>
        l &&
        !/^(Step \d+\/\d+ :|---> |Removing intermediate container|Running in )/.test(l) &&
        !/A complete log of this run|_logs\//.test(l),
    );
  const last = lines.slice(-3);
  const network = lines.some((l) =>
    /EAI_AGAIN|ENOTFOUND|ECONNREFUSED|ETIMEDOUT|SELF_SIGNED_CERT|UNABLE_TO_VERIFY|certificate verify failed|TLS error|Temporary failure in name resolution|Could not resolve host|Network is unreachable/.test(
      l,
    ),
  );
  const step = install ? `the install step "${install}"` : 'the build';
  const why = network ? '; the package registry was not reachable from the build (network or TLS)' : '';
  return (
    `bake: ${step} failed${exit ? ` (exit ${exit})` : ''}: ${last.join(' | ') || clean(daemonError)}${why}; ` +
    `the way out: fix the install (or pass --install CMD), bake with --no-install and install in your checkout instead, or make the registry reachable`
  );
}

export function bakedTag(hash: string): string {
  return `forge-prj-${hash}:bootstrap`;
}

/**
 * What a bake reads from the repository: the detected stack, the install command and the
 * lockfiles' contents (regular files only, never through a link, each bounded).
 */
export function readBakeInputs(
  repo: string,
  installOverride: string | null | undefined,
): { primary: DetectedStack | undefined; install: string | null; lockfiles: string[]; contents: { name: string; content: Buffer }[] } {
  // The image has no access to the checkout's virtualenv: its install and tests use the image's python.
  const stacks = detectStacks({ ...readRepoFacts(repo), venv: null });
  const primary: DetectedStack | undefined = stacks[0];
  const install = installOverride !== undefined ? installOverride : (primary?.install ?? null);
  // With a custom install command any of the detected lockfiles may matter.
  const lockfiles = [...new Set(installOverride !== undefined ? stacks.flatMap((s) => s.lockfiles) : (primary?.lockfiles ?? []))];
  const contents = lockfiles.map((name) => {
    const content = readRegularFile(repo, name);
    if (!content)
      throw new InputError(
        `${join(repo, name)} is not a regular file (a symbolic link?): bake copies only the repository's own files; replace it with the file`,
      );
    return { name, content };
  });
  return { primary, install, lockfiles, contents };
}

export async function bakeImage(docker: Docker, opts: BakeOptions): Promise<BakeResult> {
  const started = Date.now();
  const baseImageId = await imageId(docker, opts.base);
  const { primary, install, lockfiles, contents } = readBakeInputs(opts.repo, opts.install);
  const hash = bakeHash(baseImageId, install, contents);
  const tag = bakedTag(hash);
  const result = (id: string, reused: boolean): BakeResult => ({
    image: tag,
    image_id: id,
    hash,
    reused,
    base: opts.base,
    base_image_id: baseImageId,
    stack: primary ? `${primary.stack} (${primary.detail})` : null,
    install,
    test: primary?.test ?? null,
    lockfiles,
    duration_ms: Date.now() - started,
  });

  const existing = await imageId(docker, tag).catch(() => null);
  if (existing) return await record(opts.repo, result(existing, true));

  const context = mkdtempSync(join(tmpdir(), 'forge-bake-'));
  try {
    const ca = install ? findHostCaBundle() : null;
    if (ca) writeFileSync(join(context, BAKE_CA_FILE), ca.pem);
    writeFileSync(join(context, 'Dockerfile'), renderDockerfile(baseImageId, lockfiles, install, hash, Boolean(ca)));
    for (const { name, content } of contents) {
      mkdirSync(dirname(join(context, name)), { recursive: true });
      writeFileSync(join(context, name), content);
    }
    const stream = await docker.buildImage(
      { context, src: ['Dockerfile', ...lockfiles, ...(ca ? [BAKE_CA_FILE] : [])] },
      { t: tag, rm: true, forcerm: true },
    );
    const tail: string[] = [];
    await new Promise<void>((resolve, reject) => {
      docker.modem.followProgress(
        stream,
        (err: Error | null, events: { error?: string; errorDetail?: { message?: string } }[]) => {
          const failed = err?.message ?? events.find((e) => e.error)?.error;
          if (failed) reject(new BakeInstallError(describeBakeFailure(install, failed, tail)));
          else resolve();
        },
        (event: { stream?: string }) => {
          if (!event.stream) return;
          tail.push(event.stream);
          if (tail.length > 40) tail.shift();
          opts.onProgress?.(event.stream);
        },
      );
    });
    return await record(opts.repo, result(await imageId(docker, tag), false));
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}

/** `docker commit` of a scratch container someone (or an agent) configured by hand. */
export async function bakeFromContainer(docker: Docker, repo: string, containerId: string): Promise<BakeResult> {
  const started = Date.now();
  let info: Docker.ContainerInspectInfo;
  try {
    info = await docker.getContainer(containerId).inspect();
  } catch {
    throw new InputError(`no container "${containerId}" in the local Docker engine; pass an id or name from docker ps -a`);
  }
  const hash = createHash('sha256').update(`forge-bake-container/1 ${info.Id} ${new Date().toISOString()}`).digest('hex').slice(0, 16);
  const tag = bakedTag(hash);
  const [repoName, tagName] = tag.split(':') as [string, string];
  const committed = (await docker
    .getContainer(containerId)
    .commit({ repo: repoName, tag: tagName, comment: 'forge bake --from-container' })) as { Id: string };
  return await record(repo, {
    image: tag,
    image_id: committed.Id,
    hash,
    reused: false,
    base: info.Config.Image,
    base_image_id: info.Image,
    stack: null,
    install: null,
    test: null,
    lockfiles: [],
    duration_ms: Date.now() - started,
  });
}

async function imageId(docker: Docker, ref: string): Promise<string> {
  try {
    return (await docker.getImage(ref).inspect()).Id;
  } catch (e) {
    if ((e as { statusCode?: number }).statusCode === 404) {
      throw new InputError(`image "${ref}" is not in the local Docker engine (no registry is reachable); docker import or build one first`);
    }
    throw e;
  }
}

/** The last bake of a repository, for later runs to find (.forge/ is excluded from git). */
async function record(repo: string, result: BakeResult): Promise<BakeResult> {
  await excludeForgeDirIfRepo(repo);
  // A cell working on this checkout could make .forge or bake.json a link, or swap .forge
  // while this runs: the record is written through a descriptor of the real .forge
  // directory (O_NOFOLLOW), into a new file renamed over bake.json.
  const dir = join(repo, FORGE_DIR);
  try {
    mkdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  let dirFd: number;
  try {
    dirFd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch {
    throw new InputError(
      `${dir} is not a real directory (a symbolic link?): bake writes its record only into the repository's own .forge; remove it`,
    );
  }
  try {
    replaceAt(dirFd, 'bake.json', Buffer.from(JSON.stringify(result, null, 2) + '\n'), 0o644);
  } finally {
    closeSync(dirFd);
  }
  return result;
}
