/// <reference types="node" preserve="true" />
/**
 * Typed client for agents speaking the JSONL RPC protocol (agentwire, pi, oh-my-pi) over stdio.
 * The protocol types and the command methods are generated from agentwire's JSON Schema.
 */
export {
  AgentClient,
  defaultUiHandler,
  type AgentClientOptions,
  type AgentFrame,
  type HostToolContext,
  type HostToolHandler,
  type PromptOutcome,
  type SpawnOptions,
  type UiAnswer,
  type UiContext,
  type UiHandler,
  type UnknownFrame,
} from "./client.js";
export {
  AgentCommandError,
  AgentExitedError,
  AgentSpawnError,
  EventBufferOverflowError,
  RequestTimeoutError,
  agentwireCommand,
  exitError,
  type ExitInfo,
  type SpawnFailure,
} from "./errors.js";
export { LineSplitter, encodeFrame } from "./framing.js";
export { CHUNK_DATA_BYTES, ChunkReassembler, ChunkSequenceError, DEFAULT_MAX_FRAME_BYTES, splitFrame } from "./chunks.js";
export type { RequestOptions } from "./options.js";
export * from "./generated/protocol.js";
export type * from "./generated/types.js";
export {
  WireClient,
  WireRequestError,
  type WireClientOptions,
  type WireEventEnvelope,
  type WirePromptOutcome,
  type WireRequestHandler,
} from "./wire-client.js";
export * from "./generated/wire.js";
export { Connection, type ConnectionTarget } from "./connection.js";
