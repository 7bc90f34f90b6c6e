/**
 * Keeps the last `capacity` bytes written to it in one preallocated buffer, so memory stays
 * fixed however much passes through.
 */
export class TailRing {
  private buffer: Buffer | null = null;
  private start = 0;
  private length = 0;

  constructor(readonly capacity: number) {}

  write(chunk: Buffer): void {
    if (this.capacity === 0 || chunk.length === 0) return;
    // Allocated on first use: most cells never overflow their head.
    const buf = (this.buffer ??= Buffer.allocUnsafe(this.capacity));
    if (chunk.length >= this.capacity) {
      chunk.copy(buf, 0, chunk.length - this.capacity);
      this.start = 0;
      this.length = this.capacity;
      return;
    }
    let writeAt = (this.start + this.length) % this.capacity;
    const firstPart = Math.min(chunk.length, this.capacity - writeAt);
    chunk.copy(buf, writeAt, 0, firstPart);
    chunk.copy(buf, 0, firstPart);
    writeAt = (writeAt + chunk.length) % this.capacity;
    const overflow = this.length + chunk.length - this.capacity;
    if (overflow > 0) {
      this.start = (this.start + overflow) % this.capacity;
      this.length = this.capacity;
    } else {
      this.length += chunk.length;
    }
  }

  contents(): Buffer {
    if (!this.buffer || this.length === 0) return Buffer.alloc(0);
    const end = this.start + this.length;
    if (end <= this.capacity) return Buffer.from(this.buffer.subarray(this.start, end));
    return Buffer.concat([this.buffer.subarray(this.start), this.buffer.subarray(0, end - this.capacity)]);
  }
}
