/** Per-request options of every command method. */
export interface RequestOptions {
  /** Milliseconds to wait for the response; overrides the client's `requestTimeoutMs` (0 waits forever). */
  timeoutMs?: number;
  /** Rejects the request (with `signal.reason`) when aborted; the agent is not told. */
  signal?: AbortSignal;
}
