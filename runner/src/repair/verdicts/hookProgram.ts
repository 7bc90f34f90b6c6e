import { lstatSync, readlinkSync } from 'node:fs';
import { join, normalize } from 'node:path';
import { readFileBeneath } from '../../hostguard/openBeneath.js';

/**
 * Pure: the program a registry-only hook script starts (`npm`, `aud`, ...) and whether npx
 * runs npm itself (`npx npm@'>=10.2' audit`), or null when the script is not one.
 */
export function hookProgram(script: string): { program: string; viaNpxNpm: boolean } | null {
  const m = /^\s*(npx\s+(?:-y\s+|--yes\s+)?)?(npm|aud|audit-ci|better-npm-audit|nsp)\b/.exec(script);
  if (!m) return null;
  return { program: m[2]!, viaNpxNpm: Boolean(m[1]) && m[2] === 'npm' };
}

/**
 * Why the program a registry-only hook runs may be the repository's own rather than the tool
 * its name says, or null. npm puts `node_modules/.bin` first on a script's PATH and npx
 * prefers a local `node_modules/npm`, so a script that reads `aud --production` runs whatever
 * the tree put there (red team: a committed `node_modules/.bin/aud` that ran a test, then npm
 * audit). Honest projects get these from their install: `.bin/aud` a link into
 * `node_modules/aud/`, whose package.json is aud's; no `.bin/npm`, no `node_modules/npm`.
 * `nodeModules` is the directory the cell sees at the top's node_modules (the shared one, or
 * the worktree's); read without following links.
 */
export function hookProgramNotTheTool(nodeModules: string, script: string): string | null {
  const found = hookProgram(script);
  if (!found) return null;
  const { program, viaNpxNpm } = found;
  const bin = join(nodeModules, '.bin', program);
  const entry = lstatOrNull(bin);
  if (program === 'npm') {
    if (entry) return 'node_modules/.bin/npm is in the tree, and npm runs it for the posttest instead of npm';
    if (viaNpxNpm && lstatOrNull(join(nodeModules, 'npm')))
      return 'node_modules/npm is in the tree, and npx runs it instead of the npm it would fetch';
    return null;
  }
  if (!entry) return null; // npx fetches it, or the shell finds none: no code of the tree runs.
  if (!entry.isSymbolicLink()) return `node_modules/.bin/${program} is a file of the tree, not a link into node_modules/${program}/`;
  const target = normalize(join('.bin', readlinkSync(bin)));
  if (!target.startsWith(`${program}/`))
    return `node_modules/.bin/${program} links to ${target.slice(0, 80)}, not into node_modules/${program}/`;
  const manifest = readFileBeneath(nodeModules, join(program, 'package.json'), 1024 * 1024);
  let name: unknown = null;
  try {
    name = manifest.kind === 'ok' ? (JSON.parse(manifest.bytes.toString('utf8')) as { name?: unknown }).name : null;
  } catch {
    name = null;
  }
  return name === program ? null : `node_modules/${program}/package.json does not name the package ${program}`;
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/**
 * npm project config keys that only say where packages come from and how npm saves them: a
 * project .npmrc with any other key may run a program of the tree in the hook (node-options
 * --require, script-shell, onload-script, git, node-gyp...; red team), so the hook's failure
 * may be its own code's.
 */
const INERT_NPMRC_KEY =
  /^(?:(?:@[\w.-]+:)?registry|\/\/[^\s=]+:(?:_authToken|_auth|username|_password|always-auth|email)|always-auth|audit|audit-level|fund|loglevel|progress|update-notifier|save|save-exact|save-prefix|package-lock|package-lock-only|lockfile-version|engine-strict|legacy-peer-deps|strict-peer-deps|auto-install-peers|prefer-offline|prefer-online|fetch-retries|fetch-timeout|git-tag-version|sign-git-tag|tag-version-prefix|message|access|provenance|omit|include|workspaces-update)$/;

/** Pure: the first key of a project .npmrc that is not inert (null: none, or no .npmrc). */
export function npmrcActiveKey(npmrc: string | null): string | null {
  for (const raw of (npmrc ?? '').split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const key = (line.split('=')[0] ?? '').trim().replace(/\[\]$/, '');
    if (!INERT_NPMRC_KEY.test(key)) return key.slice(0, 60);
  }
  return null;
}
