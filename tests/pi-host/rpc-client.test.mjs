// pi's own RpcClient (@mariozechner/pi-coding-agent, pinned in package.json) driving
// `agentwire --mode rpc` through every public method it has, each checked against what pi does.
// RpcClient starts `node <cliPath> --mode rpc …`; cliPath is agentwire-shim.mjs, which runs
// $AGENTWIRE_BIN. The offline model (no key, no network) plays a --model-script per test.
// Run by scripts/test:  AGENTWIRE_BIN=target/debug/agentwire npm test  (in tests/pi-host)
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";

import { rpcClient, sandbox } from "./sandbox.mjs";

/**
 * Starts RpcClient on agentwire in a fresh directory (HOME, config, sessions, cwd), the offline
 * model playing `script` (schema/model-script.schema.json).
 */
async function start(script = [], { args = [], models } = {}) {
  const { dir, scriptPath } = sandbox(script);
  if (models) {
    mkdirSync(join(dir, "config"), { recursive: true });
    writeFileSync(join(dir, "config", "models.json"), JSON.stringify(models));
  }
  const client = rpcClient("agentwire-shim.mjs", dir, ["--model-script", scriptPath, "--session-dir", join(dir, "sessions"), "--cwd", dir, ...args]);
  // agentwire's first line is `ready` (omp's handshake, docs/rpc-mode.md); pi sends none.
  // RpcClient hands it to onEvent listeners like any event it does not know, so a prompt's
  // events would start with it if it came late; wait for it, as a host that knows it would.
  const ready = nextEvent(client, "ready");
  await client.start();
  const frame = await ready;
  assert.equal(frame.dialect, "rpc");
  return { client, dir };
}

/** The streamed text of a run's events. */
function streamedText(events) {
  return events
    .filter((e) => e.type === "message_update" && e.assistantMessageEvent.type === "text_delta")
    .map((e) => e.assistantMessageEvent.delta)
    .join("");
}

/** The text of a user or assistant message. */
function textOf(message) {
  if (typeof message.content === "string") return message.content;
  return message.content
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("");
}

/** `[role, text]` for each user and assistant message. */
async function transcript(client) {
  return (await client.getMessages()).filter((m) => m.role === "user" || m.role === "assistant").map((m) => [m.role, textOf(m)]);
}

/** Resolves with the first event of `type` (or matching `predicate`). */
function nextEvent(client, type, predicate = () => true) {
  return new Promise((resolve) => {
    const off = client.onEvent((event) => {
      if (event.type === type && predicate(event)) {
        off();
        resolve(event);
      }
    });
  });
}

/** A reply streamed slowly enough for commands to arrive while it streams (~35 chunks × 30 ms, ~1 s). */
const slow = (text) => ({ text, chunkSize: 1, delayMs: 30 });

