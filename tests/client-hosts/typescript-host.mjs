// A host on our TypeScript client (clients/typescript, built to dist/ by its `npm run build`), for
// `agentwire conformance client --dialect rpc`: `node typescript-host.mjs '<agent command line>'`
// starts the agent, sends the prompt line read from stdin, waits for `agent_settled` and closes
// the client (the agent's input first). Dialogs get the client's default UI handling.
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const { AgentClient } = await import(pathToFileURL(join(here, "../../clients/typescript/dist/src/index.js")).href);
const lines = createInterface({ input: process.stdin });
const prompt = await new Promise((resolve) => {
  lines.once("line", resolve);
  lines.once("close", () => resolve("hello"));
});
lines.close();
const client = AgentClient.spawn("/bin/sh", ["-c", process.argv[2]]);
let code = 0;
try {
  const settled = client.waitUntilSettled();
  await client.prompt({ message: prompt });
  await settled;
} catch (error) {
  console.error(`typescript-host: ${error.message}`);
  code = 1;
}
await client.close();
process.exit(code);
