import { createHash } from 'node:crypto';
import { InputError } from '../../protocol/inputError.js';
import { readFileBeneath } from '../../hostguard/openBeneath.js';
import { FORGE_CONFIG_FILE, type ForgeConfig, ForgeConfigSchema } from '../dependencies/detectSharedDeps.js';

/**
 * The files in a repository that ask the runner for something: `.forgeinclude` (untracked
 * files to copy into every attempt) and `.forge/config.json` (directories to share with every
 * cell). They come with the repository, so they are its word, not the user's: each is read
 * beneath the checkout without following a link, and what it asks for is used only once the
 * user confirmed that exact content (repositoryConsent.ts).
 */
export const FORGE_INCLUDE_FILE = '.forgeinclude';
export type RepositoryFileName = typeof FORGE_INCLUDE_FILE | typeof FORGE_CONFIG_FILE;

const MAX_INCLUDE_BYTES = 64 * 1024;
const MAX_CONFIG_BYTES = 64 * 1024;
/** More lines than anyone writes by hand: a longer list is refused, not truncated. */
const MAX_INCLUDE_LINES = 200;

export type RepositoryFile<T> =
  { state: 'absent' } | { state: 'refused'; why: string } | { state: 'read'; sha256: string; value: T; summary: string };

export interface RepositoryFiles {
  include: RepositoryFile<string[]>;
  config: RepositoryFile<ForgeConfig>;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Pure: .forgeinclude text -> its globs (one per line; # comments; blank lines), leading slashes dropped. */
export function parseForgeIncludeLines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => l.replace(/^\/+/, ''));
}

/** Pure: globs -> git pathspecs (glob magic: `**` and `*` as in .gitignore). */
export function includePathspecs(globs: readonly string[]): string[] {
  return globs.map((g) => `:(glob)${g.replace(/^\/+/, '')}`);
}

/** Reads both files of the checkout `top`; a bad config.json is bad input (InputError naming the field). */
export function readRepositoryFiles(top: string): RepositoryFiles {
  return { include: readInclude(top), config: readConfig(top) };
}

function readInclude(top: string): RepositoryFile<string[]> {
  const r = readFileBeneath(top, FORGE_INCLUDE_FILE, MAX_INCLUDE_BYTES);
  if (r.kind === 'absent') return { state: 'absent' };
  if (r.kind === 'refused') return { state: 'refused', why: `${r.why}; it is not read` };
  const globs = parseForgeIncludeLines(r.bytes.toString('utf8'));
  if (globs.length > MAX_INCLUDE_LINES)
    return { state: 'refused', why: `${FORGE_INCLUDE_FILE} has ${globs.length} entries (at most ${MAX_INCLUDE_LINES}); it is not read` };
  const bad = globs.find((g) => g.includes('\0') || g.split('/').includes('..'));
  if (bad !== undefined) return { state: 'refused', why: `${FORGE_INCLUDE_FILE}: "${bad}" leaves the repository; it is not read` };
  return {
    state: 'read',
    sha256: sha256(r.bytes),
    value: globs,
    summary: globs.length === 0 ? 'names nothing' : `copies ${globs.map((g) => JSON.stringify(g)).join(', ')} into every attempt`,
  };
}

function readConfig(top: string): RepositoryFile<ForgeConfig> {
  const r = readFileBeneath(top, FORGE_CONFIG_FILE, MAX_CONFIG_BYTES);
  if (r.kind === 'absent') return { state: 'absent' };
  if (r.kind === 'refused') return { state: 'refused', why: `${r.why}; it is not read` };
  let json: unknown;
  try {
    json = JSON.parse(r.bytes.toString('utf8'));
  } catch (e) {
    // Only where, never what: the message of JSON.parse quotes the file's bytes.
    const at = /position (\d+)/.exec((e as Error).message)?.[1];
    throw new InputError(`${FORGE_CONFIG_FILE} in ${top} is not valid JSON${at ? ` (at byte ${at})` : ''}; fix it or remove it`);
  }
  const parsed = ForgeConfigSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputError(
      `${FORGE_CONFIG_FILE} in ${top}: ${issue.path.join('.') || 'top level'}: ${issue.message} (see docs/cli.md "Dependencies")`,
    );
  }
  const { share, exclude } = parsed.data.dependencies;
  const parts = [
    ...(share.length ? [`shares ${share.map((s) => JSON.stringify(s)).join(', ')} with every cell`] : []),
    ...(exclude.length ? [`excludes ${exclude.map((s) => JSON.stringify(s)).join(', ')}`] : []),
  ];
  return { state: 'read', sha256: sha256(r.bytes), value: parsed.data, summary: parts.join('; ') || 'asks for nothing' };
}
