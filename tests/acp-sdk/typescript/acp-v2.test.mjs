// Drives `agentwire --mode acp` (AGENTWIRE_BIN) as ACP v2 with the official TypeScript SDK's v2
// client (@agentclientprotocol/sdk/experimental/v2, SDK 2.4.0): the connection negotiates
// protocol version 2; prompts are acknowledged with their user message's id and report their
// turn through `state_update`; permission, cancel, close and resume with `replayFrom`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk/experimental/v2";

const BIN = process.env.AGENTWIRE_BIN;
if (!BIN) throw new Error("set AGENTWIRE_BIN to the agentwire binary");

const created = [];
process.on("exit", () => created.forEach((d) => rmSync(d, { recursive: true, force: true })));
const made = (dir) => (created.push(dir), dir);

function start(script, { dir, config, extra = [] } = {}) {
  dir ??= made(mkdtempSync(join(tmpdir(), "acp-v2-cwd-")));
  config ??= made(mkdtempSync(join(tmpdir(), "acp-v2-cfg-")));
  const scriptPath = join(config, `script-${Math.random().toString(36).slice(2)}.jsonl`);
  writeFileSync(scriptPath, script.map((l) => JSON.stringify(l) + "\n").join(""));
  const env = { ...process.env };
  for (const k of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AGENTWIRE_CONFIG_DIR"]) delete env[k];
  const child = spawn(BIN, ["--mode", "acp", "--cwd", dir, "--config-dir", config, "--model-script", scriptPath, ...extra], { stdio: ["pipe", "pipe", "inherit"], env });
  return { child, dir, config };
}

function connect(child, decide = () => ({ outcome: { outcome: "cancelled" } })) {
  const updates = [];
  const asks = [];
  const app = client({ name: "agentwire-ts-v2-test" })
    .onRequest(methods.client.session.requestPermission, async ({ params, signal }) => {
      asks.push(params);
      return decide(params, signal);
    })
    .onNotification(methods.client.session.update, ({ params }) => {
      updates.push(params);
    });
  const conn = app.connect(ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  return { agent: conn.agent, updates, asks };
}

const stop = (child) => {
  child.stdin.end();
  return new Promise((resolve) => child.on("exit", (code) => resolve(code)));
};

/** Resolves with the first of `list` that `pred` holds for, once there is one (the SDK hands
 * notifications to their handler on its own schedule, after an answer read later may resolve). */
async function until(list, pred) {
  for (;;) {
    const found = list.find(pred);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Resolves once `updates` holds an idle state update of `sessionId` after `from`. */
async function idle(updates, sessionId, from = 0) {
  for (;;) {
    const u = updates.slice(from).find((u) => u.sessionId === sessionId && u.update.sessionUpdate === "state_update" && u.update.state === "idle");
    if (u) return u.update;
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function newSession(agent, cwd) {
  const init = await agent.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, info: { name: "agentwire-ts-v2-test", version: "1" }, capabilities: {} });
  assert.equal(PROTOCOL_VERSION, 2);
  assert.equal(init.protocolVersion, 2);
  assert.equal(init.info.name, "agentwire");
  assert.ok(init.capabilities.session.delete, "session/delete is advertised");
  const { sessionId, availableCommands, configOptions } = await agent.request(methods.agent.session.new, { cwd, mcpServers: [] });
  assert.ok(sessionId);
  assert.ok(availableCommands.some((c) => c.name === "model"));
  assert.ok(configOptions.some((o) => o.configId === "model"));
  return sessionId;
}

const text = (t) => [{ type: "text", text: t }];

test("v2: a prompt is acknowledged with its message id; running, the reply as agent message chunks, then idle end_turn", async () => {
  const { child, dir } = start([{ thinking: "pondering", text: "Hello from the v2 client", chunkSize: 4 }]);
  const { agent, updates } = connect(child);
  const sessionId = await newSession(agent, dir);
  const { messageId } = await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("hi") });
  assert.ok(messageId);
  const end = await idle(updates, sessionId);
  assert.equal(end.stopReason, "end_turn");
  const kinds = updates.map((u) => u.update.sessionUpdate === "state_update" ? `state:${u.update.state}` : u.update.sessionUpdate);
  assert.equal(kinds[0], "state:running");
  const user = updates.find((u) => u.update.sessionUpdate === "user_message");
  assert.equal(user.update.messageId, messageId);
  assert.deepEqual(user.update.content, text("hi"));
  const chunks = updates.filter((u) => u.update.sessionUpdate === "agent_message_chunk");
  assert.ok(chunks.length > 1, "streamed in several chunks");
  assert.equal(chunks.map((u) => u.update.content.text).join(""), "Hello from the v2 client");
  assert.equal(new Set(chunks.map((u) => u.update.messageId)).size, 1, "one agent message");
  assert.notEqual(chunks[0].update.messageId, undefined);
  const thought = updates.filter((u) => u.update.sessionUpdate === "agent_thought_chunk").map((u) => u.update.content.text).join("");
  assert.equal(thought, "pondering");
  assert.equal(kinds.at(-1), "state:idle");
  assert.equal(await stop(child), 0);
});

test("v2: a write asks permission with a diff, requires_action while it waits, and runs once allowed", async () => {
  const script = [{ toolCalls: [{ id: "w1", name: "write", arguments: { path: "granted.txt", content: "yes\n" } }] }, { text: "written" }];
  const { child, dir } = start(script);
  const { agent, updates, asks } = connect(child, () => ({ outcome: { outcome: "selected", optionId: "allow_once" } }));
  const sessionId = await newSession(agent, dir);
  await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("write") });
  assert.equal((await idle(updates, sessionId)).stopReason, "end_turn");
  assert.equal(readFileSync(join(dir, "granted.txt"), "utf8"), "yes\n");
  assert.equal(asks.length, 1);
  const [ask] = asks;
  assert.equal(ask.subject.type, "tool_call");
  assert.equal(ask.subject.toolCall.toolCallId, "w1");
  const diff = ask.subject.toolCall.content.find((c) => c.type === "diff");
  assert.equal(diff.changes[0].path, join(dir, "granted.txt"));
  assert.match(diff.patch.text, /\+yes/);
  assert.deepEqual(ask.options.map((o) => o.optionId), ["allow_once", "allow_always", "reject_once", "reject_always"]);
  const states = updates.filter((u) => u.update.sessionUpdate === "state_update").map((u) => u.update.state);
  assert.deepEqual(states, ["running", "requires_action", "running", "idle"]);
  const done = updates.find((u) => u.update.toolCallId === "w1" && u.update.status === "completed");
  assert.ok(done, "the write completed");
  await stop(child);
});

