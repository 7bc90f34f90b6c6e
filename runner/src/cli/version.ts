declare const FORGE_VERSION: string | undefined;

/** The runner's version: defined at bundle time when the build sets FORGE_VERSION, else `dev`. */
export const RUNNER_VERSION: string = typeof FORGE_VERSION === 'string' ? FORGE_VERSION : 'dev';
