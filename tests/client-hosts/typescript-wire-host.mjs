// A kimi wire host on our TypeScript client (clients/typescript, built to dist/), for `agentwire
// conformance client --dialect wire`: `node typescript-wire-host.mjs '<agent command line>'`
// starts the agent, sends `initialize`, the prompt line read from stdin with `promptAndWait`,
// and closes the client (the agent's input first). Agent requests get the client's defaults.
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const { WireClient } = await import(pathToFileURL(join(here, "../../clients/typescript/dist/src/index.js")).href);
const lines = createInterface({ input: process.stdin });
const prompt = await new Promise((resolve) => {
  lines.once("line", resolve);
  lines.once("close", () => resolve("hello"));
});
lines.close();
const client = WireClient.spawn("/bin/sh", ["-c", process.argv[2]]);
let code = 0;
try {
  await client.initialize({ protocol_version: "1.10" });
  await client.promptAndWait({ user_input: prompt });
} catch (error) {
  console.error(`typescript-wire-host: ${error.message}`);
  code = 1;
}
await client.close();
process.exit(code);
