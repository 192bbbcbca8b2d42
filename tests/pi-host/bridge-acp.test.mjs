// pi's own RpcClient (@mariozechner/pi-coding-agent, pinned in package.json) driving
// `agentwire bridge --serve rpc -- agentwire --mode acp`: an ACP agent behind a pi-style host
// (issue 26, done-when 2.5). RpcClient starts `node bridge-shim.mjs --mode rpc …`, which runs the
// bridge in front of $AGENTWIRE_BIN's ACP mode; the offline model plays a --model-script.
// Run by scripts/test:  AGENTWIRE_BIN=target/debug/agentwire npm test  (in tests/pi-host)
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { rpcClient, sandbox } from "./sandbox.mjs";

/** RpcClient on the bridge in front of agentwire's ACP agent playing `script`. */
async function start(script) {
  const { dir, scriptPath } = sandbox(script);
  const client = rpcClient("bridge-shim.mjs", dir, ["--model-script", scriptPath, "--no-session", "--cwd", dir]);
  await client.start();
  return client;
}

describe("pi's RpcClient through bridge --serve rpc in front of an ACP agent", () => {
  it("promptAndWait streams the reply and ends with message_end and prompt_result completed", async () => {
    const client = await start([{ text: "Hello through the bridge." }]);
    const state = await client.getState();
    assert.equal(state.isStreaming, false);
    assert.ok(state.sessionId, "the bridge opened an ACP session");
    // prompt_result (an agentwire addition pi's RpcClient passes to onEvent) follows agent_end.
    const settled = new Promise((resolve) => {
      const off = client.onEvent((event) => {
        if (event.type === "prompt_result") {
          off();
          resolve(event);
        }
      });
    });
    const events = await client.promptAndWait("hi");
    const types = events.map((e) => e.type);
    assert.equal(types[0], "agent_start");
    assert.equal(types.at(-1), "agent_end");
    const text = events
      .filter((e) => e.type === "message_update" && e.assistantMessageEvent.type === "text_delta")
      .map((e) => e.assistantMessageEvent.delta)
      .join("");
    assert.equal(text, "Hello through the bridge.");
    const end = events.filter((e) => e.type === "message_end").at(-1);
    assert.equal(end.message.role, "assistant");
    assert.equal(end.message.content.find((b) => b.type === "text").text, "Hello through the bridge.");
    const result = await settled;
    assert.equal(result.status, "completed");
  });

  it("a command ACP cannot carry is refused naming what is missing, and the next prompt still runs", async () => {
    const client = await start([{ text: "still here" }]);
    await assert.rejects(client.bash("true"), /does not support `bash`/);
    const events = await client.promptAndWait("again");
    assert.equal(events.at(-1).type, "agent_end");
  });
});
