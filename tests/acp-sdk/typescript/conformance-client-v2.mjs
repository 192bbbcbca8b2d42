// A small ACP v2 host on the official TypeScript SDK's v2 client (@agentclientprotocol/sdk 2.4.0,
// `experimental/v2`; the published package ships no example client), for `agentwire conformance
// client`: `node conformance-client-v2.mjs '<agent command line>'` starts the agent, negotiates
// protocol version 2, opens a session, sends the prompt line read from stdin and waits for the
// `idle` state update. A permission request is answered by the option kinds (allow once); SIGINT
// sends `session/cancel`, and a request the agent then cancels (`$/cancel_request`, which the SDK
// turns into the handler's abort signal) is answered `cancelled`. When the turn is over it closes
// the agent's input and exits when the agent does.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk/experimental/v2";

const command = process.argv[2];
if (!command) {
  console.error("usage: conformance-client-v2.mjs '<agent command line>'");
  process.exit(2);
}
const lines = createInterface({ input: process.stdin });
const prompt = await new Promise((resolve) => {
  lines.once("line", resolve);
  lines.once("close", () => resolve("hello"));
});
lines.close();

const child = spawn("/bin/sh", ["-c", command], { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
let sessionId = null;
let interrupted = false;
const cancelled = { outcome: { outcome: "cancelled" } };
process.on("SIGINT", () => {
  interrupted = true;
  if (sessionId) conn.agent.notify(methods.agent.session.cancel, { sessionId });
});
let idle;
const settled = new Promise((resolve) => (idle = resolve));
const app = client({ name: "agentwire-conformance-v2-host" })
  .onRequest(methods.client.session.requestPermission, async ({ params, signal }) => {
    // A moment for the user's interrupt, as a person would take.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    if (interrupted || signal?.aborted) return cancelled;
    const once = params.options.find((o) => o.kind === "allow_once");
    return once ? { outcome: { outcome: "selected", optionId: once.optionId } } : cancelled;
  })
  .onNotification(methods.client.session.update, ({ params }) => {
    if (params.update.sessionUpdate === "state_update" && params.update.state === "idle") idle();
  });
const conn = app.connect(ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
let code = 0;
try {
  await conn.agent.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, info: { name: "agentwire-conformance-v2-host", version: "1" }, capabilities: {} });
  ({ sessionId } = await conn.agent.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] }));
  await conn.agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: prompt }] });
  await Promise.race([settled, exited]);
} catch (error) {
  console.error(`conformance-client-v2: ${error.message}`);
  code = 1;
}
child.stdin.end();
await exited;
process.exit(code);
