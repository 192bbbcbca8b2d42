// Spawns agentwire on its built-in offline model, registers a host tool, prompts, and prints the
// streamed answer. The model script makes the offline model call the host tool first.
// Run: npm run build && AGENTWIRE_BIN=../../target/debug/agentwire node dist/examples/offline.js
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { AgentClient } from "@agentwire/client";

const dir = mkdtempSync(join(tmpdir(), "agentwire-example-"));
const script = join(dir, "script.jsonl");
writeFileSync(
  script,
  [
    { text: "Let me check. ", toolCalls: [{ name: "weather", arguments: { city: "Paris" } }] },
    // No second entry: the offline model then answers on its own, summarising the tool result.
  ]
    .map((entry) => JSON.stringify(entry))
    .join("\n") + "\n",
);

const client = AgentClient.spawn(process.env.AGENTWIRE_BIN ?? "agentwire", ["--mode", "rpc", "--no-session", "--model-script", script]);

await client.setHostTools(
  [
    {
      name: "weather",
      description: "Current weather for a city.",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  ],
  {
    weather: async (args, { update }) => {
      update("asking the sky…");
      const answer = `weather in ${String(args.city)}: sunny`;
      console.log(`[host tool] ${answer}`);
      return answer;
    },
  },
);

client.on("message_update", (event) => {
  if (event.assistantMessageEvent.type === "text_delta") process.stdout.write(event.assistantMessageEvent.delta);
});

const { result } = await client.promptAndWait({ message: "What is the weather in Paris?" });
process.stdout.write(`\n[prompt ${result.status}]\n`);
console.log((await client.getLastAssistantText()).text);
await client.close();
