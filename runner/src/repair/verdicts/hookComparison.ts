import { plain } from './testReport.js';

/**
 * Pure: why an attempt's failed npm hook is not exactly the failure the base commit's hook has,
 * or null when it is. A hook may run several checks (node --test over a local and a remote
 * file, a script comparing README examples) and report them in any shape: one remote check
 * failing for want of the network must not hide a local one the change broke, and no summary
 * or keyword filter can tell them apart. So the attempt's hook must print what the base's
 * printed, line for line, with only what differs between two runs of the same thing evened
 * out (times, durations, temporary names); counts are kept.
 */
export function differentHookFailure(attemptOutput: string, baseOutput: string): string | null {
  const a = normalizedLines(attemptOutput);
  const b = normalizedLines(baseOutput);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) return `it prints what the base commit's does not ("${(a[i] ?? '(nothing)').slice(0, 120)}")`;
  }
  return null;
}

function normalizedLines(output: string): string[] {
  return plain(output)
    .split('\n')
    .map((l) =>
      l
        .trim()
        // ISO times (npm's log names), clock times, durations (node:test, mocha, jest).
        .replace(/\d{4}-\d\d-\d\dT[\d:._-]+Z?/g, '<time>')
        .replace(/\b\d\d:\d\d:\d\d(\.\d+)?\b/g, '<time>')
        .replace(/\bduration_ms:? [\d.]+/g, 'duration_ms <t>')
        .replace(/\(?\b\d+(\.\d+)?\s?(ms|s|sec|seconds)\b\)?/g, '<t>')
        .replace(/\/tmp\/[\w.-]+/g, '/tmp/<tmp>'),
    )
    .filter((l) => l !== '');
}
