// A host as small as pi's RpcClient allows, for `agentwire conformance client --dialect rpc`:
// `conformance-client.mjs 0.73|1.6 '<agent command line>'` reads one prompt line from stdin,
// starts the agent with the RpcClient of pi 0.73.1 (@mariozechner/pi-coding-agent) or pi 1.6.0
// (@earendil-works/pi-coding-agent; run this on Node >= 22.19), sends the prompt with
// promptAndWait and stops the client. Nothing is added to what RpcClient does: what the harness
// judges is RpcClient (it offers no way to answer an extension's dialog, so this host answers
// none).
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const [which, agent] = process.argv.slice(2);
const packages = { "0.73": "@mariozechner/pi-coding-agent", "1.6": "@earendil-works/pi-coding-agent" };
if (!packages[which] || !agent) {
  console.error("usage: conformance-client.mjs 0.73|1.6 '<agent command line>'");
  process.exit(2);
}
const { RpcClient } = await import(packages[which]);
const here = dirname(fileURLToPath(import.meta.url));
const lines = createInterface({ input: process.stdin });
const prompt = await new Promise((resolve) => {
  lines.once("line", resolve);
  lines.once("close", () => resolve("hello"));
});
lines.close();
const client = new RpcClient({ cliPath: join(here, "conformance-shim.mjs"), env: { AGENTWIRE_SCRIPTED_AGENT: agent } });
let code = 0;
try {
  await client.start();
  await client.promptAndWait(prompt, undefined, 60000);
} catch (error) {
  console.error(`conformance-client: ${error.message}`);
  code = 1;
}
await client.stop();
process.exit(code);
