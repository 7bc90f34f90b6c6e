import { appendFileSync, closeSync, constants, mkdirSync, openSync, readdirSync, readSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What each runner process of a state directory uses from the swarm registry, one file per
 * process ("<pid>@<host>", a line "REGISTRY REPOSITORY:TAG" per image). A runner uses a
 * shared image (base, dependencies) by the digest any runner of its state directory recorded,
 * and keeps that digest for its whole life: the image's labels name only the runner that
 * pushed it, so `gc` reads these to leave alone what a live runner still uses. Written before
 * the runner looks the tag up, so no use starts unleased; never removed by the runner (`gc`
 * removes the files of gone processes).
 */
const LEASES_DIR = 'registry-leases';
/** Most bytes read of one lease file: a runner leases a few tags per run. */
const MAX_LEASE_BYTES = 1024 * 1024;

export interface RegistryLease {
  file: string;
  pid: number;
  host: string;
  /** "REGISTRY REPOSITORY:TAG" lines. */
  entries: string[];
  /** Larger than gc reads: it may lease anything. */
  truncated: boolean;
}

/** Pure: the file name of a process's leases (a host name reduced to characters safe in a file name). */
export function leaseFileName(pid: number, host: string): string {
  return `${pid}@${host.replace(/[^A-Za-z0-9.-]/g, '_')}`;
}

/** Pure: the line that leases registry/repository:tag. */
export function leaseEntry(registry: string, repository: string, tag: string): string {
  return `${registry} ${repository}:${tag}`;
}

/** Records that this process uses registry/repository:tag (from now until it exits). */
export function leaseRegistryTag(
  stateDir: string,
  owner: { pid: number; host: string },
  registry: string,
  repository: string,
  tag: string,
): void {
  const dir = join(stateDir, LEASES_DIR);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  appendFileSync(join(dir, leaseFileName(owner.pid, owner.host)), `${leaseEntry(registry, repository, tag)}\n`, { mode: 0o600 });
}

/** Every lease file of the state directory; unreadable or misnamed files are skipped. */
export function readRegistryLeases(stateDir: string): RegistryLease[] {
  const dir = join(stateDir, LEASES_DIR);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const leases: RegistryLease[] = [];
  for (const name of names) {
    const m = /^(\d+)@(.+)$/.exec(name);
    if (!m) continue;
    const file = join(dir, name);
    let read: { text: string; truncated: boolean };
    try {
      read = readBounded(file);
    } catch {
      continue;
    }
    leases.push({ file, pid: Number(m[1]), host: m[2]!, entries: read.text.split('\n').filter(Boolean), truncated: read.truncated });
  }
  return leases;
}

/** Removes a gone process's lease file. */
export function removeLease(file: string): void {
  rmSync(file, { force: true });
}

function readBounded(file: string): { text: string; truncated: boolean } {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    // One byte more than the bound: a file that fills it is larger than gc reads.
    const buf = Buffer.alloc(MAX_LEASE_BYTES + 1);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, got);
      if (n === 0) break;
      got += n;
    }
    return { text: buf.subarray(0, Math.min(got, MAX_LEASE_BYTES)).toString('utf8'), truncated: got > MAX_LEASE_BYTES };
  } finally {
    closeSync(fd);
  }
}
