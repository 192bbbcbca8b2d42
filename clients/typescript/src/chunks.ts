/// <reference types="node" preserve="true" />
/**
 * omp RPC protocol v2 framing (`negotiate_protocol` with `protocolVersion: 2`): a frame longer
 * than the agent's `ready.maxFrameBytes` travels as `rpc_chunk` frames, each carrying the base64
 * of at most 256 KiB of the frame's UTF-8 JSON text, in order and back to back.
 */
import type { RpcChunk } from "./generated/types.js";

/** Bytes of the frame one chunk carries (omp's and agentwire's slice size). */
export const CHUNK_DATA_BYTES = 256 * 1024;

/** omp's physical frame limit, used until the agent's `ready` frame says otherwise. */
export const DEFAULT_MAX_FRAME_BYTES = 1024 * 1024;

/** The `rpc_chunk` frames carrying `text` (one frame's JSON, without its LF). */
export function splitFrame(text: string, chunkId: string, dataBytes = CHUNK_DATA_BYTES): RpcChunk[] {
  const bytes = Buffer.from(text, "utf8");
  const count = Math.max(1, Math.ceil(bytes.length / dataBytes));
  const chunks: RpcChunk[] = [];
  for (let index = 0; index < count; index++) {
    const data = bytes.subarray(index * dataBytes, (index + 1) * dataBytes).toString("base64");
    chunks.push({ type: "rpc_chunk", chunkId, index, count, byteLength: bytes.length, data });
  }
  return chunks;
}

/** A chunk sequence that broke the rules; it is discarded. */
export class ChunkSequenceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ChunkSequenceError";
  }
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

interface Open {
  chunkId: string;
  count: number;
  byteLength: number;
  next: number;
  parts: Buffer[];
  received: number;
}

/**
 * Reassembles inbound `rpc_chunk` sequences one at a time. `push` returns the whole frame's text
 * with the last chunk, `undefined` before it, and throws {@link ChunkSequenceError} for a broken
 * sequence, which is then discarded: its later chunks (same id, index above 0) are dropped silently.
 */
export class ChunkReassembler {
  private open: Open | undefined;
  private dropping: string | undefined;

  constructor(private readonly limit: number = 64 * 1024 * 1024) {}

  push(chunk: RpcChunk): string | undefined {
    const last = chunk.index + 1 >= chunk.count;
    // Index 0 under a refused id is a new sequence (ids may be reused).
    if (chunk.index > 0 && this.dropping === chunk.chunkId) {
      if (last) this.dropping = undefined;
      return undefined;
    }
    this.dropping = undefined;
    const fail = (message: string): never => {
      this.open = undefined;
      this.dropping = chunk.chunkId;
      throw new ChunkSequenceError(`rpc_chunk ${chunk.chunkId}: ${message}`);
    };
    let open = this.open;
    if (open && open.chunkId !== chunk.chunkId) {
      this.open = undefined;
      this.dropping = open.chunkId;
      throw new ChunkSequenceError(`rpc_chunk ${open.chunkId}: interrupted by ${chunk.chunkId} after ${open.next} of ${open.count} chunks`);
    }
    if (!open) {
      if (chunk.index !== 0) fail(`a sequence starts at index 0, not ${chunk.index}`);
      if (chunk.byteLength > this.limit) fail(`byteLength ${chunk.byteLength} exceeds the ${this.limit}-byte reassembly limit`);
      open = { chunkId: chunk.chunkId, count: chunk.count, byteLength: chunk.byteLength, next: 0, parts: [], received: 0 };
    } else if (chunk.count !== open.count || chunk.byteLength !== open.byteLength) {
      fail(`count / byteLength changed mid-sequence`);
    } else if (chunk.index !== open.next) {
      fail(`index ${chunk.index} where ${open.next} was expected`);
    }
    if (!BASE64.test(chunk.data)) fail(`data is not canonical base64`);
    const part = Buffer.from(chunk.data, "base64");
    open.received += part.length;
    if (open.received > open.byteLength) fail(`more data than byteLength ${open.byteLength}`);
    open.parts.push(part);
    open.next = chunk.index + 1;
    if (open.next < open.count) {
      this.open = open;
      return undefined;
    }
    this.open = undefined;
    if (open.received !== open.byteLength) fail(`the chunks carry ${open.received} bytes but byteLength is ${open.byteLength}`);
    return Buffer.concat(open.parts).toString("utf8");
  }
}
