import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { AgentExitedError, WireClient, WireRequestError } from "../src/index.js";
import { Sandbox } from "./helpers.js";

// A hang guard for the whole suite (see client.test.ts), not a speed check.
describe("WireClient against agentwire --mode wire", { timeout: 300_000 }, () => {
  let sandbox: Sandbox;
  before(() => {
    sandbox = new Sandbox();
  });
  after(() => sandbox.dispose());

  it("initializes, streams a turn and answers an external tool call", async () => {
    const client = sandbox.spawnWire([
      { text: "Checking. ", toolCalls: [{ id: "call_1", name: "lookup_ticket", arguments: { id: "T-42" } }] },
      { text: "It is open." },
    ]);
    try {
      client.handle("ToolCallRequest", async (payload) => {
        assert.equal(payload.name, "lookup_ticket");
        assert.deepEqual(JSON.parse(payload.arguments ?? "{}"), { id: "T-42" });
        return { return_value: { is_error: false, output: "status: open", message: "", display: [] } };
      });
      const init = await client.initialize({
        protocol_version: "1.10",
        client: { name: "ts-test", version: "1" },
        external_tools: [{ name: "lookup_ticket", description: "Look a ticket up.", parameters: { type: "object", properties: { id: { type: "string" } } } }],
      });
      assert.equal(init.protocol_version, "1.10");
      assert.deepEqual(init.external_tools?.accepted, ["lookup_ticket"]);
      const text: string[] = [];
      client.on("ContentPart", (e) => {
        if (e.payload.type === "text") text.push(e.payload.text);
      });
      const { result, events } = await client.promptAndWait({ user_input: "check T-42" });
      assert.equal(result.status, "finished");
      assert.equal(text.join(""), "Checking. It is open.");
      const toolResult = events.find((e) => e.type === "ToolResult");
      assert.equal((toolResult?.payload as { return_value: { output: unknown } }).return_value.output, "status: open");
      assert.deepEqual(events.map((e) => e.type).slice(-1), ["TurnEnd"]);
    } finally {
      await client.close();
    }
  });

  it("answers approvals and questions through handlers", async () => {
    const client = sandbox.spawnWire(
      [
        { toolCalls: [{ id: "c1", name: "bash", arguments: { command: "echo approved" } }] },
        { toolCalls: [{ id: "q1", name: "AskUserQuestion", arguments: { questions: [{ question: "Which?", options: [{ label: "A" }, { label: "B" }] }] } }] },
        { text: "done" },
      ],
      ["--approval", "dangerous"],
    );
    try {
      const asked: string[] = [];
      client.handle("ApprovalRequest", (p) => {
        asked.push(p.action);
        return { response: "approve" as const };
      });
      client.handle("QuestionRequest", (p) => ({ answers: { [p.questions[0]!.question]: "B" } }));
      await client.initialize({ protocol_version: "1.10", capabilities: { supports_question: true } });
      const { result, events } = await client.promptAndWait({ user_input: "go" });
      assert.equal(result.status, "finished");
      assert.deepEqual(asked, ["run command"]);
      const outputs = events.filter((e) => e.type === "ToolResult").map((e) => (e.payload as { return_value: { output: string } }).return_value.output);
      assert.deepEqual(outputs, ["approved\n", '{"answers":{"Which?":"B"}}']);
    } finally {
      await client.close();
    }
  });

  it("rejects approvals by default, maps JSON-RPC errors, and cancels a turn", async () => {
    const client = sandbox.spawnWire([
      { toolCalls: [{ id: "c1", name: "bash", arguments: { command: "echo never" } }] },
      { text: "ok" },
      { text: "z".repeat(300), chunkSize: 1, delayMs: 20 },
    ], ["--approval", "dangerous"]);
    try {
      await assert.rejects(client.steer({ user_input: "nobody" }), (e: unknown) => e instanceof WireRequestError && e.code === -32000);
      await assert.rejects(client.setPlanMode({ enabled: "yes" as unknown as boolean }), (e: unknown) => e instanceof WireRequestError && e.code === -32602);
      const first = await client.promptAndWait({ user_input: "run" });
      const denied = first.events.find((e) => e.type === "ToolResult");
      assert.equal((denied?.payload as { return_value: { is_error: boolean } }).return_value.is_error, true);
      const started = new Promise<void>((resolve) => client.on("ContentPart", () => resolve()));
      const second = client.promptAndWait({ user_input: "long" });
      await started;
      assert.deepEqual(await client.cancel(), {});
      assert.equal((await second).result.status, "cancelled");
    } finally {
      await client.close();
    }
  });

  it("rejects pending calls when the agent exits", async () => {
    const client = WireClient.spawn("sh", ["-c", "read line; echo boom >&2; exit 4"]);
    await assert.rejects(client.replay(), (e: unknown) => e instanceof AgentExitedError && e.exit.code === 4 && /boom/.test(e.exit.stderrTail));
  });
});
