/// <reference types="node" preserve="true" />
import { spawn, type ChildProcess } from "node:child_process";
import type { Readable, Writable } from "node:stream";

import type { ExitInfo } from "./errors.js";
import { LineSplitter, encodeFrame } from "./framing.js";

/** How a client reaches its agent: a spawned process, or given streams. */
export interface ConnectionTarget {
  /** The agent's stdin. */
  input: Writable;
  /** The agent's stdout. */
  output: Readable;
  /** The process, when spawned (its exit ends the connection; its stderr is kept). */
  child?: ChildProcess;
}

/** What a connection reports to its client. */
export interface ConnectionEvents {
  /** One complete line of output (without its LF). */
  line(line: string): void;
  /** The process exited or the output ended; called once. */
  exit(info: ExitInfo): void;
  /** A listener or handler threw while `line` was handled (default: `console.error`). */
  listenerError?(error: unknown, line: string): void;
}

/**
 * The stdio transport shared by both clients: LF-only line splitting, frame writing, the stderr
 * tail, the exit once, and the close ladder (end stdin → SIGTERM → SIGKILL).
 */
export class Connection {
  /** Resolves when the process exits (or the output ends); never rejects. */
  readonly exited: Promise<ExitInfo>;
  private exitInfoValue: ExitInfo | undefined;
  private stderrTail = "";
  private resolveExited!: (info: ExitInfo) => void;

  constructor(
    private readonly target: ConnectionTarget,
    private readonly events: ConnectionEvents,
    private readonly stderrTailBytes = 8192,
  ) {
    this.exited = new Promise((resolve) => {
      this.resolveExited = resolve;
    });
    const splitter = new LineSplitter();
    const { input, output, child } = target;
    output.on("data", (chunk: Buffer | string) => {
      for (const line of splitter.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk)) this.deliver(line);
    });
    output.on("end", () => {
      const tail = splitter.flush();
      if (tail !== undefined) this.deliver(tail);
      if (!child) this.finish({ code: null, signal: null, stderrTail: this.stderrTail });
    });
    // A write after the process died must not crash the host.
    input.on("error", () => undefined);
    if (child) {
      child.stderr?.on("data", (chunk: Buffer) => this.keepStderr(chunk.toString("utf8")));
      let started = false;
      child.on("spawn", () => {
        started = true;
      });
      child.on("error", (error: NodeJS.ErrnoException) => {
        if (started) {
          this.keepStderr(`${error.message}\n`);
          this.finish({ code: null, signal: null, stderrTail: this.stderrTail });
          return;
        }
        // The process never ran ("spawn agentwire ENOENT"): say so instead of "exited".
        const spawnError = { command: child.spawnfile, code: error.code, message: error.message };
        this.finish({ code: null, signal: null, stderrTail: this.stderrTail, spawnError });
      });
      child.on("close", (code, signal) => this.finish({ code, signal, stderrTail: this.stderrTail }));
    }
  }

  /** Starts `command args` with piped stdio. */
  static spawnTarget(command: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv }): ConnectionTarget {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ["pipe", "pipe", "pipe"] });
    if (!child.stdin || !child.stdout) throw new Error("spawn gave no stdio pipes");
    return { input: child.stdin, output: child.stdout, child };
  }

  /** How the process ended, once it has. */
  get exitInfo(): ExitInfo | undefined {
    return this.exitInfoValue;
  }

  /** The process id, when spawned. */
  get pid(): number | undefined {
    return this.target.child?.pid;
  }

  /** Writes one frame as a line (dropped once the process has exited). */
  write(frame: unknown): void {
    if (!this.exitInfoValue) this.target.input.write(encodeFrame(frame));
  }

  /** Writes one frame already serialized as JSON text (no LF) as a line. */
  writeText(text: string): void {
    if (!this.exitInfoValue) this.target.input.write(`${text}\n`);
  }

  /** Ends stdin and waits for the exit; SIGTERM after `graceMs`, SIGKILL after as long again. */
  async close(graceMs = 2000): Promise<ExitInfo> {
    if (!this.exitInfoValue) this.target.input.end();
    const child = this.target.child;
    if (!child) return this.exited;
    const timer = setTimeout(() => {
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), graceMs).unref();
    }, graceMs);
    timer.unref();
    const info = await this.exited;
    clearTimeout(timer);
    return info;
  }

  private keepStderr(text: string): void {
    this.stderrTail = (this.stderrTail + text).slice(-this.stderrTailBytes);
  }

  // A listener that throws is the host's bug, not the agent's: it is reported and the next line
  // is read as usual (an exception escaping a stream's data handler would end the host process).
  private deliver(line: string): void {
    try {
      this.events.line(line);
    } catch (error) {
      if (this.events.listenerError) this.events.listenerError(error, line);
      else console.error("@agentwire/client: a listener threw on a line from the agent:", error);
    }
  }

  private finish(info: ExitInfo): void {
    if (this.exitInfoValue) return;
    this.exitInfoValue = info;
    this.events.exit(info);
    this.resolveExited(info);
  }
}

/** Races `promise` against a timeout (0: none) and an AbortSignal. */
export function withDeadline<V>(promise: Promise<V>, options: { timeoutMs: number; signal: AbortSignal | undefined; onTimeout: () => Error }): Promise<V> {
  const { timeoutMs, signal } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<V>((resolve, reject) => {
    const timer = timeoutMs > 0 ? setTimeout(() => reject(options.onTimeout()), timeoutMs) : undefined;
    const onAbort = () => reject(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    });
  });
}
