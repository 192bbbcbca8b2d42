/// <reference types="node" preserve="true" />
import type { Readable, Writable } from "node:stream";

import { ChunkReassembler, DEFAULT_MAX_FRAME_BYTES, splitFrame } from "./chunks.js";
import { Connection, withDeadline, type ConnectionTarget } from "./connection.js";
import { AgentCommandError, EventBufferOverflowError, exitError, RequestTimeoutError, type ExitInfo } from "./errors.js";
import type { RequestOptions } from "./options.js";
import {
  CommandMethods,
  type AgentEventMap,
  type AgentEventType,
  type CommandParams,
  type CommandResponseMap,
  type CommandType,
} from "./generated/protocol.js";
import type * as T from "./generated/types.js";

/** A frame of a `type` this client does not know; delivered as it came. */
export interface UnknownFrame {
  type?: unknown;
  [key: string]: unknown;
}

/** Any frame read from the agent. */
export type AgentFrame = AgentEventMap[AgentEventType] | T.RpcResponse | UnknownFrame;

/** What a UI handler answers to a dialog (select, input and editor take `value`, confirm takes `confirmed`). */
export type UiAnswer = { value: string } | { confirmed: boolean } | { cancelled: true };

/** Context handed to a UI handler. */
export interface UiContext {
  /** Aborted when the agent withdraws the dialog (its timeout expired) or the process exits. */
  signal: AbortSignal;
}

/**
 * Answers `extension_ui_request` frames. Dialogs (select, confirm, input, editor) resolve to an
 * answer (`undefined` counts as cancelled); for fire-and-forget methods (notify, setStatus, …)
 * the return value is ignored.
 */
export type UiHandler = (request: T.ExtensionUiRequest, context: UiContext) => UiAnswer | undefined | Promise<UiAnswer | undefined>;

/** Without a handler: dialogs are cancelled (a confirm is answered `confirmed:false`), notifications ignored. */
export const defaultUiHandler: UiHandler = (request) => {
  if (request.method === "confirm") return { confirmed: false };
  return { cancelled: true };
};

const DIALOG_METHODS: ReadonlySet<string> = new Set(["select", "confirm", "input", "editor"]);

/** Context handed to a host tool handler. */
export interface HostToolContext {
  /** Aborted when the agent cancels the call (`host_tool_cancel`) or the process exits. */
  signal: AbortSignal;
  /** Sends a `host_tool_update` with progress so far. */
  update(partial: T.AgentToolResult | string): void;
  /** The `host_tool_call` frame. */
  call: T.HostToolCall;
}

/** Runs one host tool call; a string result becomes one text block, a thrown error an `isError` result. */
export type HostToolHandler = (args: { [key: string]: unknown }, context: HostToolContext) => Promise<T.AgentToolResult | string> | T.AgentToolResult | string;

/** Options shared by `spawn` and `attach`. */
export interface AgentClientOptions {
  /** Default milliseconds to wait for a response (default 60 000; 0 waits forever). */
  requestTimeoutMs?: number;
  /** Answers UI dialogs (default: {@link defaultUiHandler}). */
  uiHandler?: UiHandler;
  /** Bytes of stderr kept for error messages (default 8 192). */
  stderrTailBytes?: number;
  /** Called when a listener or handler throws while a line is handled (default: `console.error`); reading goes on. */
  onListenerError?: (error: unknown, line: string) => void;
  /** Frames an `events()` iterator may hold unread before it fails (default 100 000). */
  eventBufferLimit?: number;
}

/** Options of {@link AgentClient.spawn}. */
export interface SpawnOptions extends AgentClientOptions {
  /** Working directory of the process. */
  cwd?: string;
  /** Environment of the process (default: this process's). */
  env?: NodeJS.ProcessEnv;
}

/** What {@link AgentClient.promptAndWait} resolves with. */
export interface PromptOutcome {
  /** The `prompt_result` that ended this prompt. */
  result: T.PromptResultEvent;
  /** Every frame the agent sent between the prompt and its `prompt_result` (both excluded). */
  events: AgentFrame[];
  /** The prompt's response data (pi sends none). */
  accepted: T.PromptAccepted | undefined;
}

