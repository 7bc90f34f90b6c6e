import { closeSync, openSync, writeSync } from 'node:fs';
import { TailRing } from './tailRing.js';

/** Bytes of the start and end of the output shown in CellResult.output. */
export const DISPLAY_HEAD_BYTES = 16 * 1024;
export const DISPLAY_TAIL_BYTES = 48 * 1024;

export function omittedMarker(omitted: number): string {
  return `\n[... forge: ${omitted} bytes of output omitted ...]\n`;
}

export interface BoundedOutputSummary {
  output: string;
  truncated: boolean;
  totalBytes: number;
}

/**
 * Collects a cell's merged stdout+stderr with memory bounded by construction: a head and a
 * tail ring for display, and a log file that keeps its first half as written and its last
 * half in a ring until the end. Nothing grows with the amount printed.
 */
export class BoundedOutputCollector {
  private total = 0;
  private readonly displayHead: Buffer[] = [];
  private displayHeadBytes = 0;
  private readonly displayTail = new TailRing(DISPLAY_TAIL_BYTES);
  private readonly logFd: number;
  private readonly logHeadCap: number;
  private logHeadWritten = 0;
  private readonly logTail: TailRing;
  private closed = false;

  constructor(logPath: string, logBytes: number) {
    this.logFd = openSync(logPath, 'w', 0o600);
    this.logHeadCap = Math.floor(logBytes / 2);
    this.logTail = new TailRing(logBytes - this.logHeadCap);
  }

  get totalBytes(): number {
    return this.total;
  }

  push(chunk: Buffer): void {
    if (this.closed) return;
    this.total += chunk.length;

    let rest = chunk;
    if (this.displayHeadBytes < DISPLAY_HEAD_BYTES) {
      const take = Math.min(rest.length, DISPLAY_HEAD_BYTES - this.displayHeadBytes);
      this.displayHead.push(Buffer.from(rest.subarray(0, take)));
      this.displayHeadBytes += take;
      rest = rest.subarray(take);
    }
    this.displayTail.write(rest);

    let logRest = chunk;
    if (this.logHeadWritten < this.logHeadCap) {
      const take = Math.min(logRest.length, this.logHeadCap - this.logHeadWritten);
      writeSync(this.logFd, logRest, 0, take);
      this.logHeadWritten += take;
      logRest = logRest.subarray(take);
    }
    this.logTail.write(logRest);
  }

  /** Writes the log's tail, closes the file and renders the display text. */
  finish(): BoundedOutputSummary {
    if (!this.closed) {
      this.closed = true;
      const tail = this.logTail.contents();
      const logged = this.logHeadWritten + tail.length;
      if (logged < this.total) writeSync(this.logFd, omittedMarker(this.total - logged));
      if (tail.length > 0) writeSync(this.logFd, tail);
      closeSync(this.logFd);
    }
    const head = Buffer.concat(this.displayHead);
    const tail = this.displayTail.contents();
    const shown = head.length + tail.length;
    const truncated = shown < this.total;
    const text = truncated
      ? head.toString('utf8') + omittedMarker(this.total - shown) + tail.toString('utf8')
      : Buffer.concat([head, tail]).toString('utf8');
    return { output: text, truncated, totalBytes: this.total };
  }
}
