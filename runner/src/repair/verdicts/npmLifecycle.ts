/**
 * npm runs `pretest`, `test` and `posttest` in turn, each announced by a banner
 * ("> name@1.0.0 posttest" then "> the command"), and stops at the first that fails. From
 * the banners the output splits into stages, so a verdict can tell the tests themselves
 * from a lifecycle hook around them (an `npm audit` in `posttest` that needs the network).
 */
export interface NpmStage {
  /** The package npm ran it for, as its banner names it (`name@version`). */
  pkg: string;
  /** pretest, test, posttest (or any script name npm announced). */
  name: string;
  command: string;
  output: string;
}

// npm: "> name@1.0.0 test"; pnpm adds the package's directory: "> name@1.0.0 test /home/u/proj".
const BANNER = /^> (\S+) (\S+)(?: [^\n]*)?\n> (.*)\n/gm;

/** Pure: every script npm (or pnpm) announced, in order, nested ones too; [] when the output has no banner. */
export function splitNpmStages(output: string): NpmStage[] {
  const marks = [...output.matchAll(BANNER)].map((m) => ({
    pkg: m[1]!,
    name: m[2]!,
    command: m[3]!,
    at: m.index!,
    body: m.index! + m[0].length,
  }));
  return marks.map((m, i) => ({
    pkg: m.pkg,
    name: m.name,
    command: m.command,
    output: output.slice(m.body, marks[i + 1]?.at ?? output.length),
  }));
}

/**
 * Pure: the stages of the lifecycle the package manager ran for the command's script:
 * pre<script>, <script> and post<script> of the package it announced first, split by those
 * names only. Any other banner (a nested `npm run tests-only`, its own pre/post scripts, a
 * workspace's scripts) is output of the stage it ran in, as the user sees it.
 */
export function lifecycleStages(output: string): NpmStage[] {
  const banners = splitNpmStages(output);
  const first = banners[0];
  if (!first) return [];
  const script =
    first.name.startsWith('pre') && banners.some((b) => b.pkg === first.pkg && b.name === first.name.slice(3))
      ? first.name.slice(3)
      : first.name;
  const order = [`pre${script}`, script, `post${script}`];
  const stages: NpmStage[] = [];
  let next = 0;
  for (const b of banners) {
    const at = order.indexOf(b.name);
    const current = stages[stages.length - 1];
    if (b.pkg === first.pkg && at >= next) {
      stages.push({ ...b });
      next = at + 1;
    } else if (current) current.output += `> ${b.pkg} ${b.name}\n> ${b.command}\n${b.output}`;
  }
  return stages;
}

/** Output that says a network access was refused or could not resolve (a cell without network). */
export const NETWORK_REFUSED =
  /\b(EAI_AGAIN|ENOTFOUND|ECONNREFUSED|ENETUNREACH|EHOSTUNREACH|getaddrinfo|Temporary failure in name resolution|Could not resolve host|Network is unreachable|network is unreachable|Name or service not known)\b/;

/**
 * Pure: the hook's output says it could not reach a host for want of a network: a name that
 * does not resolve, or no route. Not a connection refused (something local answered no: a
 * server the change broke), and never a loopback address, which every cell has.
 */
export function hookWantedNetwork(output: string): boolean {
  const lines = output.split('\n').filter((l) => NETWORK_REFUSED.test(l));
  if (lines.length === 0) return false;
  if (lines.some((l) => /ECONNREFUSED|EHOSTUNREACH|connection refused/i.test(l) || LOOPBACK.test(l))) return false;
  return lines.some((l) => WANTED_NETWORK.test(l));
}

const WANTED_NETWORK =
  /\b(EAI_AGAIN|ENOTFOUND|ENETUNREACH|Temporary failure in name resolution|Could not resolve host|Network is unreachable|network is unreachable|Name or service not known)\b/;
const LOOPBACK = /\b(localhost|127\.\d+\.\d+\.\d+|::1|0\.0\.0\.0)\b/;

export interface HookFailure {
  hook: string;
  command: string;
  reason: 'network';
}

/**
 * Pure: when a failed `npm test` failed in a lifecycle hook after the test stage passed, and
 * the hook failed for want of the network (cells have none unless allowed), that hook; null
 * otherwise (the tests failed, or the hook failed for a reason of its own).
 */
export function failedNetworkHook(exitCode: number, stages: NpmStage[], testStagePassed: (stage: NpmStage) => boolean): HookFailure | null {
  if (exitCode === 0 || stages.length === 0) return null;
  const last = stages[stages.length - 1]!;
  if (!last.name.startsWith('post')) return null;
  const test = stages.find((s) => s.name === last.name.slice('post'.length));
  if (!test || !testStagePassed(test) || !hookWantedNetwork(last.output)) return null;
  return { hook: last.name, command: last.command, reason: 'network' };
}

/** Pure: the test command is npm's own test lifecycle (`npm test`, `npm t`, `npm run test`), whose hooks npm runs around it. */
export function isNpmTestCommand(cmd: string): boolean {
  return /^\s*npm\s+(?:test|tst|t|run(?:-script)?\s+test)(?:\s|$)/.test(cmd);
}

/**
 * Pure: the hook script only asks the package registry (`npm audit`, `npx npm audit`, `npm
 * outdated`, `npm doctor`, `npx audit-ci`...): nothing of the project's code runs, so in a cell
 * without network it fails whatever the change, and its failure says nothing about the change.
 */
export function isRegistryOnlyHook(script: string): boolean {
  // `npx npm@'>=10.2' audit` (qs and many ljharb packages): npm itself at a version range, never
  // another spec (npm@file:..., npm@github:...), which would run code the repository names.
  // `aud` (ljharb's packages: `aud --production`) is npm audit with its exit codes.
  return /^\s*(?:npx\s+(?:-y\s+|--yes\s+)?)?(?:npm(?:@(?:'[\d.<>=^~x* |-]+'|"[\d.<>=^~x* |-]+"|[\d.^~x*]+))?\s+(?:audit|outdated|doctor|ping)|aud|audit-ci|better-npm-audit|nsp\s+check)(?:\s+--?[\w-]+(?:[= ][\w.-]+)?)*\s*$/.test(
    script,
  );
}