test("v2: session/cancel and session/close withdraw a pending permission: the client's abort signal fires", { timeout: 30000 }, async () => {
  const write = (id) => ({ toolCalls: [{ id, name: "write", arguments: { path: `${id}.txt`, content: "x\n" } }] });
  const { child, dir } = start([write("w1"), write("w2")]);
  const aborted = [];
  // Nobody answers: the dialog stays open until the agent withdraws it with `$/cancel_request`.
  const { agent, updates, asks } = connect(child, (params, signal) => new Promise((resolve) => {
    signal.addEventListener("abort", () => {
      aborted.push(params.subject.toolCall.toolCallId);
      resolve({ outcome: { outcome: "cancelled" } });
    }, { once: true });
  }));
  const sessionId = await newSession(agent, dir);
  await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("write") });
  await until(asks, (a) => a.subject.toolCall.toolCallId === "w1");
  await agent.notify(methods.agent.session.cancel, { sessionId });
  assert.equal((await idle(updates, sessionId)).stopReason, "cancelled");
  await until(aborted, (id) => id === "w1");
  await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("write again") });
  await until(asks, (a) => a.subject.toolCall.toolCallId === "w2");
  await agent.request(methods.agent.session.close, { sessionId });
  await until(aborted, (id) => id === "w2");
  assert.deepEqual(aborted, ["w1", "w2"]);
  assert.ok(!existsSync(join(dir, "w1.txt")) && !existsSync(join(dir, "w2.txt")), "nothing was written");
  assert.equal(await stop(child), 0);
});

