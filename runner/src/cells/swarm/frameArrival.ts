import { CELL_RETURN_BUDGET, parseReturnedFrame, type ReturnBudget, type ReturnedFrame } from './swarmCellScript.js';

/**
 * Waiting for a swarm cell's result frame after its task ended. The frame travels through the
 * manager's service log, which can take far longer than the command for a cell that sends back
 * many files: it is waited for while its bytes keep arriving, and a pause is taken for a lost
 * node only when the manager says the node is no longer up. A node that is up ran the command:
 * it is never run a second time (a cell runs exactly once).
 */

/** No byte for this long after the task ended: ask the manager whether the node is still there. */
export const FRAME_IDLE_MS = 10_000;
/** How long a node the manager still calls ready may stay silent before the frame is given up (a stopped engine is noticed within it). */
export const FRAME_NODE_GRACE_MS = 30_000;

export type FrameWaitStep =
  /** The frame and all the output it counts are here. */
  | 'done'
  /** Bytes arrived recently: keep reading. */
  | 'wait'
  /** Silent for a while: the node's state decides. */
  | 'ask-node'
  /** The node is down or gone: the result went with it (the cell may run elsewhere). */
  | 'lost'
  /** The node is up and sent nothing more: no frame, and no second run. */
  | 'give-up';

/** Pure: the next step while waiting; `nodeState` null when the manager was not asked this time. */
export function nextFrameWaitStep(facts: { complete: boolean; idleMs: number; nodeState: string | null }): FrameWaitStep {
  if (facts.complete) return 'done';
  if (facts.idleMs < FRAME_IDLE_MS) return 'wait';
  if (facts.nodeState === null) return 'ask-node';
  if (facts.nodeState !== 'ready') return 'lost';
  return facts.idleMs >= FRAME_IDLE_MS + FRAME_NODE_GRACE_MS ? 'give-up' : 'wait';
}

/**
 * The task's stderr as it arrives, bounded, with the frame parsed once, when its last line
 * (the exit line, which only the wrapper can write: it carries the nonce) is there. Parsing
 * tens of megabytes on every poll would slow the very stream it waits for.
 */
export class FrameCollector {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private tail = '';
  private ended_ = false;
  private parsed: ReturnedFrame | null | undefined;
  private readonly exitLine: RegExp;

  constructor(
    private readonly nonce: string,
    private readonly maxBytes: number,
    private readonly budget: ReturnBudget = CELL_RETURN_BUDGET,
  ) {
    this.exitLine = new RegExp(`(^|\\n)FORGE ${nonce} exit \\d+\\n`);
  }

  push(chunk: Buffer): void {
    if (this.kept < this.maxBytes) {
      this.chunks.push(chunk);
      this.kept += chunk.length;
    }
    if (this.ended_) return;
    // The exit line may be split across chunks: the previous chunk's tail is searched too.
    const text = this.tail + chunk.toString('latin1');
    if (this.exitLine.test(text)) this.ended_ = true;
    this.tail = text.slice(-(this.nonce.length + 32));
    this.parsed = undefined;
  }

  /** Whether the frame's exit line has arrived. */
  ended(): boolean {
    return this.ended_;
  }

  /** The frame, once complete (null before, or when what arrived is not a frame). */
  frame(): ReturnedFrame | null {
    if (!this.ended_) return null;
    this.parsed ??= parseReturnedFrame(Buffer.concat(this.chunks).toString('latin1'), this.nonce, this.budget);
    return this.parsed;
  }
}
