// The official ACP TypeScript SDK driving pi 0.73.1 (npm @mariozechner/pi-coding-agent, installed
// in tests/pi-host by scripts/setup-clients) through `agentwire bridge --serve acp`, pi's one
// model served by a scripted fake OpenAI-compatible server on 127.0.0.1 (below): prompt,
// streamed reply, a `bash` tool call, cancel.
// Opt-in: AGENTWIRE_BRIDGE_PI=1 (scripts/test sets it after installing pi).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const BIN = process.env.AGENTWIRE_BIN;
const here = dirname(fileURLToPath(import.meta.url));
// pi 0.73.1 by name: tests/pi-host pins pi 1.6.0 too, and both declare the bin `pi`.
const PI = resolve(here, "../../pi-host/bin/pi-0.73.1");
const enabled = Boolean(process.env.AGENTWIRE_BRIDGE_PI);
if (enabled) {
  if (!BIN) throw new Error("set AGENTWIRE_BIN to the agentwire binary");
  if (!existsSync(PI)) throw new Error(`AGENTWIRE_BRIDGE_PI is set but pi is not installed: ${PI} (scripts/setup-clients)`);
}

/**
 * A fake OpenAI Chat Completions server playing `replies` in order, one per request. A reply is
 * `{text, toolCall: {id, name, arguments}, delayMs}`; text streams one chunk of 4 characters
 * per event.
 */
async function fakeModel(replies) {
  const queue = [...replies];
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", async () => {
      const reply = queue.shift() ?? { text: "(no more replies)" };
      res.writeHead(200, { "content-type": "text/event-stream" });
      const send = (delta, finish = null) =>
        res.write(`data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "fake-model", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
      send({ role: "assistant", content: "" });
      for (let i = 0; i < (reply.text ?? "").length; i += 4) {
        if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
        if (res.destroyed) return;
        send({ content: reply.text.slice(i, i + 4) });
      }
      if (reply.toolCall) {
        const { id, name, arguments: args } = reply.toolCall;
        send({ tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: JSON.stringify(args) } }] });
      }
      send({}, reply.toolCall ? "tool_calls" : "stop");
      res.write(`data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "fake-model", choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { server, baseUrl: `http://127.0.0.1:${server.address().port}/v1` };
}

/** The bridge in front of pi on `replies`; an ACP client app recording session updates. */
async function start(replies) {
  const model = await fakeModel(replies);
  const home = mkdtempSync(join(tmpdir(), "bridge-pi-"));
  process.on("exit", () => rmSync(home, { recursive: true, force: true }));
  const agentDir = join(home, ".pi", "agent");
  mkdirSync(agentDir, { recursive: true });
  const fake = { id: "fake-model", name: "Fake Model", reasoning: false, input: ["text"], contextWindow: 128000, maxTokens: 4096, cost: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 } };
  writeFileSync(join(agentDir, "models.json"), JSON.stringify({ providers: { fake: { baseUrl: model.baseUrl, api: "openai-completions", apiKey: "bridge-key", models: [fake] } } }));
  writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ defaultProvider: "fake", defaultModel: "fake-model" }));
  const env = { ...process.env, HOME: home, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1", LANG: "C.UTF-8" };
  for (const k of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"]) delete env[k];
  const child = spawn(BIN, ["bridge", "--serve", "acp", "--", PI, "--mode", "rpc", "--no-session"], { cwd: home, env, stdio: ["pipe", "pipe", "inherit"] });
  const updates = [];
  const app = client({ name: "agentwire-bridge-pi-test" }).onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  });
  const conn = app.connect(ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  const agent = conn.agent;
  const init = await agent.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, false, "a JSONL agent cannot load sessions");
  const { sessionId } = await agent.request(methods.agent.session.new, { cwd: home, mcpServers: [] });
  const stop = async () => {
    child.stdin.end();
    const code = await new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.on("exit", (c) => r(c))));
    model.server.close();
    return code;
  };
  return { agent, sessionId, updates, stop };
}

const chunks = (updates) => updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text);

test("pi behind the bridge: a prompt streams agent_message_chunks and ends end_turn", { skip: !enabled }, async () => {
  const { agent, sessionId, updates, stop } = await start([{ text: "desserts from pi" }]);
  const result = await agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "stressed" }] });
  assert.equal(result.stopReason, "end_turn");
  assert.ok(chunks(updates).length > 1, "streamed in several chunks");
  assert.equal(chunks(updates).join(""), "desserts from pi");
  assert.equal(await stop(), 0);
});

test("pi behind the bridge: its bash tool call is a tool_call, then a completed tool_call_update with the output", { skip: !enabled }, async () => {
  const { agent, sessionId, updates, stop } = await start([{ toolCall: { id: "b1", name: "bash", arguments: { command: "echo sdk-saw-this" } } }, { text: "done" }]);
  const result = await agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "run it" }] });
  assert.equal(result.stopReason, "end_turn");
  const call = updates.find((u) => u.sessionUpdate === "tool_call");
  assert.ok(call, JSON.stringify(updates));
  assert.equal(call.toolCallId, "b1");
  assert.equal(call.kind, "execute");
  const done = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed");
  assert.ok(done, JSON.stringify(updates));
  assert.match(done.content[0].content.text, /sdk-saw-this/);
  assert.ok(updates.indexOf(call) < updates.indexOf(done));
  assert.equal(await stop(), 0);
});

test("pi behind the bridge: session/cancel during a slow reply ends the prompt cancelled within 5 s", { skip: !enabled }, async () => {
  const { agent, sessionId, updates, stop } = await start([{ text: "a slow reply that streams for a long long time", delayMs: 300 }]);
  const prompt = agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "hi" }] });
  while (chunks(updates).length === 0) await new Promise((r) => setTimeout(r, 20));
  const asked = Date.now();
  await agent.notify(methods.agent.session.cancel, { sessionId });
  const result = await prompt;
  assert.equal(result.stopReason, "cancelled");
  assert.ok(Date.now() - asked < 5000, `cancelled after ${Date.now() - asked} ms`);
  assert.equal(await stop(), 0);
});
