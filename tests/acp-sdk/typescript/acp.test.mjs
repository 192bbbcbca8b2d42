// Drives `agentwire --mode acp` (AGENTWIRE_BIN) with the official ACP TypeScript SDK
// (@agentclientprotocol/sdk 2.x: `client().onRequest(...).connect(ndJsonStream(...))`).
// The offline model's script (`--model-script`) makes the tool calls happen.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, existsSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, RequestError, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const BIN = process.env.AGENTWIRE_BIN;
if (!BIN) throw new Error("set AGENTWIRE_BIN to the agentwire binary");

/** The temp directories made here, removed when the tests end. */
const created = [];
process.on("exit", () => created.forEach((d) => rmSync(d, { recursive: true, force: true })));
function made(dir) {
  created.push(dir);
  return dir;
}

/** Starts agentwire in ACP mode with a model script; returns the process and its dirs. */
function start(script, { dir, config, extra = [] } = {}) {
  dir ??= made(mkdtempSync(join(tmpdir(), "acp-ts-cwd-")));
  config ??= made(mkdtempSync(join(tmpdir(), "acp-ts-cfg-")));
  const scriptPath = join(config, `script-${Math.random().toString(36).slice(2)}.jsonl`);
  writeFileSync(scriptPath, script.map((l) => JSON.stringify(l) + "\n").join(""));
  const env = { ...process.env };
  for (const k of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "AGENTWIRE_CONFIG_DIR"]) delete env[k];
  const child = spawn(BIN, ["--mode", "acp", "--cwd", dir, "--config-dir", config, "--model-script", scriptPath, ...extra], { stdio: ["pipe", "pipe", "inherit"], env });
  return { child, dir, config };
}

/** A client app recording updates and answering permission requests with `decide`. */
function connect(child, decide = () => ({ outcome: { outcome: "cancelled" } })) {
  const updates = [];
  const asks = [];
  const app = client({ name: "agentwire-ts-test" })
    .onRequest(methods.client.session.requestPermission, async ({ params }) => {
      asks.push(params);
      return decide(params);
    })
    .onNotification(methods.client.session.update, ({ params }) => {
      updates.push(params);
    });
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const conn = app.connect(stream);
  return { conn, agent: conn.agent, updates, asks };
}

const kinds = (updates) => updates.map((u) => u.update.sessionUpdate);
const stop = async (child) => {
  child.stdin.end();
  return new Promise((resolve) => child.on("exit", (code) => resolve(code)));
};

async function newSession(agent, cwd) {
  const init = await agent.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.deepEqual(init.authMethods.map((m) => m.id), ["provider-keys"]);
  assert.ok(init.agentCapabilities.sessionCapabilities.close && init.agentCapabilities.sessionCapabilities.delete);
  const { sessionId } = await agent.request(methods.agent.session.new, { cwd, mcpServers: [] });
  assert.ok(sessionId);
  return sessionId;
}

const text = (t) => [{ type: "text", text: t }];

test("initialize, new session, prompt with streaming", async () => {
  const { child, dir } = start([{ thinking: "pondering", text: "Hello from the SDK test", chunkSize: 4 }]);
  const { agent, updates } = connect(child);
  const sessionId = await newSession(agent, dir);
  const res = await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("hi") });
  assert.equal(res.stopReason, "end_turn");
  const chunks = updates.filter((u) => u.update.sessionUpdate === "agent_message_chunk");
  assert.ok(chunks.length > 1, "streamed in several chunks");
  assert.equal(chunks.map((u) => u.update.content.text).join(""), "Hello from the SDK test");
  assert.equal(updates.filter((u) => u.update.sessionUpdate === "agent_thought_chunk").map((u) => u.update.content.text).join(""), "pondering");
  assert.ok(kinds(updates).includes("available_commands_update"));
  assert.ok(updates.every((u) => u.sessionId === sessionId));
  assert.equal(await stop(child), 0);
});