interface Pending {
  command: string;
  resolve(data: unknown): void;
  reject(error: Error): void;
  cleanup(): void;
}

type Listener = (frame: never) => void;

function textResult(value: T.AgentToolResult | string): T.AgentToolResult {
  return typeof value === "string" ? { content: [{ type: "text", text: value }] } : value;
}

/**
 * A client of one agent process speaking the JSONL RPC protocol.
 *
 * Every command has a typed method (`client.setModel({ provider, modelId })`); events arrive
 * through `on(type, listener)`, `onFrame(listener)` (every frame, unknown types included) and
 * `events()`; `promptAndWait` runs one prompt to its `prompt_result`.
 *
 * Large frames (omp protocol v2): inbound `rpc_chunk` frames are always reassembled before
 * anything sees them; after `negotiateProtocol({ protocolVersion: 2 })` succeeds, frames longer
 * than the agent's `ready.maxFrameBytes` are sent as `rpc_chunk` frames too.
 */
export class AgentClient extends CommandMethods {
  /** Resolves when the process exits (or its output ends); never rejects. */
  readonly exited: Promise<ExitInfo>;

  private readonly connection: Connection;
  private readonly pending = new Map<string, Pending>();
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly frameListeners = new Set<(frame: AgentFrame) => void>();
  private readonly lineErrorListeners = new Set<(line: string, error: Error) => void>();
  private readonly hostToolHandlers = new Map<string, HostToolHandler>();
  private readonly hostToolCalls = new Map<string, AbortController>();
  private readonly dialogs = new Map<string, AbortController>();
  private readonly requestTimeoutMs: number;
  private readonly eventBufferLimit: number;
  private uiHandler: UiHandler;
  private nextId = 1;
  /** The protocol version in use (2 after a successful `negotiateProtocol`). */
  private protocolVersion = 1;
  /** The agent's physical frame limit (its `ready` frame), for chunking outbound frames. */
  private maxFrameBytes = DEFAULT_MAX_FRAME_BYTES;
  private chunksSent = 0;
  private readonly chunks = new ChunkReassembler();

  private constructor(target: ConnectionTarget, options: AgentClientOptions) {
    super();
    this.requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
    this.eventBufferLimit = options.eventBufferLimit ?? 100_000;
    this.uiHandler = options.uiHandler ?? defaultUiHandler;
    this.connection = new Connection(target, { line: (line) => this.handleLine(line), exit: (info) => this.finish(info), listenerError: options.onListenerError }, options.stderrTailBytes);
    this.exited = this.connection.exited;
  }

  /** Starts `command args` and speaks the protocol on its stdin/stdout. */
  static spawn(command: string, args: readonly string[] = [], options: SpawnOptions = {}): AgentClient {
    return new AgentClient(Connection.spawnTarget(command, args, options), options);
  }

  /** Speaks the protocol over given streams (`input` is the agent's stdin, `output` its stdout). */
  static attach(input: Writable, output: Readable, options: AgentClientOptions = {}): AgentClient {
    return new AgentClient({ input, output }, options);
  }

  /** The process id, when spawned. */
  get pid(): number | undefined {
    return this.connection.pid;
  }

  private get exitInfo(): ExitInfo | undefined {
    return this.connection.exitInfo;
  }

  /** Replaces the UI handler. */
  setUiHandler(handler: UiHandler | undefined): void {
    this.uiHandler = handler ?? defaultUiHandler;
  }

  /** Calls `listener` with every frame of this `type`. Returns a function that unsubscribes. */
  on<K extends AgentEventType>(type: K, listener: (event: AgentEventMap[K]) => void): () => void;
  on(type: string, listener: (frame: UnknownFrame) => void): () => void;
  on(type: string, listener: (frame: never) => void): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  /** Calls `listener` with every frame read, responses and unknown types included. */
  onFrame(listener: (frame: AgentFrame) => void): () => void {
    this.frameListeners.add(listener);
    return () => this.frameListeners.delete(listener);
  }

