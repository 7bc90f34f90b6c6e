import type { core } from 'zod/mini';

/**
 * Bad input from a user, a CellSpec, a replay file or a peer. The CLI maps it to exit 2;
 * the message is one line that names the problem and the fix.
 */
export class InputError extends Error {
  override readonly name = 'InputError';
}

/** One line from a zod error: the first issue, with its path. */
export function describeZodError(what: string, error: core.$ZodError): string {
  const issue = error.issues[0];
  if (!issue) return `invalid ${what}`;
  const where = issue.path.length > 0 ? issue.path.join('.') : what;
  return `invalid ${what}: ${where}: ${issue.message}`;
}