test("a tool call with permission granted runs; one rejected does not", async () => {
  const script = [
    { toolCalls: [{ id: "ok1", name: "write", arguments: { path: "granted.txt", content: "yes\n" } }] },
    { text: "written" },
    { toolCalls: [{ id: "no1", name: "bash", arguments: { command: "touch rejected.txt" } }] },
    { text: "not run" },
  ];
  const { child, dir } = start(script);
  const { agent, updates, asks } = connect(child, (params) => ({
    outcome: { outcome: "selected", optionId: params.toolCall.toolCallId === "ok1" ? "allow_once" : "reject_once" },
  }));
  const sessionId = await newSession(agent, dir);
  assert.equal((await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("write") })).stopReason, "end_turn");
  assert.equal(readFileSync(join(dir, "granted.txt"), "utf8"), "yes\n");
  const done = updates.find((u) => u.update.toolCallId === "ok1" && u.update.status === "completed");
  assert.deepEqual(done.update.content[0], { type: "diff", path: join(dir, "granted.txt"), newText: "yes\n" });
  assert.equal((await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("touch") })).stopReason, "end_turn");
  assert.equal(existsSync(join(dir, "rejected.txt")), false);
  const failed = updates.find((u) => u.update.toolCallId === "no1" && u.update.status === "failed");
  assert.ok(failed, "the rejected call ends failed");
  assert.deepEqual(asks.map((a) => a.options.map((o) => o.kind)), [
    ["allow_once", "allow_always", "reject_once", "reject_always"],
    ["allow_once", "allow_always", "reject_once", "reject_always"],
  ]);
  const call = updates.find((u) => u.update.sessionUpdate === "tool_call" && u.update.toolCallId === "no1");
  assert.equal(call.update.kind, "execute");
  await stop(child);
});

test("cancel mid-stream resolves the prompt cancelled", async () => {
  const { child, dir } = start([{ text: "a slow answer streamed two characters at a time, on and on and on", chunkSize: 2, delayMs: 40 }, { text: "again" }]);
  let sessionId;
  let cancelled = false;
  const { agent, updates } = connect(child);
  sessionId = await newSession(agent, dir);
  const prompt = agent.request(methods.agent.session.prompt, { sessionId, prompt: text("go") });
  while (!updates.some((u) => u.update.sessionUpdate === "agent_message_chunk")) await new Promise((r) => setTimeout(r, 10));
  const t = Date.now();
  await agent.notify(methods.agent.session.cancel, { sessionId });
  cancelled = true;
  const res = await prompt;
  assert.ok(cancelled);
  assert.equal(res.stopReason, "cancelled");
  assert.ok(Date.now() - t < 2000);
  assert.equal((await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("again") })).stopReason, "end_turn");
  await stop(child);
});

test("session/load in a fresh process replays the history, then continues", async () => {
  const first = start([{ toolCalls: [{ id: "r1", name: "bash", arguments: { command: "echo from-history" } }] }, { text: "first answer" }], { extra: ["--approval", "never"] });
  const a = connect(first.child);
  const sessionId = await newSession(a.agent, first.dir);
  assert.equal((await a.agent.request(methods.agent.session.prompt, { sessionId, prompt: text("remember") })).stopReason, "end_turn");
  assert.equal(await stop(first.child), 0);

  const second = start([{ text: "second answer" }], { dir: first.dir, config: first.config });
  const b = connect(second.child);
  await b.agent.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
  const listed = await b.agent.request(methods.agent.session.list, { cwd: first.dir });
  assert.equal(listed.sessions[0].sessionId, sessionId);
  await b.agent.request(methods.agent.session.load, { sessionId, cwd: first.dir, mcpServers: [] });
  // Everything, the commands first, was sent before the answer.
  assert.deepEqual(kinds(b.updates), ["available_commands_update", "user_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk"]);
  assert.equal(b.updates[1].update.content.text, "remember");
  assert.match(b.updates.find((u) => u.update.sessionUpdate === "tool_call_update").update.content[0].content.text, /from-history/);
  assert.equal((await b.agent.request(methods.agent.session.prompt, { sessionId, prompt: text("more") })).stopReason, "end_turn");
  await stop(second.child);
});

test("errors reach the SDK as JSON-RPC errors and the agent survives", async () => {
  const { child, dir } = start([{ text: "still here" }]);
  const { agent } = connect(child);
  await agent.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
  await assert.rejects(agent.request("session/teleport", {}), (e) => e instanceof RequestError && e.code === -32601);
  await assert.rejects(agent.request(methods.agent.session.prompt, { sessionId: "missing", prompt: text("x") }), (e) => e.code === -32002);
  await assert.rejects(agent.request("session/new", { mcpServers: [] }), (e) => e.code === -32602 && e.data.path === "/cwd");
  await agent.notify("$/unknown_notification", {});
  const { sessionId } = await agent.request(methods.agent.session.new, { cwd: dir, mcpServers: [] });
  assert.equal((await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("ok?") })).stopReason, "end_turn");
  assert.equal(await stop(child), 0);
});

