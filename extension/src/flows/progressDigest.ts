/**
 * Pure: what a run's progress notification says: each attempt's latest state side by side
 * ("attempt 0: green · attempt 1: started · attempt 2: waiting for a free cell"), after the
 * latest line of the run itself (baseline, ground truth, a cell queue), so a toast shows where
 * every attempt stands and not only the last event.
 */
export class ProgressDigest {
  private readonly attempts = new Map<number, string>();
  private run = '';

  /** Takes one progress line; returns the message to show. */
  add(line: string): string {
    const m = /^attempt (\d+): (.*)$/.exec(line);
    if (m) this.attempts.set(Number(m[1]), shorten(m[2]!));
    else this.run = shorten(line);
    const each = [...this.attempts].sort(([a], [b]) => a - b).map(([i, s]) => `attempt ${i}: ${s}`);
    return [this.run, each.join(' · ')].filter(Boolean).join(' — ');
  }
}

/** The state words of a line, without its numbers' detail ("red after 3 turn(s) (finish), 4 passed, ..." -> "red after 3 turn(s)"). */
function shorten(text: string): string {
  const cut = text.split(/[,;(]/)[0]!.trim();
  return cut.length > 60 ? `${cut.slice(0, 59)}…` : cut;
}
