/// <reference types="node" preserve="true" />
import type { Readable, Writable } from "node:stream";

import { Connection, withDeadline, type ConnectionTarget } from "./connection.js";
import { RequestTimeoutError, exitError, type ExitInfo } from "./errors.js";
import type { RequestOptions } from "./options.js";
import type * as T from "./generated/types.js";
import {
  WireMethods,
  type WireAgentRequestMap,
  type WireAgentRequestType,
  type WireEventMap,
  type WireEventType,
  type WireMethod,
  type WireMethodMap,
} from "./generated/wire.js";

/** A JSON-RPC error answered to a wire request. */
export class WireRequestError extends Error {
  override readonly name = "WireRequestError";
  constructor(
    /** The method that failed. */
    readonly method: string,
    /** JSON-RPC error code (-32602 invalid params, -32000 invalid state, …). */
    readonly code: number,
    /** The agent's message. */
    readonly reason: string,
    /** `error.data` (for -32602: `{field, reason}`). */
    readonly data: unknown,
  ) {
    super(`${method} failed (${code}): ${reason}`);
  }
}

/** A wire event as delivered: its type, payload, and whether `replay` sent it. */
export interface WireEventEnvelope<K extends string = string> {
  type: K;
  payload: K extends WireEventType ? WireEventMap[K] : unknown;
  /** True for historical frames written by `replay`. */
  replayed: boolean;
}

/** Answers one kind of agent request; the result's id field is filled in by the client. */
export type WireRequestHandler<K extends WireAgentRequestType> = (
  payload: WireAgentRequestMap[K]["payload"],
) => Omit<WireAgentRequestMap[K]["result"], WireAgentRequestMap[K]["idField"]> | Promise<Omit<WireAgentRequestMap[K]["result"], WireAgentRequestMap[K]["idField"]>>;

/** Options of {@link WireClient.spawn} and {@link WireClient.attach}. */
export interface WireClientOptions {
  /** Default milliseconds to wait for a result (default 60 000; 0 waits forever). */
  requestTimeoutMs?: number;
  /** Bytes of stderr kept for error messages (default 8 192). */
  stderrTailBytes?: number;
  /** Called when a listener or handler throws while a line is handled (default: `console.error`); reading goes on. */
  onListenerError?: (error: unknown, line: string) => void;
  /** Working directory of a spawned process. */
  cwd?: string;
  /** Environment of a spawned process. */
  env?: NodeJS.ProcessEnv;
}

/** What {@link WireClient.promptAndWait} resolves with. */
export interface WirePromptOutcome {
  /** The prompt's result (`finished`, `cancelled`, `max_steps_reached`). */
  result: T.WirePromptResult;
  /** Every event of the turn, in order. */
  events: WireEventEnvelope[];
}

interface Pending {
  method: string;
  resolve(result: unknown): void;
  reject(error: Error): void;
}

/**
 * A client of one agent speaking the JSON-RPC 2.0 wire dialect (`agentwire --mode wire`,
 * kimi-cli's `--wire`): a typed method per wire method, typed events, and handlers for the
 * agent's requests. Without a handler, approvals are rejected, external tool calls fail and
 * questions get empty answers; replayed requests are never answered.
 */
export class WireClient extends WireMethods {
  /** Resolves when the process exits (or its output ends); never rejects. */
  readonly exited: Promise<ExitInfo>;
  private readonly connection: Connection;
  private readonly pending = new Map<string, Pending>();
  private readonly eventListeners = new Map<string, Set<(event: WireEventEnvelope) => void>>();
  private readonly anyListeners = new Set<(message: { [key: string]: unknown }) => void>();
  private readonly handlers = new Map<string, (payload: never) => unknown>();
  private readonly requestTimeoutMs: number;
  private nextId = 1;

  private constructor(target: ConnectionTarget, options: WireClientOptions) {
    super();
    this.requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
    this.connection = new Connection(target, { line: (line) => this.handleLine(line), exit: (info) => this.finish(info), listenerError: options.onListenerError }, options.stderrTailBytes);
    this.exited = this.connection.exited;
  }

  /** Starts `command args` (e.g. `agentwire --mode wire`) and speaks JSON-RPC on its stdio. */
  static spawn(command: string, args: readonly string[] = [], options: WireClientOptions = {}): WireClient {
    return new WireClient(Connection.spawnTarget(command, args, options), options);
  }

  /** Speaks JSON-RPC over given streams. */
  static attach(input: Writable, output: Readable, options: WireClientOptions = {}): WireClient {
    return new WireClient({ input, output }, options);
  }

  /** The process id, when spawned. */
  get pid(): number | undefined {
    return this.connection.pid;
  }