test("an editor offering fs and terminal: read/write/edit go through its buffers, bash through its terminal", async () => {
  const script = [
    { toolCalls: [{ id: "r1", name: "read", arguments: { path: "notes.txt" } }] },
    { toolCalls: [{ id: "w1", name: "write", arguments: { path: "out.txt", content: "from the model\n" } }] },
    { toolCalls: [{ id: "e1", name: "edit", arguments: { path: "notes.txt", oldText: "unsaved", newText: "edited" } }] },
    { toolCalls: [{ id: "b1", name: "bash", arguments: { command: "echo from-the-terminal; exit 3" } }] },
    { text: "done" },
  ];
  const { child, dir } = start(script, { extra: ["--approval", "never"] });
  writeFileSync(join(dir, "notes.txt"), "saved text on disk\n");
  // The editor's buffers: notes.txt has unsaved changes.
  const buffers = new Map([[join(dir, "notes.txt"), "unsaved text in the buffer\n"]]);
  const calls = [];
  const terminals = new Map();
  const updates = [];
  const app = client({ name: "agentwire-ts-editor" })
    .onNotification(methods.client.session.update, ({ params }) => updates.push(params))
    .onRequest(methods.client.fs.readTextFile, async ({ params }) => {
      calls.push(["read", params.path]);
      return { content: buffers.get(params.path) ?? readFileSync(params.path, "utf8") };
    })
    .onRequest(methods.client.fs.writeTextFile, async ({ params }) => {
      calls.push(["write", params.path]);
      buffers.set(params.path, params.content);
      return {};
    })
    .onRequest(methods.client.terminal.create, async ({ params }) => {
      calls.push(["terminal/create", params.command, params.cwd]);
      const id = `t${terminals.size + 1}`;
      const proc = spawn(params.command, params.args ?? [], { cwd: params.cwd });
      const t = { output: "", exit: new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ exitCode: code, signal }))) };
      proc.stdout.on("data", (d) => (t.output += d));
      terminals.set(id, t);
      return { terminalId: id };
    })
    .onRequest(methods.client.terminal.waitForExit, async ({ params }) => terminals.get(params.terminalId).exit)
    .onRequest(methods.client.terminal.output, async ({ params }) => {
      const t = terminals.get(params.terminalId);
      return { output: t.output, truncated: false, exitStatus: await t.exit };
    })
    .onRequest(methods.client.terminal.release, async ({ params }) => {
      calls.push(["terminal/release", params.terminalId]);
      terminals.delete(params.terminalId);
      return {};
    });
  const { agent } = app.connect(ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  await agent.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
  });
  const { sessionId } = await agent.request(methods.agent.session.new, { cwd: dir, mcpServers: [] });
  assert.equal((await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("work") })).stopReason, "end_turn");
  const result = (id) => updates.find((u) => u.update.toolCallId === id && ["completed", "failed"].includes(u.update.status)).update;
  // read saw the unsaved buffer, not the disk.
  assert.match(result("r1").content[0].content.text, /unsaved text in the buffer/);
  // write and edit went to the editor: its buffers changed, the disk did not.
  assert.equal(buffers.get(join(dir, "out.txt")), "from the model\n");
  assert.equal(existsSync(join(dir, "out.txt")), false);
  assert.equal(buffers.get(join(dir, "notes.txt")), "edited text in the buffer\n");
  assert.equal(readFileSync(join(dir, "notes.txt"), "utf8"), "saved text on disk\n");
  // bash ran in the editor's terminal, which was released; its exit code reached the model.
  const bash = result("b1");
  assert.equal(bash.status, "failed");
  assert.match(bash.content[0].content.text, /from-the-terminal/);
  assert.match(bash.content[0].content.text, /exited with code 3/);
  assert.deepEqual(calls, [
    ["read", join(dir, "notes.txt")],
    ["write", join(dir, "out.txt")],
    ["read", join(dir, "notes.txt")],
    ["write", join(dir, "notes.txt")],
    ["terminal/create", "bash", dir],
    ["terminal/release", "t1"],
  ]);
  assert.equal(await stop(child), 0);
});

