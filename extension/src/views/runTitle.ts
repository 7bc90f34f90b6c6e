/**
 * How a run is named in the Attempts view: its issue's first line, short enough for a tree
 * row, and when it started, so that two runs of the same issue can be told apart.
 * Pure (no clock, no time zone of its own) so tests pin both.
 */

/** Tree rows past about this many characters are cut by the view without saying so. */
export const RUN_TITLE_MAX = 60;

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The first line cut at a word boundary with an ellipsis; a single overlong word is cut inside it. */
export function shortTitle(line: string, max = RUN_TITLE_MAX): string {
  const text = line.trim().replace(/\s+/g, ' ');
  if (text.length <= max) return text;
  // Room for max - 1 characters and the ellipsis; a space right after that room still ends a whole word.
  const space = text.slice(0, max).lastIndexOf(' ');
  // A cut that would leave less than half the room reads worse than a word cut short.
  const cut = space >= max / 2 ? text.slice(0, space) : text.slice(0, max - 1);
  return `${cut.replace(/[\s,.;:–-]+$/, '')}…`;
}

/**
 * The local start time: "14:05" today, "Nov 28 14:05" earlier this year, "Nov 28 2024 14:05"
 * before that. `offsetMinutes` is the local zone's offset from UTC at `iso` (east positive,
 * i.e. `-date.getTimezoneOffset()`). An unreadable time gives ''.
 */
export function startTimeLabel(iso: string, now: Date, offsetMinutes: number): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return '';
  // Shifted so that the UTC fields read as local wall-clock time.
  const local = new Date(at + offsetMinutes * 60_000);
  const today = new Date(now.getTime() + offsetMinutes * 60_000);
  const time = `${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}`;
  const sameDay =
    local.getUTCFullYear() === today.getUTCFullYear() &&
    local.getUTCMonth() === today.getUTCMonth() &&
    local.getUTCDate() === today.getUTCDate();
  if (sameDay) return time;
  const day = `${MONTHS[local.getUTCMonth()]} ${local.getUTCDate()}`;
  return local.getUTCFullYear() === today.getUTCFullYear() ? `${day} ${time}` : `${day} ${local.getUTCFullYear()} ${time}`;
}

/** The zone offset this machine uses at a given time (east positive), for startTimeLabel. */
export function localOffsetMinutes(iso: string): number {
  const at = Date.parse(iso);
  return Number.isNaN(at) ? 0 : -new Date(at).getTimezoneOffset();
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}