  /** Calls `listener` for each stdout line that is not a JSON object (the line is otherwise skipped). */
  onInvalidLine(listener: (line: string, error: Error) => void): () => void {
    this.lineErrorListeners.add(listener);
    return () => this.lineErrorListeners.delete(listener);
  }

  /**
   * Every frame the agent sends from now on except responses, in order, until the process exits.
   * Unread frames are buffered up to `eventBufferLimit`; past it the iterator throws
   * {@link EventBufferOverflowError} rather than silently dropping frames.
   */
  events(): AsyncIterableIterator<AgentFrame> {
    const queue: AgentFrame[] = [];
    let wake: (() => void) | undefined;
    let overflow = false;
    const unsubscribe = this.onFrame((frame) => {
      if (frame.type === "response") return;
      if (queue.length >= this.eventBufferLimit) overflow = true;
      else queue.push(frame);
      wake?.();
    });
    const done = this.exited.then(() => wake?.());
    void done;
    const limit = this.eventBufferLimit;
    const self = this;
    const iterator: AsyncIterableIterator<AgentFrame> = {
      async next(): Promise<IteratorResult<AgentFrame>> {
        for (;;) {
          if (overflow) {
            unsubscribe();
            throw new EventBufferOverflowError(limit);
          }
          const frame = queue.shift();
          if (frame !== undefined) return { value: frame, done: false };
          if (self.exitInfo) {
            unsubscribe();
            return { value: undefined, done: true };
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = undefined;
        }
      },
      async return(): Promise<IteratorResult<AgentFrame>> {
        unsubscribe();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }

  /**
   * Sends a prompt and resolves on the `prompt_result` for it, with every frame of the run.
   * Rejects when the prompt is refused, on timeout (default: none) or when the process exits.
   */
  async promptAndWait(params: CommandParams<"prompt">, options: RequestOptions = {}): Promise<PromptOutcome> {
    const id = this.allocateId();
    const events: AgentFrame[] = [];
    let settle!: (result: T.PromptResultEvent) => void;
    const finished = new Promise<T.PromptResultEvent>((resolve, reject) => {
      settle = resolve;
      void this.exited.then((info) => reject(exitError(info)));
    });
    const unsubscribe = this.onFrame((frame) => {
      if (frame.type === "prompt_result" && (frame as T.PromptResultEvent).id === id) settle(frame as T.PromptResultEvent);
      else if (frame.type !== "response") events.push(frame);
    });
    try {
      const accepted = (await this.request("prompt", { ...params }, { ...options, id })) as T.PromptAccepted | undefined;
      const result = await this.race(finished, "prompt", { timeoutMs: options.timeoutMs ?? 0, signal: options.signal });
      return { result, events, accepted };
    } finally {
      unsubscribe();
    }
  }

  /**
   * Resolves on the next `agent_settled` (pi 1.6's `waitForIdle`): the agent has no automatic
   * work left — retries, compaction, queued steering and follow-ups all done — for the run in
   * progress or the next one to start. Call it before or right after sending the prompt; a
   * prompt answered `disposition: "handled"` starts no run and brings no `agent_settled`.
   * Rejects on timeout (default: none), abort or when the process exits.
   */
  waitUntilSettled(options: RequestOptions = {}): Promise<T.AgentSettledEvent> {
    let unsubscribe = (): void => undefined;
    const settled = new Promise<T.AgentSettledEvent>((resolve, reject) => {
      unsubscribe = this.on("agent_settled", (frame) => resolve(frame));
      void this.exited.then((info) => reject(exitError(info)));
    });
    return this.race(settled, "agent_settled", { timeoutMs: options.timeoutMs ?? 0, signal: options.signal }).finally(() => unsubscribe());
  }

  /**
   * Registers host tools (`set_host_tools`), replacing earlier ones, with the handlers that run
   * them: `setHostTools([{ name, description, parameters }], { name: handler })`. A tool without
   * a handler still registers; calls to it are answered with an error result. The generated
   * form `setHostTools({ tools })` registers without handlers.
   */
  override setHostTools(params: CommandParams<"set_host_tools">, options?: RequestOptions): Promise<T.HostToolNames>;
  override setHostTools(tools: T.HostToolDefinition[], handlers: { [name: string]: HostToolHandler }, options?: RequestOptions): Promise<T.HostToolNames>;
  override setHostTools(
    toolsOrParams: T.HostToolDefinition[] | CommandParams<"set_host_tools">,
    handlersOrOptions?: { [name: string]: HostToolHandler } | RequestOptions,
    maybeOptions?: RequestOptions,
  ): Promise<T.HostToolNames> {
    this.hostToolHandlers.clear();
    if (Array.isArray(toolsOrParams)) {
      for (const [name, handler] of Object.entries((handlersOrOptions ?? {}) as { [name: string]: HostToolHandler })) {
        this.hostToolHandlers.set(name, handler);
      }
      return this.send("set_host_tools", { tools: toolsOrParams }, maybeOptions);
    }
    return this.send("set_host_tools", toolsOrParams, handlersOrOptions as RequestOptions | undefined);
  }

  /**
   * Switches to omp's RPC protocol 2 (`negotiate_protocol`): once the agent accepts, frames
   * longer than its `ready.maxFrameBytes` are sent as `rpc_chunk` frames. Rejects with
   * {@link AgentCommandError} for a version the agent does not speak (nothing changes then).
   */
  override async negotiateProtocol(params: CommandParams<"negotiate_protocol">, options?: RequestOptions): Promise<T.NegotiatedProtocol> {
    const negotiated = await this.send("negotiate_protocol", params, options);
    this.protocolVersion = negotiated.protocolVersion;
    return negotiated;
  }

  /** Sends a raw frame (a command without a typed method, or a deliberate test of bad input); chunked when protocol 2 is on and it is too long. */
  sendFrame(frame: unknown): void {
    if (this.protocolVersion < 2) {
      this.connection.write(frame);
      return;
    }
    const text = JSON.stringify(frame);
    if (Buffer.byteLength(text, "utf8") <= this.maxFrameBytes) this.connection.writeText(text);
    else for (const chunk of splitFrame(text, `rpc-${++this.chunksSent}`)) this.connection.write(chunk);
  }

  /**
   * Ends stdin and waits for the process to exit; after `graceMs` (default 2 000) sends SIGTERM,
   * and SIGKILL after as long again.
   */
  close(graceMs = 2000): Promise<ExitInfo> {
    return this.connection.close(graceMs);
  }

  protected override send<K extends CommandType>(type: K, params: CommandParams<K>, options?: RequestOptions): Promise<CommandResponseMap[K]> {
    return this.request(type, { ...params }, options ?? {}) as Promise<CommandResponseMap[K]>;
  }

  private allocateId(): string {
    return `req-${this.nextId++}`;
  }

  private request(type: string, params: { [key: string]: unknown }, options: RequestOptions & { id?: string }): Promise<unknown> {
    if (this.exitInfo) return Promise.reject(exitError(this.exitInfo));
    const id = options.id ?? this.allocateId();
    const response = new Promise<unknown>((resolve, reject) => {
      this.pending.set(id, { command: type, resolve, reject, cleanup: () => this.pending.delete(id) });
    });
    this.sendFrame({ id, type, ...params });
    const timeoutMs = options.timeoutMs ?? this.requestTimeoutMs;
    return this.race(response, type, { timeoutMs, signal: options.signal }).finally(() => this.pending.delete(id));
  }

  private race<V>(promise: Promise<V>, command: string, options: { timeoutMs: number; signal: AbortSignal | undefined }): Promise<V> {
    return withDeadline(promise, { ...options, onTimeout: () => new RequestTimeoutError(command, options.timeoutMs) });
  }

  private finish(info: ExitInfo): void {
    for (const pending of [...this.pending.values()]) pending.reject(exitError(info));
    this.pending.clear();
    for (const controller of [...this.hostToolCalls.values(), ...this.dialogs.values()]) controller.abort(exitError(info));
    this.hostToolCalls.clear();
    this.dialogs.clear();
  }

  private handleLine(line: string): void {
    if (line.trim() === "") return;
    let frame: unknown;
    try {
      frame = JSON.parse(line);
    } catch (error) {
      for (const l of this.lineErrorListeners) l(line, error as Error);
      return;
    }
    if (typeof frame !== "object" || frame === null || Array.isArray(frame)) {
      for (const l of this.lineErrorListeners) l(line, new Error("not a JSON object"));
      return;
    }
    const f = frame as UnknownFrame;
    if (f.type === "rpc_chunk") {
      // Transparent: listeners see the reassembled frame, never its chunks.
      let whole: string | undefined;
      try {
        whole = this.chunks.push(f as unknown as T.RpcChunk);
      } catch (error) {
        for (const l of this.lineErrorListeners) l(line, error as Error);
        return;
      }
      if (whole !== undefined) this.handleLine(whole);
      return;
    }
    if (f.type === "ready" && typeof f.maxFrameBytes === "number" && f.maxFrameBytes > 0) this.maxFrameBytes = f.maxFrameBytes;
    if (f.type === "response") this.handleResponse(f as unknown as T.RpcResponse);
    else if (f.type === "host_tool_call") this.handleHostToolCall(f as unknown as T.HostToolCall);
    else if (f.type === "host_tool_cancel") this.hostToolCalls.get((f as unknown as T.HostToolCancel).targetId)?.abort(new Error("cancelled by the agent"));
    else if (f.type === "extension_ui_request") this.handleUiRequest(f as unknown as T.ExtensionUiRequest);
    for (const l of this.frameListeners) l(f as AgentFrame);
    if (typeof f.type === "string") for (const l of this.listeners.get(f.type) ?? []) (l as (frame: unknown) => void)(f);
  }

  private handleResponse(response: T.RpcResponse): void {
    const id = response.id;
    const pending = typeof id === "string" ? this.pending.get(id) : undefined;
    if (!pending) return; // not ours (timed out, or no id): still delivered to frame listeners
    pending.cleanup();
    if (response.success) pending.resolve(response.data);
    else pending.reject(new AgentCommandError(response.command, response.error ?? "unknown error", response.code));
  }

  private handleHostToolCall(call: T.HostToolCall): void {
    const controller = new AbortController();
    this.hostToolCalls.set(call.id, controller);
    const handler = this.hostToolHandlers.get(call.toolName);
    const context: HostToolContext = {
      signal: controller.signal,
      call,
      update: (partial) => {
        if (!controller.signal.aborted) this.sendFrame({ type: "host_tool_update", id: call.id, partialResult: textResult(partial) });
      },
    };
    const run = async (): Promise<T.AgentToolResult> => {
      if (!handler) throw new Error(`no handler registered for host tool ${call.toolName}`);
      return textResult(await handler(call.arguments, context));
    };
    run().then(
      (result) => {
        if (!controller.signal.aborted) this.sendFrame({ type: "host_tool_result", id: call.id, result });
      },
      (error: unknown) => {
        if (controller.signal.aborted) return; // the agent cancelled the call: it expects no result
        const text = error instanceof Error ? error.message : String(error);
        this.sendFrame({ type: "host_tool_result", id: call.id, result: textResult(text), isError: true });
      },
    ).finally(() => this.hostToolCalls.delete(call.id));
  }

  private handleUiRequest(request: T.ExtensionUiRequest): void {
    if (request.method === "cancel") {
      this.dialogs.get(request.targetId)?.abort(new Error("dialog withdrawn by the agent"));
      this.dialogs.delete(request.targetId);
      return;
    }
    const dialog = DIALOG_METHODS.has(request.method);
    const controller = new AbortController();
    if (dialog) this.dialogs.set(request.id, controller);
    const handler = this.uiHandler;
    Promise.resolve()
      .then(() => handler(request, { signal: controller.signal }))
      .then(
        (answer) => answer ?? { cancelled: true as const },
        () => ({ cancelled: true as const }),
      )
      .then((answer) => {
        if (!dialog || controller.signal.aborted || !this.dialogs.has(request.id)) return;
        this.dialogs.delete(request.id);
        this.sendFrame({ type: "extension_ui_response", id: request.id, ...answer });
      });
  }
}