  /** Calls `listener` with every event of this type (live and replayed). Returns an unsubscribe function. */
  on<K extends WireEventType>(type: K, listener: (event: WireEventEnvelope<K>) => void): () => void;
  on(type: string, listener: (event: WireEventEnvelope) => void): () => void;
  on(type: string, listener: (event: WireEventEnvelope) => void): () => void {
    let set = this.eventListeners.get(type);
    if (!set) this.eventListeners.set(type, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  /** Calls `listener` with every message read (events, requests, responses, unknown shapes). */
  onMessage(listener: (message: { [key: string]: unknown }) => void): () => void {
    this.anyListeners.add(listener);
    return () => this.anyListeners.delete(listener);
  }

  /** Answers one kind of agent request (`ApprovalRequest`, `ToolCallRequest`, `QuestionRequest`, …). */
  handle<K extends WireAgentRequestType>(kind: K, handler: WireRequestHandler<K>): void {
    this.handlers.set(kind, handler as (payload: never) => unknown);
  }

  /** Sends a prompt and resolves with its result and every event of the turn. */
  async promptAndWait(params: T.WirePromptParams, options: RequestOptions = {}): Promise<WirePromptOutcome> {
    const events: WireEventEnvelope[] = [];
    const off = this.onMessage((m) => {
      if (m.method === "event" && m.replayed !== true) {
        const p = m.params as { type: string; payload: unknown };
        events.push({ type: p.type, payload: p.payload, replayed: false } as WireEventEnvelope);
      }
    });
    try {
      const result = await this.call("prompt", params, { timeoutMs: 0, ...options });
      return { result, events };
    } finally {
      off();
    }
  }

  /** Writes one raw message (a deliberate test of bad input, or a method without a typed call). */
  sendRaw(message: unknown): void {
    this.connection.write(message);
  }

  /** Ends stdin and waits for the exit (SIGTERM, then SIGKILL, after `graceMs` each). */
  close(graceMs = 2000): Promise<ExitInfo> {
    return this.connection.close(graceMs);
  }

  protected override call<K extends WireMethod>(method: K, params: WireMethodMap[K]["params"], options: RequestOptions = {}): Promise<WireMethodMap[K]["result"]> {
    const exit = this.connection.exitInfo;
    if (exit) return Promise.reject(exitError(exit));
    const id = `w-${this.nextId++}`;
    const result = new Promise<unknown>((resolve, reject) => this.pending.set(id, { method, resolve, reject }));
    const message: { [key: string]: unknown } = { jsonrpc: "2.0", id, method };
    if (params !== undefined) message.params = params;
    this.connection.write(message);
    const timeoutMs = options.timeoutMs ?? this.requestTimeoutMs;
    return withDeadline(result, { timeoutMs, signal: options.signal, onTimeout: () => new RequestTimeoutError(method, timeoutMs) })
      .finally(() => this.pending.delete(id)) as Promise<WireMethodMap[K]["result"]>;
  }

  private finish(info: ExitInfo): void {
    for (const p of this.pending.values()) p.reject(exitError(info));
    this.pending.clear();
  }

  private handleLine(line: string): void {
    if (line.trim() === "") return;
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      return;
    }
    if (typeof message !== "object" || message === null || Array.isArray(message)) return;
    const m = message as { [key: string]: unknown };
    for (const l of this.anyListeners) l(m);
    if (m.method === "event") {
      const p = m.params as { type?: unknown; payload?: unknown } | undefined;
      if (p && typeof p.type === "string") {
        const envelope = { type: p.type, payload: p.payload, replayed: m.replayed === true } as WireEventEnvelope;
        for (const l of this.eventListeners.get(p.type) ?? []) l(envelope);
      }
    } else if (m.method === "request") {
      if (m.replayed !== true) void this.answer(m);
    } else if ("id" in m && ("result" in m || "error" in m)) {
      const pending = typeof m.id === "string" ? this.pending.get(m.id) : undefined;
      if (!pending) return;
      this.pending.delete(m.id as string);
      if ("error" in m) {
        const e = m.error as { code?: number; message?: string; data?: unknown };
        pending.reject(new WireRequestError(pending.method, e.code ?? 0, e.message ?? "error", e.data));
      } else pending.resolve(m.result);
    }
  }

  private async answer(m: { [key: string]: unknown }): Promise<void> {
    const params = m.params as { type?: string; payload?: { id?: string } } | undefined;
    const kind = params?.type ?? "";
    const payload = params?.payload ?? {};
    const idField = kind === "ToolCallRequest" ? "tool_call_id" : "request_id";
    const handler = this.handlers.get(kind);
    let result: unknown;
    try {
      result = handler ? await handler(payload as never) : defaultAnswer(kind);
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      this.connection.write({ jsonrpc: "2.0", id: m.id, error: { code: -32603, message: text } });
      return;
    }
    if (result === undefined) {
      this.connection.write({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: `no handler for ${kind}` } });
      return;
    }
    this.connection.write({ jsonrpc: "2.0", id: m.id, result: { [idField]: payload.id ?? m.id, ...(result as object) } });
  }
}

/** Without a handler: reject approvals, fail tool calls, answer questions with nothing. */
function defaultAnswer(kind: string): unknown {
  switch (kind) {
    case "ApprovalRequest":
      return { response: "reject", feedback: "no approval handler on the client" };
    case "ToolCallRequest":
      return { return_value: { is_error: true, output: "", message: "no tool handler on the client", display: [] } };
    case "QuestionRequest":
      return { answers: {} };
    case "HookRequest":
      return { action: "allow" };
    default:
      return undefined;
  }
}
