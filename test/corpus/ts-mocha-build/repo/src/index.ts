export interface Version {
  major: number;
  minor: number;
  patch: number;
}

export function parse(text: string): Version {
  const m = /^v?(\d+)\.(\d+)\.(\d+)$/.exec(text.trim());
  if (!m) throw new Error(`not a version: ${text}`);
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) };
}

/** Negative, zero or positive as a is lower than, equal to or higher than b. */
export function compare(a: Version, b: Version): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/**
 * Whether `version` satisfies `range`: "^1.2.3" allows changes that do not modify the left-most
 * non-zero part (>=1.2.3 <2.0.0; ^0.2.3 is >=0.2.3 <0.3.0), "~1.2.3" allows patch changes
 * (>=1.2.3 <1.3.0), anything else must match exactly.
 */
export function satisfies(version: string, range: string): boolean {
  const v = parse(version);
  if (range.startsWith('^')) {
    const low = parse(range.slice(1));
    const high = low.major > 0 ? { major: low.major + 1, minor: 0, patch: 0 } : { major: 0, minor: low.minor + 1, patch: 0 };
    return compare(v, low) >= 0 && compare(v, high) < 0;
  }
  if (range.startsWith('~')) {
    const low = parse(range.slice(1));
    return compare(v, low) >= 0 && compare(v, { major: low.major, minor: low.minor + 1, patch: 0 }) <= 0;
  }
  return compare(v, parse(range)) === 0;
}
