// acpx 0.19.1 (a real headless ACP client, pinned here) drives `agentwire --mode acp`
// (AGENTWIRE_BIN) over ACP v1, as a user would: a one-shot write with permission, a persistent
// session with `set-mode`, `set thought_level`, `--model`, session listing, and MCP servers from
// `--mcp-config` (the pinned @modelcontextprotocol/server-everything of tests/mcp-server).
// Run with the Node 22 acpx needs: `node_modules/.bin/node --test acpx-agentwire.test.mjs`.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const BIN = process.env.AGENTWIRE_BIN;
if (!BIN) throw new Error("set AGENTWIRE_BIN to the agentwire binary");
const NODE = join(here, "node_modules/.bin/node");
const ACPX = join(here, "node_modules/acpx/dist/cli.js");
const EVERYTHING = join(here, "../mcp-server/node_modules/@modelcontextprotocol/server-everything/dist/index.js");

const made = [];
after(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tmp = (name) => {
  const d = mkdtempSync(join(tmpdir(), `acpx-${name}-`));
  made.push(d);
  return d;
};

/** A workspace: acpx's home (its session records), the agent's cwd and config, a model script. */
function workspace(script) {
  const home = tmp("home");
  const cwd = tmp("cwd");
  const config = tmp("cfg");
  const scriptPath = join(config, "script.jsonl");
  writeFileSync(scriptPath, script.map((l) => JSON.stringify(l) + "\n").join(""));
  const agent = `${BIN} --mode acp --config-dir ${config} --model-script ${scriptPath}`;
  const env = { ...process.env, HOME: home };
  for (const k of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AGENTWIRE_CONFIG_DIR"]) delete env[k];
  /** acpx with `args`, the agent given by `--agent`; resolves with its stdout (acpx exits
   * non-zero when a permission was denied: then `denied` must be set). */
  const acpx = async (...args) => {
    const denied = args[0] === "--deny-all";
    try {
      const { stdout } = await run(NODE, [ACPX, "--agent", agent, "--cwd", cwd, "--ttl", "1", ...args], { cwd, env, timeout: 60_000 });
      assert.ok(!denied, "acpx exits non-zero when it denied a permission");
      return stdout;
    } catch (e) {
      if (denied && e.code === 5) return e.stdout;
      throw new Error(`acpx ${args.join(" ")} failed (${e.code}): ${e.stderr}\n${e.stdout}`);
    }
  };
  return { cwd, acpx };
}

/** The JSON-RPC frames of acpx's `--format json` output. */
const frames = (out) => out.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));

test("acpx exec: a write asks permission with a diff and runs once approved", async () => {
  const { cwd, acpx } = workspace([{ toolCalls: [{ id: "w1", name: "write", arguments: { path: "hello.txt", content: "hi from acpx\n" } }] }, { text: "written" }]);
  const out = frames(await acpx("--approve-all", "--format", "json", "exec", "write the file"));
  assert.equal(readFileSync(join(cwd, "hello.txt"), "utf8"), "hi from acpx\n");
  const ask = out.find((f) => f.method === "session/request_permission");
  assert.deepEqual(ask.params.toolCall.content, [{ type: "diff", path: join(cwd, "hello.txt"), newText: "hi from acpx\n" }]);
  assert.ok(out.some((f) => f.params?.update?.toolCallId === "w1" && f.params.update.status === "completed"));
  assert.equal(out.find((f) => f.result?.stopReason).result.stopReason, "end_turn");
});

test("acpx exec --deny-all: the write is rejected and the file is not written", async () => {
  const { cwd, acpx } = workspace([{ toolCalls: [{ id: "w1", name: "write", arguments: { path: "no.txt", content: "no\n" } }] }, { text: "not written" }]);
  const out = frames(await acpx("--deny-all", "--format", "json", "exec", "write the file"));
  assert.equal(existsSync(join(cwd, "no.txt")), false);
  assert.ok(out.some((f) => f.params?.update?.toolCallId === "w1" && f.params.update.status === "failed"));
});

test("acpx sessions: new, set-mode, set thought_level, --model, prompt, list", async () => {
  const { acpx } = workspace([{ text: "first answer" }, { text: "second answer" }]);
  const session = (await acpx("sessions", "new")).trim().split("\n").at(-1);
  assert.match(session, /^[0-9a-f-]{36}$/);
  assert.match(await acpx("set-mode", "auto"), /mode set: auto/);
  assert.match(await acpx("set", "thought_level", "high"), /thought_level=high/);
  const prompted = frames(await acpx("--model", "agentwire/offline", "--format", "json", "prompt", "hello"));
  const chunks = prompted.filter((f) => f.params?.update?.sessionUpdate === "agent_message_chunk").map((f) => f.params.update.content.text).join("");
  assert.equal(chunks, "first answer");
  assert.equal(prompted.find((f) => f.params?.sessionId)?.params.sessionId, session, "the same session");
  const status = await acpx("status");
  assert.match(status, /model: agentwire\/offline/);
  const listed = await acpx("sessions", "list");
  assert.ok(listed.includes(session), listed);
});

test("acpx --mcp-config: the MCP server's tool runs through agentwire", async () => {
  const { cwd, acpx } = workspace([{ toolCalls: [{ id: "e1", name: "mcp__everything__echo", arguments: { message: "through acpx" } }] }, { text: "echoed" }]);
  const config = join(cwd, "mcp.json");
  // acpx reads ACP's own `mcpServers` shape.
  writeFileSync(config, JSON.stringify({ mcpServers: [{ name: "everything", command: process.execPath, args: [EVERYTHING], env: [] }] }));
  const out = frames(await acpx("--mcp-config", config, "--approve-all", "--format", "json", "exec", "echo"));
  const newSession = out.find((f) => f.method === "session/new");
  assert.equal(newSession.params.mcpServers[0].name, "everything");
  const done = out.find((f) => f.params?.update?.toolCallId === "e1" && f.params.update.status === "completed");
  assert.ok(done, "the MCP call completed");
  assert.match(JSON.stringify(done.params.update.content), /through acpx/);
});