describe("prompt with events", () => {
  it("promptAndWait streams the run from agent_start to agent_end; getLastAssistantText and getMessages see it", async () => {
    const { client } = await start([{ text: "Hello from the scripted model." }]);
    const events = await client.promptAndWait("hi");
    const types = events.map((e) => e.type);
    assert.equal(types[0], "agent_start");
    assert.equal(types.at(-1), "agent_end");
    for (const type of ["turn_start", "message_start", "message_update", "message_end", "turn_end"]) assert.ok(types.includes(type), `${type} missing: ${types}`);
    assert.equal(streamedText(events), "Hello from the scripted model.");
    assert.equal(await client.getLastAssistantText(), "Hello from the scripted model.");
    const messages = await client.getMessages();
    assert.deepEqual(messages.map((m) => m.role), ["user", "assistant"]);
    assert.equal(textOf(messages[0]), "hi");
    assert.equal(messages[1].stopReason, "stop");
    assert.equal(messages[1].provider, "agentwire");
  });

  it("prompt resolves once accepted; onEvent, collectEvents and waitForIdle follow the run", async () => {
    const { client } = await start([{ text: "one" }, { text: "two" }, { text: "three" }]);
    const seen = [];
    const off = client.onEvent((event) => seen.push(event.type));
    const collected = client.collectEvents(10_000);
    await client.prompt("first");
    const events = await collected;
    assert.equal(streamedText(events), "one");
    const idle = client.waitForIdle(10_000);
    await client.prompt("again");
    await idle;
    assert.equal(await client.getLastAssistantText(), "two");
    off();
    const before = seen.length;
    await client.promptAndWait("unsubscribed");
    assert.equal(seen.length, before, "the listener was removed");
    assert.equal(seen.filter((t) => t === "agent_end").length, 2);
  });

  it("prompt with an image for a text-only model ends its run with the reason (agentwire's documented difference)", async () => {
    // pi 0.73.1 accepts images for every model and, for a model whose `input` lacks "image",
    // silently sends a text placeholder instead (pi-ai downgradeUnsupportedImages). agentwire
    // refuses to drop content silently (docs/rpc-mode.md): the prompt is accepted and its run
    // ends at once with an error prompt_result naming the missing capability, so RpcClient,
    // which never looks at `success`, still sees agent_end.
    const { client } = await start([{ text: "never asked" }]);
    assert.deepEqual((await client.getState()).model.input, ["text"]);
    const pixel = { type: "image", data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", mimeType: "image/png" };
    // prompt_result (an agentwire addition) follows agent_end, where collectEvents stops.
    const settled = new Promise((resolve) => {
      const off = client.onEvent((event) => {
        if (event.type === "prompt_result") {
          off();
          resolve(event);
        }
      });
    });
    const collected = client.collectEvents(5_000);
    await client.prompt("look at this", [pixel]);
    const events = await collected;
    assert.deepEqual(events.map((e) => e.type).filter((t) => t !== "ready"), ["agent_start", "agent_end"]);
    const result = await settled;
    assert.equal(result?.status, "error");
    assert.match(result?.error?.message ?? "", /does not support required capability: image_in/);
    assert.deepEqual(await client.getMessages(), [], "nothing was sent on or kept");
  });
});

describe("steer and follow-up", () => {
  it("while streaming, a steer is delivered at the next turn boundary and a follow-up when the agent would stop, in one run", async () => {
    const { client } = await start([slow("a long first answer, streamed slowly"), { text: "answer to the steer" }, { text: "answer to the follow-up" }]);
    const collected = client.collectEvents(20_000);
    const streaming = nextEvent(client, "message_update");
    await client.prompt("first");
    await streaming;
    await client.steer("change of plan");
    await client.followUp("and then this");
    const state = await client.getState();
    assert.equal(state.isStreaming, true);
    assert.equal(state.pendingMessageCount, 2);
    const events = await collected;
    assert.equal(events.filter((e) => e.type === "agent_end").length, 1, "one run");
    assert.deepEqual(await transcript(client), [
      ["user", "first"],
      ["assistant", "a long first answer, streamed slowly"],
      ["user", "change of plan"],
      ["assistant", "answer to the steer"],
      ["user", "and then this"],
      ["assistant", "answer to the follow-up"],
    ]);
    assert.equal((await client.getState()).pendingMessageCount, 0);
  });

  it("setSteeringMode('all') delivers every queued steer in one turn; one-at-a-time one per turn", async () => {
    const { client } = await start([slow("first answer, streamed slowly....."), { text: "both steers seen" }, slow("second answer, streamed slowly...."), { text: "steer one" }, { text: "steer two" }]);
    await client.setSteeringMode("all");
    assert.equal((await client.getState()).steeringMode, "all");
    let run = client.collectEvents(20_000);
    let streaming = nextEvent(client, "message_update");
    await client.prompt("p1");
    await streaming;
    await client.steer("s1");
    await client.steer("s2");
    await run;
    assert.deepEqual((await transcript(client)).slice(2), [
      ["user", "s1"],
      ["user", "s2"],
      ["assistant", "both steers seen"],
    ]);

    await client.setSteeringMode("one-at-a-time");
    assert.equal((await client.getState()).steeringMode, "one-at-a-time");
    run = client.collectEvents(20_000);
    streaming = nextEvent(client, "message_update");
    await client.prompt("p2");
    await streaming;
    await client.steer("s3");
    await client.steer("s4");
    await run;
    assert.deepEqual((await transcript(client)).slice(5), [
      ["user", "p2"],
      ["assistant", "second answer, streamed slowly...."],
      ["user", "s3"],
      ["assistant", "steer one"],
      ["user", "s4"],
      ["assistant", "steer two"],
    ]);
  });

  it("setFollowUpMode('all') delivers every queued follow-up in one turn", async () => {
    const { client } = await start([slow("first answer, streamed slowly....."), { text: "both follow-ups seen" }]);
    await client.setFollowUpMode("all");
    assert.equal((await client.getState()).followUpMode, "all");
    const run = client.collectEvents(20_000);
    const streaming = nextEvent(client, "message_update");
    await client.prompt("p");
    await streaming;
    await client.followUp("f1");
    await client.followUp("f2");
    await run;
    assert.deepEqual((await transcript(client)).slice(2), [
      ["user", "f1"],
      ["user", "f2"],
      ["assistant", "both follow-ups seen"],
    ]);
  });

  it("an idle steer or followUp starts a run (agentwire's documented behaviour, not pi 0.73.1's)", async () => {
    // docs/rpc-mode.md (Queues): "Idle steer / follow_up start a run." pi 0.73.1 only queues them
    // (Agent.steer / followUp enqueue) until the next prompt; a pi host that steers while idle
    // gets a run here it would not get from pi. (Not yet in the table of differences.)
    const { client } = await start([{ text: "steered" }, { text: "followed" }]);
    let idle = client.waitForIdle(10_000);
    await client.steer("idle steer");
    await idle;
    idle = client.waitForIdle(10_000);
    await client.followUp("idle follow-up");
    await idle;
    assert.deepEqual(await transcript(client), [
      ["user", "idle steer"],
      ["assistant", "steered"],
      ["user", "idle follow-up"],
      ["assistant", "followed"],
    ]);
  });
});

describe("abort", () => {
  it("stops a streaming run: agent_end follows, the assistant message ends aborted, the queue is cleared (agentwire's documented behaviour)", async () => {
    const { client } = await start([{ text: "x".repeat(400), chunkSize: 1, delayMs: 20 }, { text: "after the abort" }]);
    const run = client.collectEvents(20_000);
    const streaming = nextEvent(client, "message_update");
    await client.prompt("go");
    await streaming;
    await client.followUp("queued, then dropped");
    // agentwire answers abort after the run's agent_end (docs/rpc-mode.md); pi 0.73.1 answers
    // once session.abort() returns. Either way RpcClient.abort() resolves with the run stopped.
    await client.abort();
    const events = await run;
    assert.equal(events.at(-1).type, "agent_end");
    const state = await client.getState();
    assert.equal(state.isStreaming, false);
    assert.equal(state.pendingMessageCount, 0);
    const messages = await client.getMessages();
    assert.equal(messages.at(-1).role, "assistant");
    assert.equal(messages.at(-1).stopReason, "aborted");
    assert.ok(textOf(messages.at(-1)).length < 400, "the reply was cut short");
    // docs/rpc-mode.md (Queues): "abort clears both queues". pi 0.73.1's abort (AgentSession.abort:
    // abortRetry, Agent.abort, waitForIdle) leaves them, so there the follow-up stays pending
    // (pendingMessageCount 1) for the next run. (Not yet in the table of differences.)
    assert.ok(!messages.some((m) => m.role === "user" && textOf(m) === "queued, then dropped"));
    // The agent is usable afterwards.
    await client.promptAndWait("next");
    assert.equal(await client.getLastAssistantText(), "after the abort");
  });

  it("an abort while idle succeeds and changes nothing", async () => {
    const { client } = await start();
    await client.abort();
    assert.equal((await client.getState()).messageCount, 0);
  });
});

describe("state", () => {
  it("getState reports pi's RpcSessionState fields", async () => {
    const { client, dir } = await start([{ text: "ok" }]);
    const state = await client.getState();
    assert.equal(state.model.provider, "agentwire");
    assert.equal(state.model.id, "offline");
    assert.equal(state.thinkingLevel, "off");
    assert.equal(state.isStreaming, false);
    assert.equal(state.isCompacting, false);
    assert.equal(state.steeringMode, "one-at-a-time");
    assert.equal(state.followUpMode, "one-at-a-time");
    assert.equal(state.autoCompactionEnabled, true);
    assert.equal(state.messageCount, 0);
    assert.equal(state.pendingMessageCount, 0);
    assert.match(state.sessionId, /\S/);
    // Documented difference: with no assistant text agentwire answers {"text": null}, pi {}
    // (so RpcClient gives null here, undefined against pi).
    assert.equal(await client.getLastAssistantText(), null);
    // Documented difference (docs/reliability.md): agentwire names the session file only once
    // it exists, so a host never reads a path with nothing behind it; pi names it up front.
    assert.equal(state.sessionFile, undefined);
    await client.promptAndWait("hi");
    const after = await client.getState();
    assert.ok(after.sessionFile.startsWith(join(dir, "sessions")), after.sessionFile);
    assert.equal(after.messageCount, 2);
    assert.equal(after.sessionId, state.sessionId);
    assert.ok(existsSync(after.sessionFile), "the session file is written once the assistant answered");
  });
});

describe("models", () => {
  const models = {
    providers: {
      // Never contacted: nothing is prompted while it is selected. Loopback only.
      local: { api: "openai-completions", baseUrl: "http://127.0.0.1:9/v1", models: [{ id: "local-model", contextWindow: 32768, maxTokens: 4096 }] },
    },
  };

  it("getAvailableModels lists the offline model with pi's ModelInfo fields", async () => {
    const { client } = await start();
    const available = await client.getAvailableModels();
    const offline = available.find((m) => m.provider === "agentwire" && m.id === "offline");
    assert.ok(offline, JSON.stringify(available));
    assert.equal(typeof offline.contextWindow, "number");
    assert.equal(offline.reasoning, true);
  });

  it("setModel switches and answers the model; an unknown model rejects", async () => {
    const { client } = await start([], { models });
    const model = await client.setModel("local", "local-model");
    assert.equal(model.provider, "local");
    assert.equal(model.id, "local-model");
    assert.equal((await client.getState()).model.id, "local-model");
    await client.setModel("agentwire", "offline");
    assert.equal((await client.getState()).model.id, "offline");
    await assert.rejects(client.setModel("nope", "missing"), /nope|missing|not found|unknown/i);
  });

  it("cycleModel moves to the next available model, and answers null when there is only one (as pi)", async () => {
    const single = await start();
    assert.equal(await single.client.cycleModel(), null);
    const { client } = await start([], { models });
    const ids = (await client.getAvailableModels()).map((m) => `${m.provider}/${m.id}`);
    assert.deepEqual(ids.sort(), ["agentwire/offline", "local/local-model"]);
    const first = await client.cycleModel();
    assert.equal(first.isScoped, false);
    assert.equal(typeof first.thinkingLevel, "string");
    const second = await client.cycleModel();
    assert.notEqual(`${first.model.provider}/${first.model.id}`, `${second.model.provider}/${second.model.id}`);
    assert.equal(`${second.model.provider}/${second.model.id}`, "agentwire/offline", "two cycles come back");
    assert.equal((await client.getState()).model.id, second.model.id);
  });
});

describe("thinking", () => {
  it("setThinkingLevel sets the level (thinking_level_changed), and the offline model then thinks", async () => {
    const { client } = await start();
    const changed = nextEvent(client, "thinking_level_changed");
    await client.setThinkingLevel("high");
    assert.equal((await changed).level, "high");
    assert.equal((await client.getState()).thinkingLevel, "high");
    await client.promptAndWait("think about it");
    const reply = (await client.getMessages()).at(-1);
    assert.ok(reply.content.some((b) => b.type === "thinking" && b.thinking.length > 0), JSON.stringify(reply.content));
  });

  it("cycleThinkingLevel walks pi's levels off → minimal → low → medium → high → off", async () => {
    const { client } = await start();
    const levels = [];
    for (let i = 0; i < 5; i++) levels.push((await client.cycleThinkingLevel()).level);
    assert.deepEqual(levels, ["minimal", "low", "medium", "high", "off"]);
    assert.equal((await client.getState()).thinkingLevel, "off");
  });
});

describe("compaction", () => {
  it("compact summarises the older messages (with custom instructions) and keeps the recent ones", async () => {
    const { client } = await start([{ text: "first answer ".repeat(40) }, { text: "second answer ".repeat(40) }, { text: "third answer" }], { args: ["--compaction-keep-tokens", "20"] });
    await client.promptAndWait("first question " + "padding ".repeat(50));
    await client.promptAndWait("second question " + "padding ".repeat(50));
    await client.promptAndWait("third question");
    const before = await client.getState();
    const result = await client.compact("Focus on the questions.");
    assert.match(result.summary, /\S/);
    assert.match(result.firstKeptEntryId, /\S/);
    assert.ok(result.tokensBefore > 0, JSON.stringify(result));
    const messages = await client.getMessages();
    assert.ok(messages.length < before.messageCount + 1, `${messages.length} messages after compacting ${before.messageCount}`);
    assert.equal(messages[0].role, "compactionSummary", JSON.stringify(messages[0]).slice(0, 200));
    assert.equal(messages[0].summary, result.summary);
    assert.equal(await client.getLastAssistantText(), "third answer");
  });

  it("compact on a conversation too small to compact rejects with a reason", async () => {
    const { client } = await start();
    await assert.rejects(client.compact(), /nothing to compact/i);
  });

  it("setAutoCompaction toggles autoCompactionEnabled", async () => {
    const { client } = await start();
    await client.setAutoCompaction(false);
    assert.equal((await client.getState()).autoCompactionEnabled, false);
    await client.setAutoCompaction(true);
    assert.equal((await client.getState()).autoCompactionEnabled, true);
  });
});

describe("retry", () => {
  const overloaded = { error: "503 overloaded", retryable: true };

  it("with auto-retry on (the default) a retryable error is retried (auto_retry_start / auto_retry_end)", async () => {
    const { client } = await start([overloaded, { text: "recovered" }], { args: ["--retry-base-delay-ms", "10"] });
    const events = await client.promptAndWait("try");
    const start_ = events.find((e) => e.type === "auto_retry_start");
    assert.ok(start_, events.map((e) => e.type).join(","));
    assert.equal(start_.attempt, 1);
    assert.match(start_.errorMessage, /overloaded/);
    assert.equal(events.find((e) => e.type === "auto_retry_end")?.success, true);
    assert.equal(await client.getLastAssistantText(), "recovered");
  });

  it("setAutoRetry(false) turns it off: the error ends the run", async () => {
    const { client } = await start([overloaded, { text: "never used" }], { args: ["--retry-base-delay-ms", "10"] });
    await client.setAutoRetry(false);
    const events = await client.promptAndWait("try");
    assert.ok(!events.some((e) => e.type === "auto_retry_start"));
    const last = (await client.getMessages()).at(-1);
    assert.equal(last.stopReason, "error");
    assert.match(last.errorMessage, /overloaded/);
  });

  it("abortRetry cancels the wait before the next attempt", async () => {
    const { client } = await start([overloaded, { text: "never used" }], { args: ["--retry-base-delay-ms", "60000"] });
    const run = client.collectEvents(20_000);
    const waiting = nextEvent(client, "auto_retry_start");
    await client.prompt("try");
    await waiting;
    const started = Date.now();
    await client.abortRetry();
    const events = await run;
    assert.ok(Date.now() - started < 10_000, "the 60 s wait was cut short");
    const end = events.find((e) => e.type === "auto_retry_end");
    assert.equal(end?.success, false);
    assert.notEqual(await client.getLastAssistantText(), "never used");
  });
});

describe("bash", () => {
  it("bash runs in the cwd and answers pi's BashResult; the run is recorded as a bashExecution message", async () => {
    const { client, dir } = await start();
    const result = await client.bash("pwd; echo out; echo err >&2; exit 3");
    assert.equal(result.exitCode, 3);
    assert.equal(result.cancelled, false);
    assert.equal(result.truncated, false);
    assert.match(result.output, new RegExp(`^${dir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\n`));
    assert.match(result.output, /out\n/);
    assert.match(result.output, /err\n/);
    const recorded = (await client.getMessages()).find((m) => m.role === "bashExecution");
    assert.ok(recorded, "no bashExecution message");
    assert.equal(recorded.command, "pwd; echo out; echo err >&2; exit 3");
    assert.equal(recorded.exitCode, 3);
  });

  it("abortBash cancels a running command: bash resolves cancelled", async () => {
    const { client } = await start();
    const started = Date.now();
    const running = client.bash("echo started; sleep 30");
    await new Promise((r) => setTimeout(r, 300));
    await client.abortBash();
    const result = await running;
    assert.equal(result.cancelled, true);
    assert.ok(Date.now() - started < 10_000);
    assert.equal(result.exitCode, undefined, "pi: undefined when killed");
  });
});

describe("sessions", () => {
  it("newSession starts an empty session (with parentSession recorded in its header); switchSession goes back", async () => {
    const { client } = await start([{ text: "in the first session" }, { text: "in the second session" }]);
    await client.promptAndWait("hello one");
    const first = await client.getState();
    assert.deepEqual(await client.newSession(), { cancelled: false });
    const second = await client.getState();
    assert.notEqual(second.sessionFile, first.sessionFile);
    assert.notEqual(second.sessionId, first.sessionId);
    assert.equal(second.messageCount, 0);
    assert.deepEqual(await client.newSession(first.sessionFile), { cancelled: false });
    await client.promptAndWait("hello two");
    const third = await client.getState();
    const header = JSON.parse(readFileSync(third.sessionFile, "utf8").split("\n")[0]);
    assert.equal(header.type, "session");
    assert.equal(header.parentSession, first.sessionFile);
    assert.deepEqual(await client.switchSession(first.sessionFile), { cancelled: false });
    const back = await client.getState();
    assert.equal(back.sessionFile, first.sessionFile);
    assert.equal(back.sessionId, first.sessionId);
    assert.deepEqual(await transcript(client), [
      ["user", "hello one"],
      ["assistant", "in the first session"],
    ]);
  });

  it("getForkMessages lists the user messages; fork(entryId) continues from before that message and answers its text", async () => {
    const { client } = await start([{ text: "a1" }, { text: "a2" }, { text: "a2 again" }]);
    await client.promptAndWait("q1");
    await client.promptAndWait("q2");
    const forkable = await client.getForkMessages();
    assert.deepEqual(
      forkable.map((m) => m.text),
      ["q1", "q2"],
    );
    assert.ok(forkable.every((m) => typeof m.entryId === "string" && m.entryId.length > 0));
    const forked = await client.fork(forkable[1].entryId);
    assert.deepEqual(forked, { text: "q2", cancelled: false });
    assert.deepEqual(await transcript(client), [
      ["user", "q1"],
      ["assistant", "a1"],
    ]);
    await client.promptAndWait("q2, reworded");
    assert.deepEqual((await transcript(client)).slice(2), [
      ["user", "q2, reworded"],
      ["assistant", "a2 again"],
    ]);
    await assert.rejects(client.fork("no-such-entry"), /entry|not found/i);
  });

  it("fork stays in the same session file, the old branch kept in its tree (agentwire's documented behaviour, not pi 0.73.1's)", async () => {
    // docs/sessions.md: `fork` continues "in the same file; the old branch stays in the tree".
    // pi 0.73.1's fork (AgentSessionRuntime.fork → SessionManager.createBranchedSession) instead
    // switches to a new session file whose header names the old one as parentSession. A pi host
    // that watches getState().sessionFile sees no change here. (Not yet in docs/rpc-mode.md's
    // table of differences.)
    const { client } = await start([{ text: "a1" }, { text: "a2" }]);
    await client.promptAndWait("q1");
    await client.promptAndWait("q2");
    const original = await client.getState();
    const forkable = await client.getForkMessages();
    await client.fork(forkable[1].entryId);
    const state = await client.getState();
    assert.equal(state.sessionFile, original.sessionFile);
    assert.equal(state.sessionId, original.sessionId);
    const entries = readFileSync(state.sessionFile, "utf8").trim().split("\n").map((line) => JSON.parse(line));
    assert.ok(entries.some((e) => e.type === "message" && e.message.role === "user" && textOf(e.message) === "q2"), "the old branch is still in the file");
  });

  it("clone copies the active branch into a new session", async () => {
    const { client } = await start([{ text: "a1" }]);
    await client.promptAndWait("q1");
    const original = await client.getState();
    assert.deepEqual(await client.clone(), { cancelled: false });
    const cloned = await client.getState();
    assert.notEqual(cloned.sessionFile, original.sessionFile);
    assert.deepEqual(await transcript(client), [
      ["user", "q1"],
      ["assistant", "a1"],
    ]);
  });

  it("setSessionName names the session (getState().sessionName)", async () => {
    const { client } = await start();
    await client.setSessionName("my session");
    assert.equal((await client.getState()).sessionName, "my session");
  });
});

describe("export", () => {
  it("exportHtml writes the conversation as HTML to the given path, or to a default path it answers", async () => {
    const { client, dir } = await start([{ text: "an answer worth exporting" }]);
    await client.promptAndWait("a question worth exporting");
    const target = join(dir, "export.html");
    assert.deepEqual(await client.exportHtml(target), { path: target });
    const html = readFileSync(target, "utf8");
    assert.match(html, /<html/i);
    assert.match(html, /a question worth exporting/);
    assert.match(html, /an answer worth exporting/);
    const { path } = await client.exportHtml();
    assert.match(path, /\.html$/);
    assert.ok(existsSync(path), path);
  });
});

describe("stats", () => {
  it("getSessionStats counts messages, tool calls and tokens of the session", async () => {
    const { client } = await start([{ text: "running it", toolCalls: [{ name: "bash", arguments: { command: "echo tool ran" } }] }, { text: "done" }]);
    await client.promptAndWait("run something");
    const state = await client.getState();
    const stats = await client.getSessionStats();
    assert.equal(stats.sessionFile, state.sessionFile);
    assert.equal(stats.sessionId, state.sessionId);
    assert.equal(stats.userMessages, 1);
    assert.equal(stats.assistantMessages, 2);
    assert.equal(stats.toolCalls, 1);
    assert.equal(stats.toolResults, 1);
    assert.equal(stats.totalMessages, 4);
    assert.ok(stats.tokens.total > 0 && stats.tokens.total === stats.tokens.input + stats.tokens.output + stats.tokens.cacheRead + stats.tokens.cacheWrite, JSON.stringify(stats.tokens));
    assert.equal(stats.cost, 0);
    const result = (await client.getMessages()).find((m) => m.role === "toolResult");
    assert.match(textOf(result), /tool ran/);
  });
});

describe("commands, stderr, stop", () => {
  it("getCommands lists agentwire's built-in slash commands", async () => {
    const { client } = await start();
    const commands = await client.getCommands();
    const names = commands.map((c) => c.name);
    for (const name of ["model", "name", "new", "help"]) assert.ok(names.includes(name), names.join(","));
    // agentwire's own commands are `source: "builtin"` (the schema's union of pi's and omp's
    // sources); pi 0.73.1's RpcSlashCommand type only has "extension" | "prompt" | "skill" and a
    // sourceInfo. RpcClient passes the list through untouched.
    assert.ok(commands.every((c) => c.source === "builtin" && typeof c.description === "string"));
  });

  it("getStderr collects the agent's stderr; stop ends the process", async () => {
    const { client } = await start();
    assert.equal(typeof client.getStderr(), "string");
    await client.stop();
    await assert.rejects(client.getState(), /not started/);
  });
});
