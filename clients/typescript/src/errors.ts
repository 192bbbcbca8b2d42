/** How the agent process ended. */
export interface ExitInfo {
  /** Exit code, or null when killed by a signal or when attached to streams. */
  code: number | null;
  /** The signal that ended it, if any. */
  signal: NodeJS.Signals | null;
  /** The last bytes the process wrote to stderr. */
  stderrTail: string;
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
  override readonly name = "AgentExitedError";
  constructor(readonly exit: ExitInfo) {
    const how = exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
    const tail = exit.stderrTail.trim();
    super(`agent exited (${how}) before answering${tail ? `; stderr: ${tail}` : ""}`);
  }
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
