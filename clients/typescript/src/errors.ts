/// <reference types="node" preserve="true" />
/** How the agent process ended. */
export interface ExitInfo {
  /** Exit code, or null when killed by a signal or when attached to streams. */
  code: number | null;
  /** The signal that ended it, if any. */
  signal: NodeJS.Signals | null;
  /** The last bytes the process wrote to stderr. */
  stderrTail: string;
  /** Set when the process could not be started at all (the command was not found, not executable, …). */
  spawnError?: SpawnFailure;
}

/** Why a process could not be started. */
export interface SpawnFailure {
  /** The command that was spawned. */
  command: string;
  /** The system error code (`ENOENT`, `EACCES`, …), when there is one. */
  code: string | undefined;
  /** The system's message. */
  message: string;
}

/** The agent answered `success:false`. */
export class AgentCommandError extends Error {
  override readonly name = "AgentCommandError";
  constructor(
    /** The command's `type`. */
    readonly command: string,
    /** The agent's reason. */
    readonly reason: string,
    /** The agent's error class (`code`), when it sent one. */
    readonly code: string | undefined,
  ) {
    super(`${command} failed: ${reason}`);
  }
}

/** The agent process exited (or its output ended) before answering. */
export class AgentExitedError extends Error {
  override readonly name: string = "AgentExitedError";
  constructor(readonly exit: ExitInfo) {
    const how = exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
    const tail = exit.stderrTail.trim();
    super(`agent exited (${how}) before answering${tail ? `; stderr: ${tail}` : ""}`);
  }
}

/**
 * The agent process could not be started (the command was not found or not executable), so it
 * never ran. A subclass of {@link AgentExitedError}, so code that catches that keeps working.
 */
export class AgentSpawnError extends AgentExitedError {
  override readonly name = "AgentSpawnError";
  constructor(exit: ExitInfo & { spawnError: SpawnFailure }) {
    super(exit);
    const { command, code, message } = exit.spawnError;
    const hint =
      code === "ENOENT"
        ? ` (not found${command.includes("/") ? "" : " on PATH"}). Install agentwire (\`cargo install --path . --locked\` in its checkout), or pass the binary's path as the command, or set AGENTWIRE_BIN and use agentwireCommand()`
        : code === "EACCES"
          ? " (not executable)"
          : "";
    this.message = `could not start the agent \`${command}\`: ${message}${hint}`;
  }
}

/** The error for a process that has ended: {@link AgentSpawnError} when it never started, else {@link AgentExitedError}. */
export function exitError(exit: ExitInfo): AgentExitedError {
  return exit.spawnError ? new AgentSpawnError({ ...exit, spawnError: exit.spawnError }) : new AgentExitedError(exit);
}

/**
 * The agentwire binary to spawn: `$AGENTWIRE_BIN` when set and not empty, else `agentwire` (found on PATH).
 * Pass it as the command of `AgentClient.spawn` / `WireClient.spawn`.
 */
export function agentwireCommand(env: { [name: string]: string | undefined } = process.env): string {
  const bin = env["AGENTWIRE_BIN"];
  return bin !== undefined && bin !== "" ? bin : "agentwire";
}

/** No response within the request's timeout. */
export class RequestTimeoutError extends Error {
  override readonly name = "RequestTimeoutError";
  constructor(readonly command: string, readonly timeoutMs: number) {
    super(`${command}: no response within ${timeoutMs} ms`);
  }
}

/** An `events()` iterator fell too far behind; it ends with this instead of dropping frames. */
export class EventBufferOverflowError extends Error {
  override readonly name = "EventBufferOverflowError";
  constructor(readonly limit: number) {
    super(`more than ${limit} frames buffered in an events() iterator that is not being read`);
  }
}