test("set_config_option switches the mode and answers every option; close cancels the prompt; delete removes the session", async () => {
  const { child, dir } = start([{ text: "a slow answer streamed two characters at a time, on and on and on", chunkSize: 2, delayMs: 40 }, { text: "kept" }]);
  const { agent, updates } = connect(child);
  await agent.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
  const created = await agent.request(methods.agent.session.new, { cwd: dir, mcpServers: [] });
  const model = created.configOptions.find((o) => o.id === "model");
  assert.equal(model.category, "model");
  assert.ok(model.options.some((o) => o.value === model.currentValue));
  const { sessionId } = created;
  const set = await agent.request(methods.agent.session.setConfigOption, { sessionId, configId: "mode", value: "auto" });
  assert.equal(set.configOptions.find((o) => o.id === "mode").currentValue, "auto");
  assert.ok(updates.some((u) => u.update.sessionUpdate === "current_mode_update" && u.update.currentModeId === "auto"));
  await assert.rejects(agent.request(methods.agent.session.setConfigOption, { sessionId, configId: "mode", value: "yolo" }), (e) => e.code === -32602 && e.data.path === "/value");

  // Close during a streaming prompt: it resolves cancelled; the session is gone.
  const prompt = agent.request(methods.agent.session.prompt, { sessionId, prompt: text("go") });
  while (!updates.some((u) => u.update.sessionUpdate === "agent_message_chunk")) await new Promise((r) => setTimeout(r, 10));
  const t = Date.now();
  await agent.request(methods.agent.session.close, { sessionId });
  assert.equal((await prompt).stopReason, "cancelled");
  assert.ok(Date.now() - t < 3000);
  await assert.rejects(agent.request(methods.agent.session.prompt, { sessionId, prompt: text("x") }), (e) => e.code === -32002);

  // Delete: another session leaves the list and cannot be loaded.
  const other = (await agent.request(methods.agent.session.new, { cwd: dir, mcpServers: [] })).sessionId;
  assert.equal((await agent.request(methods.agent.session.prompt, { sessionId: other, prompt: text("hello") })).stopReason, "end_turn");
  await agent.request(methods.agent.session.delete, { sessionId: other });
  const listed = await agent.request(methods.agent.session.list, { cwd: dir });
  assert.ok(!listed.sessions.some((s) => s.sessionId === other));
  await assert.rejects(agent.request(methods.agent.session.load, { sessionId: other, cwd: dir, mcpServers: [] }), (e) => e.code === -32002);
  assert.equal(await stop(child), 0);
});

test("an MCP server from session/new: its read-only tool runs unasked, another asks", async () => {
  // The reference server tests/mcp.rs uses (tests/mcp-server, installed by scripts/test).
  const everything = new URL("../../mcp-server/node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url).pathname;
  assert.ok(existsSync(everything), `${everything} is missing: run npm ci in tests/mcp-server`);
  const script = [
    { toolCalls: [{ id: "e1", name: "mcp__everything__echo", arguments: { message: "from the SDK" } }] },
    { text: "echoed" },
    { toolCalls: [{ id: "t1", name: "mcp__everything__toggle-simulated-logging", arguments: {} }] },
    { text: "refused" },
  ];
  const { child, dir } = start(script);
  const { agent, updates, asks } = connect(child, () => ({ outcome: { outcome: "selected", optionId: "reject_once" } }));
  const init = await agent.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
  assert.deepEqual(init.agentCapabilities.mcpCapabilities, { http: true, sse: false });
  const mcpServers = [{ name: "everything", command: process.execPath, args: [everything, "stdio"], env: [] }];
  const { sessionId } = await agent.request(methods.agent.session.new, { cwd: dir, mcpServers });
  const result = (id) => updates.find((u) => u.update.toolCallId === id && ["completed", "failed"].includes(u.update.status)).update;
  assert.equal((await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("echo") })).stopReason, "end_turn");
  assert.equal(result("e1").status, "completed");
  assert.match(result("e1").content[0].content.text, /Echo: from the SDK/);
  assert.equal(asks.length, 0, "a readOnlyHint tool does not ask");
  assert.equal((await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("toggle") })).stopReason, "end_turn");
  assert.equal(asks.length, 1, "a tool that is not read-only asks");
  assert.equal(result("t1").status, "failed");
  // An sse server is refused, naming it.
  await assert.rejects(
    agent.request(methods.agent.session.new, { cwd: dir, mcpServers: [{ type: "sse", name: "legacy", url: "http://127.0.0.1:1/sse", headers: [] }] }),
    (e) => e.code === -32602 && /"legacy"/.test(e.message),
  );
  assert.equal(await stop(child), 0);
});