test("v2: session/cancel ends the turn idle cancelled; a later prompt runs", async () => {
  const { child, dir } = start([{ text: "a slow answer streamed two characters at a time, on and on and on", chunkSize: 2, delayMs: 40 }, { text: "again" }]);
  const { agent, updates } = connect(child);
  const sessionId = await newSession(agent, dir);
  await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("go") });
  while (!updates.some((u) => u.update.sessionUpdate === "agent_message_chunk")) await new Promise((r) => setTimeout(r, 10));
  await agent.notify(methods.agent.session.cancel, { sessionId });
  assert.equal((await idle(updates, sessionId)).stopReason, "cancelled");
  const from = updates.length;
  await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("again") });
  assert.equal((await idle(updates, sessionId, from)).stopReason, "end_turn");
  await stop(child);
});

test("v2: close cancels the run and answers after its idle update; closing an unknown session succeeds", async () => {
  const { child, dir } = start([{ text: "a slow answer streamed two characters at a time, on and on", chunkSize: 2, delayMs: 40 }]);
  const { agent, updates } = connect(child);
  const sessionId = await newSession(agent, dir);
  await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("go") });
  while (!updates.some((u) => u.update.sessionUpdate === "agent_message_chunk")) await new Promise((r) => setTimeout(r, 10));
  await agent.request(methods.agent.session.close, { sessionId });
  assert.equal((await idle(updates, sessionId)).stopReason, "cancelled");
  await agent.request(methods.agent.session.close, { sessionId: "never-was" });
  await agent.request(methods.agent.session.delete, { sessionId: "never-was" });
  await stop(child);
});

test("v2: session/resume with replayFrom start in a fresh process replays the history with its message ids, then continues", async () => {
  const first = start([{ text: "first answer" }]);
  const one = connect(first.child);
  const sessionId = await newSession(one.agent, first.dir);
  const { messageId } = await one.agent.request(methods.agent.session.prompt, { sessionId, prompt: text("remember this") });
  await idle(one.updates, sessionId);
  await stop(first.child);

  const second = start([{ text: "second answer" }], { dir: first.dir, config: first.config });
  const two = connect(second.child);
  await two.agent.request(methods.agent.initialize, { protocolVersion: 2, info: { name: "t", version: "1" }, capabilities: {} });
  const list = await two.agent.request(methods.agent.session.list, { cwd: first.dir });
  assert.ok(list.sessions.some((s) => s.sessionId === sessionId));
  await two.agent.request(methods.agent.session.resume, { sessionId, cwd: first.dir, mcpServers: [], replayFrom: { type: "start" } });
  await until(two.updates, (u) => u.update.sessionUpdate === "state_update");
  const replayed = two.updates.map((u) => u.update);
  const user = replayed.find((u) => u.sessionUpdate === "user_message");
  assert.equal(user.messageId, messageId, "the replayed user message keeps its id");
  assert.deepEqual(user.content, text("remember this"));
  assert.equal(replayed.find((u) => u.sessionUpdate === "agent_message").content[0].text, "first answer");
  assert.equal(replayed.at(-1).sessionUpdate, "state_update");
  const from = two.updates.length;
  const next = await two.agent.request(methods.agent.session.prompt, { sessionId, prompt: text("and now") });
  assert.notEqual(next.messageId, messageId);
  assert.equal((await idle(two.updates, sessionId, from)).stopReason, "end_turn");
  await stop(second.child);

  // Without replayFrom nothing of the history is sent.
  const third = start([], { dir: first.dir, config: first.config });
  const three = connect(third.child);
  await three.agent.request(methods.agent.initialize, { protocolVersion: 2, info: { name: "t", version: "1" }, capabilities: {} });
  await three.agent.request(methods.agent.session.resume, { sessionId, cwd: first.dir, mcpServers: [] });
  assert.equal(three.updates.filter((u) => ["user_message", "agent_message"].includes(u.update.sessionUpdate)).length, 0);
  await stop(third.child);
});

test("v2: a v1 initialize on another connection still gets v1", async () => {
  const { child } = start([]);
  const v1 = await import("@agentclientprotocol/sdk");
  const conn = v1.client({ name: "v1" }).connect(v1.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  const init = await conn.agent.request(v1.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  await stop(child);
});
