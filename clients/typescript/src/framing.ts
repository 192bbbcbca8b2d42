/// <reference types="node" preserve="true" />
/**
 * LF-only JSONL framing.
 *
 * Lines end at the byte 0x0A and nowhere else. Node's `readline` also splits at U+2028 / U+2029
 * (and CR), which JSON strings may contain raw, so it must not be used for this protocol.
 * A 0x0A byte never occurs inside a multi-byte UTF-8 sequence, so splitting bytes first and
 * decoding each whole line is safe.
 */
export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  /** Feeds a chunk and returns the complete lines it finished (without their LF). */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(0x0a, start); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      const piece = chunk.subarray(start, nl);
      if (this.pendingBytes > 0) {
        this.pending.push(piece);
        lines.push(Buffer.concat(this.pending).toString("utf8"));
        this.pending = [];
        this.pendingBytes = 0;
      } else {
        lines.push(piece.toString("utf8"));
      }
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      this.pending.push(rest);
      this.pendingBytes += rest.length;
    }
    return lines;
  }

  /** The unterminated tail at end of stream, if any. */
  flush(): string | undefined {
    if (this.pendingBytes === 0) return undefined;
    const tail = Buffer.concat(this.pending).toString("utf8");
    this.pending = [];
    this.pendingBytes = 0;
    return tail;
  }
}

/** One frame as a line: JSON text plus LF. `JSON.stringify` never writes a raw LF. */
export function encodeFrame(frame: unknown): string {
  return `${JSON.stringify(frame)}\n`;
}
