// Drives `agentwire --mode acp` (AGENTWIRE_BIN) as ACP v2 with the official TypeScript SDK's v2
// client from its unstable entry point (@agentclientprotocol/sdk/experimental/v2/unstable, SDK
// 2.4.0), which types the unstable surface agentwire implements: the `fork` and `title` session
// capabilities, `session/fork`, `session/set_title`, and `usage` on `idle`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk/experimental/v2/unstable";

const BIN = process.env.AGENTWIRE_BIN;
if (!BIN) throw new Error("set AGENTWIRE_BIN to the agentwire binary");

const created = [];
process.on("exit", () => created.forEach((d) => rmSync(d, { recursive: true, force: true })));
const made = (dir) => (created.push(dir), dir);

function start(script, { dir, config } = {}) {
  dir ??= made(mkdtempSync(join(tmpdir(), "acp-v2u-cwd-")));
  config ??= made(mkdtempSync(join(tmpdir(), "acp-v2u-cfg-")));
  const scriptPath = join(config, `script-${Math.random().toString(36).slice(2)}.jsonl`);
  writeFileSync(scriptPath, script.map((l) => JSON.stringify(l) + "\n").join(""));
  const env = { ...process.env };
  for (const k of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AGENTWIRE_CONFIG_DIR"]) delete env[k];
  const child = spawn(BIN, ["--mode", "acp", "--cwd", dir, "--config-dir", config, "--model-script", scriptPath], { stdio: ["pipe", "pipe", "inherit"], env });
  const updates = [];
  const app = client({ name: "agentwire-ts-v2-unstable-test" }).onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params);
  });
  const conn = app.connect(ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  return { child, dir, config, agent: conn.agent, updates };
}

const stop = (child) => {
  child.stdin.end();
  return new Promise((resolve) => child.on("exit", (code) => resolve(code)));
};

async function idle(updates, sessionId, from = 0) {
  for (;;) {
    const u = updates.slice(from).find((u) => u.sessionId === sessionId && u.update.sessionUpdate === "state_update" && u.update.state === "idle");
    if (u) return u.update;
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function init(agent) {
  const answer = await agent.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, info: { name: "agentwire-ts-v2-unstable-test", version: "1" }, capabilities: {} });
  assert.deepEqual(answer.capabilities.session.fork, {});
  assert.deepEqual(answer.capabilities.session.title, {});
}

const text = (t) => [{ type: "text", text: t }];

/** The texts of `sessionId`'s user and agent messages in `updates` after `from`, once there are
 * `count` (the SDK hands notifications to their handler on its own schedule, after an answer
 * read later may resolve). */
async function said(updates, sessionId, count, from = 0) {
  for (;;) {
    const texts = updates.slice(from).filter((u) => u.sessionId === sessionId && ["user_message", "agent_message"].includes(u.update.sessionUpdate)).map((u) => u.update.content.map((b) => b.text).join(""));
    if (texts.length >= count) return texts;
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function turn(s, sessionId, words) {
  const from = s.updates.length;
  await s.agent.request(methods.agent.session.prompt, { sessionId, prompt: text(words) });
  return idle(s.updates, sessionId, from);
}

test("v2 unstable: a fork keeps the history and goes its own way; a title is stored; idle reports the run's tokens", async () => {
  const one = start([{ text: "one", usage: { input: 12, output: 4 } }, { text: "on the fork" }]);
  await init(one.agent);
  const { sessionId } = await one.agent.request(methods.agent.session.new, { cwd: one.dir, mcpServers: [] });
  const end = await turn(one, sessionId, "first");
  assert.equal(end.stopReason, "end_turn");
  assert.deepEqual([end.usage.inputTokens, end.usage.outputTokens, end.usage.totalTokens], [12, 4, 16]);
  const fork = await one.agent.request(methods.agent.session.fork, { sessionId, cwd: one.dir, mcpServers: [] });
  assert.notEqual(fork.sessionId, sessionId);
  await turn(one, fork.sessionId, "second");
  const { title } = await one.agent.request(methods.agent.session.setTitle, { sessionId: fork.sessionId, title: " The fork " });
  assert.equal(title, "The fork");
  assert.equal(await stop(one.child), 0);

  const two = start([], { dir: one.dir, config: one.config });
  await init(two.agent);
  const { sessions } = await two.agent.request(methods.agent.session.list, { cwd: one.dir });
  assert.equal(sessions.find((s) => s.sessionId === fork.sessionId)?.title, "The fork");
  await two.agent.request(methods.agent.session.resume, { sessionId: fork.sessionId, cwd: one.dir, mcpServers: [], replayFrom: { type: "start" } });
  assert.deepEqual(await said(two.updates, fork.sessionId, 4), ["first", "one", "second", "on the fork"]);
  await two.agent.request(methods.agent.session.resume, { sessionId, cwd: one.dir, mcpServers: [], replayFrom: { type: "start" } });
  // The source's replay ends with its resume's state snapshot: all of it is in by then.
  await idle(two.updates, sessionId);
  assert.deepEqual(await said(two.updates, sessionId, 2), ["first", "one"]);
  assert.equal(await stop(two.child), 0);
});
