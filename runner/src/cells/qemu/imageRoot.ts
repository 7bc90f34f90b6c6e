import Docker from 'dockerode';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { InputError } from '../../protocol/inputError.js';

const run = promisify(execFile);

export interface ImageRoot {
  dir: string;
  /** PATH from the image config, for the guest environment. */
  path: string;
}

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * A Docker image's filesystem as a directory qemu cells boot from (shared read-only over
 * virtiofs): exported once per image id and cached, so `forge-runner bake` output serves
 * docker and qemu cells alike.
 */
export async function imageRoot(
  image: string,
  cacheDir: string,
  docker = new Docker({ socketPath: '/var/run/docker.sock' }),
): Promise<ImageRoot> {
  let info: Docker.ImageInspectInfo;
  try {
    info = await docker.getImage(image).inspect();
  } catch (e) {
    const code = (e as { statusCode?: number; code?: string }).statusCode;
    if (code === 404)
      throw new InputError(
        `image "${image}" is not in the local Docker engine; build it with forge-runner bake (qemu cells export it from there)`,
      );
    throw new InputError(`qemu cells with --image need the Docker Engine to export "${image}" (${(e as Error).message.split('\n')[0]})`);
  }
  const path = (info.Config?.Env ?? []).find((e) => e.startsWith('PATH='))?.slice(5) ?? DEFAULT_PATH;
  const dir = join(cacheDir, 'images', info.Id.replace(/^sha256:/, '').slice(0, 32));
  const rootfs = join(dir, 'rootfs');
  if (existsSync(join(dir, 'complete'))) return { dir: rootfs, path };
  const staging = `${dir}.${process.pid}.tmp`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(join(staging, 'rootfs'), { recursive: true });
  const container = await docker.createContainer({ Image: image, Cmd: ['/bin/true'], Labels: { 'forge.qemu.export': image } });
  try {
    const tarFile = join(staging, 'image.tar');
    const stream = (await container.export()) as NodeJS.ReadableStream;
    const { createWriteStream } = await import('node:fs');
    const { pipeline } = await import('node:stream/promises');
    await pipeline(stream, createWriteStream(tarFile));
    // Root extracts with owners and modes as in the image; device nodes are not needed (the guest mounts devtmpfs).
    await run('tar', ['-x', '-f', tarFile, '-C', join(staging, 'rootfs'), '--numeric-owner', '--exclude=dev/*'], {
      maxBuffer: 16 * 1024 * 1024,
    });
    rmSync(tarFile);
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
  writeFileSync(join(staging, 'complete'), `${image}\n`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, '..'), { recursive: true });
  renameSync(staging, dir);
  return { dir: rootfs, path };
}
