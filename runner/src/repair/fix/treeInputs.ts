import { fingerprintBeneath } from '../../hostguard/openBeneath.js';
import { MAX_FINGERPRINTED, type TreeInputs } from './verdictReuse.js';

/**
 * The fingerprints of `rels` in a worktree (fingerprintBeneath); null when one cannot be taken
 * (a link, a directory, too large) or there is too much to compare: never the same, so ground
 * truth runs. The host reads at most MAX_FINGERPRINT_BYTES in all.
 */
export function fingerprints(top: string, rels: readonly string[]): TreeInputs | null {
  if (rels.length === 0 || rels.length > MAX_FINGERPRINTED) return null;
  const out = new Map<string, string>();
  let budget = MAX_FINGERPRINT_BYTES;
  for (const rel of rels) {
    const found = fingerprintBeneath(top, rel, budget);
    if (found === null) return null;
    budget -= found.size;
    out.set(rel, found.print);
  }
  return out;
}

/** What the host reads to fingerprint one run's files, in all. */
const MAX_FINGERPRINT_BYTES = 64 * 1024 * 1024;
