import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { after, before, describe, it } from "node:test";

import {
  AgentClient,
  AgentCommandError,
  AgentExitedError,
  AgentSpawnError,
  ChunkReassembler,
  ChunkSequenceError,
  COMMAND_TYPES,
  WireClient,
  agentwireCommand,
  LineSplitter,
  RequestTimeoutError,
  isAgentEvent,
  splitFrame,
  type AgentFrame,
  type ExtensionUiRequest,
  type HostToolCall,
  type MessageUpdateEvent,
} from "../src/index.js";
import { Sandbox, agentwireBin, packageRoot } from "./helpers.js";

function textOf(events: AgentFrame[]): string {
  return events
    .filter((e): e is MessageUpdateEvent => isAgentEvent(e, "message_update"))
    .map((e) => (e.assistantMessageEvent.type === "text_delta" ? e.assistantMessageEvent.delta : ""))
    .join("");
}

function waitFor<K extends string>(client: AgentClient, type: K): Promise<AgentFrame> {
  return new Promise((resolve) => {
    const off = client.onFrame((frame) => {
      if (frame.type === type) {
        off();
        resolve(frame);
      }
    });
  });
}

describe("generated files", () => {
  it("are current with the schema compiled into agentwire (drift check)", () => {
    const run = spawnSync(process.execPath, [join(packageRoot, "scripts/generate.mjs"), "--check"], {
      env: { ...process.env, AGENTWIRE_BIN: agentwireBin },
      encoding: "utf8",
    });
    assert.equal(run.status, 0, `regenerate with clients/generate:\n${run.stderr}`);
  });
});

describe("LineSplitter", () => {
  it("splits on LF only and keeps U+2028 / U+2029 and CR inside lines", () => {
    const s = new LineSplitter();
    const line = JSON.stringify({ text: "a\u2028b\u2029c\rd" });
    const bytes = Buffer.from(`${line}\n${line}\n`);
    const lines = [...s.push(bytes.subarray(0, 7)), ...s.push(bytes.subarray(7, 30)), ...s.push(bytes.subarray(30))];
    assert.deepEqual(lines, [line, line]);
    assert.equal(JSON.parse(lines[0]!).text, "a\u2028b\u2029c\rd");
    assert.equal(s.flush(), undefined);
  });

  it("joins a multi-byte character split across chunks", () => {
    const s = new LineSplitter();
    const bytes = Buffer.from("{\"t\":\"é😀\"}\n");
    const out: string[] = [];
    for (let i = 0; i < bytes.length; i++) out.push(...s.push(bytes.subarray(i, i + 1)));
    assert.deepEqual(out, ["{\"t\":\"é😀\"}"]);
  });
});

// The timeout is a guard against a hang, not a speed check: node:test applies a suite's timeout
// to the whole suite, and these tests spawn the agent some forty times. On a loaded 2-core
// machine the suite took just over 60 s and its last test was cancelled half-way.
describe("AgentClient against agentwire", { timeout: 300_000 }, () => {
  let sandbox: Sandbox;
  before(() => {
    assert.ok(existsSync(agentwireBin), `build agentwire first (cargo build): ${agentwireBin}`);
    sandbox = new Sandbox();
  });
  after(() => sandbox.dispose());

  it("streams a prompt's text and runs a built-in tool call", async () => {
    const client = sandbox.spawn([
      { text: "Listing.", toolCalls: [{ id: "c1", name: "ls", arguments: { path: "." } }] },
      { text: "Done listing." },
    ]);
    try {
      const seen: string[] = [];
      client.on("tool_execution_end", (e) => seen.push(`${e.toolName}:${e.isError}`));
      const outcome = await client.promptAndWait({ message: "list files" });
      assert.equal(outcome.result.status, "completed");
      assert.equal(textOf(outcome.events), "Listing.Done listing.");
      assert.deepEqual(seen, ["ls:false"]);
      assert.equal((await client.getLastAssistantText()).text, "Done listing.");
    } finally {
      await client.close();
    }
  });

  it("reports a listener that throws and keeps reading", async () => {
    const errors: unknown[] = [];
    const client = sandbox.spawn([{ text: "still here" }], [], { onListenerError: (error) => errors.push(error) });
    try {
      client.on("agent_start", () => {
        throw new Error("listener bug");
      });
      const outcome = await client.promptAndWait({ message: "hi" });
      assert.equal(textOf(outcome.events), "still here");
      assert.equal((await client.getState()).isStreaming, false);
      assert.deepEqual(errors.map((e) => (e as Error).message), ["listener bug"]);
    } finally {
      await client.close();
    }
  });

  it("answers a host tool call with updates, and honours a cancel through the AbortSignal", async () => {
    const client = sandbox.spawn([
      { toolCalls: [{ id: "h1", name: "lookup", arguments: { key: "alpha" } }] },
      { text: "Looked up." },
      { toolCalls: [{ id: "h2", name: "slow", arguments: {} }] },
    ]);
    try {
      let cancelled: unknown;
      let slowStarted!: () => void;
      const slowRunning = new Promise<void>((resolve) => {
        slowStarted = resolve;
      });
      const names = await client.setHostTools(
        [
          { name: "lookup", description: "Looks a key up.", parameters: { type: "object", properties: { key: { type: "string" } }, required: ["key"] } },
          { name: "slow", description: "Never finishes on its own.", parameters: { type: "object", properties: {} } },
        ],
        {
          lookup: async (args, ctx) => {
            ctx.update("halfway");
            return `value of ${String(args.key)}`;
          },
          slow: (_args, ctx) =>
            new Promise((_resolve, reject) => {
              slowStarted();
              ctx.signal.addEventListener("abort", () => {
                cancelled = ctx.signal.reason;
                reject(new Error("aborted"));
              });
            }),
        },
      );
      assert.deepEqual(names.toolNames, ["lookup", "slow"]);

      const updates: unknown[] = [];
      client.on("tool_execution_update", (e) => updates.push(e.partialResult));
      const first = await client.promptAndWait({ message: "look alpha up" });
      assert.equal(first.result.status, "completed");
      const end = first.events.find((e) => isAgentEvent(e, "tool_execution_end"));
      assert.ok(end && isAgentEvent(end, "tool_execution_end"));
      assert.deepEqual(end.result.content, [{ type: "text", text: "value of alpha" }]);
      assert.equal(updates.length, 1);

      const calls: HostToolCall[] = [];
      client.on("host_tool_call", (c) => calls.push(c));
      const cancel = waitFor(client, "host_tool_cancel");
      const second = client.promptAndWait({ message: "be slow" });
      await slowRunning;
      await client.abort();
      const outcome = await second;
      assert.equal(outcome.result.status, "aborted");
      await cancel;
      assert.ok(cancelled instanceof Error, "the handler's signal was aborted by host_tool_cancel");
      assert.equal(calls.length, 1);
    } finally {
      await client.close();
    }
  });

  it("lets the UI handler answer an approval select", async () => {
    const requests: ExtensionUiRequest[] = [];
    const client = sandbox.spawn([{ toolCalls: [{ name: "bash", arguments: { command: "echo approved-run" } }] }, { text: "ok" }], ["--approval", "dangerous"], {
      uiHandler: (request) => {
        requests.push(request);
        // The approval dialog is pi's select: "Allow tool: <name>\nCommand: …", Approve / Deny.
        return request.method === "select" ? { value: "Approve" } : undefined;
      },
    });
    try {
      const outcome = await client.promptAndWait({ message: "run it" });
      assert.equal(outcome.result.status, "completed");
      assert.equal(requests[0]?.method, "select");
      assert.match(requests[0] && "title" in requests[0] ? requests[0].title : "", /^Allow tool: bash\nCommand: echo approved-run/);
      const end = outcome.events.find((e) => isAgentEvent(e, "tool_execution_end"));
      assert.ok(end && isAgentEvent(end, "tool_execution_end"));
      assert.equal(end.isError, false);
      assert.match(JSON.stringify(end.result.content), /approved-run/);
    } finally {
      await client.close();
    }
  });

  it("refuses a dangerous tool with the default UI handler (the select answered cancelled)", async () => {
    const client = sandbox.spawn([{ toolCalls: [{ name: "bash", arguments: { command: "echo nope" } }] }, { text: "ok" }], ["--approval", "dangerous"]);
    try {
      const outcome = await client.promptAndWait({ message: "run it" });
      const end = outcome.events.find((e) => isAgentEvent(e, "tool_execution_end"));
      assert.ok(end && isAgentEvent(end, "tool_execution_end"));
      assert.equal(end.isError, true);
    } finally {
      await client.close();
    }
  });

  it("aborts a running prompt", async () => {
    const client = sandbox.spawn([{ text: "x".repeat(400), chunkSize: 1, delayMs: 20 }]);
    try {
      const started = waitFor(client, "message_update");
      const run = client.promptAndWait({ message: "long answer" });
      await started;
      await client.abort();
      assert.equal((await run).result.status, "aborted");
    } finally {
      await client.close();
    }
  });

  it("maps success:false to AgentCommandError and keeps serving", async () => {
    const client = sandbox.spawn();
    try {
      await assert.rejects(client.setModel({ provider: "nope", modelId: "missing" }), (e: unknown) => {
        assert.ok(e instanceof AgentCommandError);
        assert.equal(e.command, "set_model");
        assert.match(e.reason, /nope\/missing/);
        return true;
      });
      assert.equal((await client.getState()).isStreaming, false);
    } finally {
      await client.close();
    }
  });

  it("waitUntilSettled resolves on agent_settled, not on agent_end", async () => {
    const toAgent = new PassThrough();
    const fromAgent = new PassThrough();
    const client = AgentClient.attach(toAgent, fromAgent);
    let settled: unknown;
    const waiting = client.waitUntilSettled({ timeoutMs: 5_000 }).then((frame) => (settled = frame));
    fromAgent.write('{"type":"agent_start"}\n{"type":"agent_end","messages":[],"willRetry":true}\n');
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(settled, undefined, "a retry follows: not settled yet");
    fromAgent.write('{"type":"agent_settled","aborted":true}\n');
    await waiting;
    assert.deepEqual(settled, { type: "agent_settled", aborted: true });
    await assert.rejects(client.waitUntilSettled({ timeoutMs: 50 }), RequestTimeoutError);
    fromAgent.end();
    await client.exited;
  });

  it("answers pi 1.6's commands: getEntries with since, getTree, clearQueue, levels; bash streams its output", async () => {
    const client = sandbox.spawn([{ text: "first answer" }, { text: "a slow second answer", chunkSize: 2, delayMs: 30 }, { text: "never" }]);
    try {
      await client.promptAndWait({ message: "hello" });
      const all = await client.getEntries();
      const ids = all.entries.map((e) => e.id);
      assert.ok(ids.length >= 2 && all.leafId === ids[ids.length - 1], JSON.stringify(all));
      assert.deepEqual((await client.getEntries({ since: ids[0]! })).entries.map((e) => e.id), ids.slice(1));
      await assert.rejects(client.getEntries({ since: "no-such-entry" }), (e: unknown) => e instanceof AgentCommandError && e.code === "not_found");
      const tree = await client.getTree();
      assert.equal(tree.leafId, ids[ids.length - 1]);
      assert.equal(tree.tree.length, 1);
      assert.equal(tree.tree[0]!.entry.id, ids[0]);
      assert.deepEqual((await client.getAvailableThinkingLevels()).levels, ["off"]);

      const streaming = new Promise<void>((resolve) => {
        const off = client.on("message_update", () => {
          off();
          resolve();
        });
      });
      const second = client.promptAndWait({ message: "again" });
      await streaming;
      await client.followUp({ message: "queued for later" });
      assert.deepEqual(await client.clearQueue(), { steering: [], followUp: ["queued for later"] });
      await second;

      const updates: { id?: unknown; delta: string }[] = [];
      client.on("bash_execution_update", (u) => updates.push(u));
      const result = await client.bash({ command: "echo streamed" });
      assert.deepEqual(updates.map((u) => u.delta), ["streamed\n"]);
      assert.ok(updates.every((u) => typeof u.id === "string"));
      assert.equal(result.output, "streamed\n");
    } finally {
      await client.close();
    }
  });

  it("delivers a frame of an unknown type to generic listeners", async () => {
    const toAgent = new PassThrough();
    const fromAgent = new PassThrough();
    const client = AgentClient.attach(toAgent, fromAgent);
    const frames: AgentFrame[] = [];
    client.onFrame((f) => frames.push(f));
    const unknown: AgentFrame[] = [];
    client.on("shiny_new_event", (f) => unknown.push(f));
    const invalid: string[] = [];
    client.onInvalidLine((line) => invalid.push(line));
    fromAgent.write('{"type":"shiny_new_event","extra":{"a":1}}\nnot json\n{"type":"agent_start","futureField":true}\n');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(frames, [{ type: "shiny_new_event", extra: { a: 1 } }, { type: "agent_start", futureField: true }]);
    assert.equal(unknown.length, 1);
    assert.deepEqual(invalid, ["not json"]);
    fromAgent.end();
    assert.equal((await client.exited).code, null);
  });

  it("rejects pending requests with the exit code and stderr tail when the process dies", async () => {
    const client = AgentClient.spawn("sh", ["-c", "read line; echo 'fatal: out of cheese' >&2; exit 3"]);
    await assert.rejects(client.getState(), (e: unknown) => {
      assert.ok(e instanceof AgentExitedError);
      assert.equal(e.exit.code, 3);
      assert.match(e.exit.stderrTail, /out of cheese/);
      return true;
    });
    await assert.rejects(client.getState(), AgentExitedError, "requests after exit reject at once");
  });

  it("rejects an agent that dies mid-request: agentwire killed", async () => {
    const client = sandbox.spawn([{ text: "y".repeat(200), chunkSize: 1, delayMs: 50 }]);
    const started = waitFor(client, "message_update");
    const run = client.promptAndWait({ message: "slow" });
    await started;
    process.kill(client.pid!, "SIGKILL");
    await assert.rejects(run, (e: unknown) => e instanceof AgentExitedError && e.exit.signal === "SIGKILL");
  });

  it("times out and honours an AbortSignal per request", async () => {
    const silent = AgentClient.spawn("sh", ["-c", "cat > /dev/null"]);
    try {
      await assert.rejects(silent.getState({}, { timeoutMs: 50 }), RequestTimeoutError);
      const controller = new AbortController();
      const pending = silent.getState({}, { signal: controller.signal, timeoutMs: 0 });
      controller.abort(new Error("host gave up"));
      await assert.rejects(pending, /host gave up/);
    } finally {
      await silent.close(200);
    }
  });

  it("iterates events until the process exits", async () => {
    const client = sandbox.spawn([{ text: "iterated" }]);
    const types: string[] = [];
    const iterate = (async () => {
      for await (const frame of client.events()) types.push(String(frame.type));
    })();
    await client.promptAndWait({ message: "hi" });
    await client.close();
    await iterate;
    assert.ok(types.includes("agent_start") && types.includes("agent_end") && types.includes("prompt_result"), types.join(","));
    assert.ok(!types.includes("response"));
  });

  it("streams deltas without snapshots after setEventOptions({ partialMessages: false })", async () => {
    const client = sandbox.spawn([{ text: "Hello there, lean host!", chunkSize: 4 }, { text: "Snapshots again.", chunkSize: 4 }]);
    try {
      await client.setEventOptions({ partialMessages: false });
      const lean = await client.promptAndWait({ message: "hi" });
      const updates = lean.events.filter((e): e is MessageUpdateEvent => isAgentEvent(e, "message_update"));
      assert.ok(updates.length > 5);
      for (const u of updates) {
        assert.equal(u.message, undefined, "no top-level snapshot");
        assert.ok(!("partial" in u.assistantMessageEvent), "no partial");
      }
      assert.equal(textOf(lean.events), "Hello there, lean host!");
      const end = lean.events.find((e) => isAgentEvent(e, "message_end") && e.message.role === "assistant");
      assert.ok(end && isAgentEvent(end, "message_end") && end.message.role === "assistant");
      assert.deepEqual(end.message.content, [{ type: "text", text: "Hello there, lean host!" }], "message_end carries the whole message");

      await client.setEventOptions({ partialMessages: true });
      const full = await client.promptAndWait({ message: "again" });
      const snapshots = full.events.filter((e): e is MessageUpdateEvent => isAgentEvent(e, "message_update"));
      assert.ok(snapshots.length > 0 && snapshots.every((u) => u.message !== undefined && "partial" in u.assistantMessageEvent));
    } finally {
      await client.close();
    }
  });

  it("negotiates protocol 2: a command over 1 MiB goes out in chunks and answers over 1 MiB come back whole", async () => {
    // Spawned by hand and attached through two taps, to count the rpc_chunk lines each way.
    const child = spawn(agentwireBin, ["--mode", "rpc", "--session-dir", join(sandbox.dir, "sessions-chunks"), "--cwd", sandbox.dir], {
      env: { PATH: process.env.PATH, HOME: sandbox.dir, AGENTWIRE_CONFIG_DIR: join(sandbox.dir, "config") },
      stdio: ["pipe", "pipe", "ignore"],
    });
    const counted = { toAgent: 0, fromAgent: 0 };
    const tap = (count: "toAgent" | "fromAgent") => {
      const splitter = new LineSplitter();
      const through = new PassThrough();
      through.on("data", (data: Buffer) => {
        for (const line of splitter.push(data)) if (line.startsWith('{"type":"rpc_chunk"')) counted[count]++;
      });
      return through;
    };
    const toAgent = tap("toAgent");
    toAgent.pipe(child.stdin);
    const fromAgent = tap("fromAgent");
    child.stdout.pipe(fromAgent);
    const client = AgentClient.attach(toAgent, fromAgent, { requestTimeoutMs: 30_000 });
    const bigPhases = (text: string) => [{ id: "p1", name: "Big", tasks: [{ id: "t1", content: text.repeat(300_000), status: "pending" as const }] }];
    try {
      // Protocol 1: nothing is chunked, however large.
      const before = bigPhases("é—12");
      assert.deepEqual((await client.setTodos({ phases: before })).todoPhases, before);
      assert.deepEqual(counted, { toAgent: 0, fromAgent: 0 });

      await assert.rejects(client.negotiateProtocol({ protocolVersion: 3 }), (e: unknown) => e instanceof AgentCommandError && e.reason === "Unsupported RPC protocol version: 3");
      assert.deepEqual(await client.negotiateProtocol({ protocolVersion: 2 }), { protocolVersion: 2 });
      const events: unknown[] = [];
      client.on("todo_update", (e) => events.push(e));
      const after = bigPhases("ü—34");
      assert.deepEqual((await client.setTodos({ phases: after })).todoPhases, after, "the 1.8 MB answer reassembled");
      assert.deepEqual(events, [{ type: "todo_update", todoPhases: after }], "events are reassembled too");
      assert.ok(counted.toAgent >= 7, `the 1.8 MB command went out in chunks (${counted.toAgent})`);
      assert.ok(counted.fromAgent >= 14, `the event and the answer came in chunks (${counted.fromAgent})`);
      assert.deepEqual((await client.getState()).todoPhases, after);
      // Small frames are not chunked.
      const chunksSoFar = { ...counted };
      await client.setSessionName({ name: "small" });
      assert.deepEqual(counted, chunksSoFar);
    } finally {
      await client.close();
      child.kill();
    }
  });

  it("reassembles chunk sequences and refuses broken ones", () => {
    const text = JSON.stringify({ type: "notice", message: "é".repeat(1000) });
    const chunks = splitFrame(text, "c1", 100);
    const reassembler = new ChunkReassembler();
    const results = chunks.map((c) => reassembler.push(c));
    assert.equal(results.pop(), text);
    assert.ok(results.every((r) => r === undefined));
    assert.throws(() => reassembler.push(chunks[1]!), ChunkSequenceError, "a sequence starts at index 0");
    assert.equal(reassembler.push(chunks[2]!), undefined, "the broken sequence's leftovers are dropped");
    assert.throws(() => new ChunkReassembler(10).push(chunks[0]!), /reassembly limit/);
  });

  it("runs every command end to end", async () => {
    const exportPath = join(sandbox.dir, "export.html");
    const client = sandbox.spawn([
      { text: "first answer" },
      { text: "z".repeat(300), chunkSize: 1, delayMs: 20 },
    ], ["--compaction-keep-tokens", "1"]);
    const answered = new Set<string>();
    client.onFrame((f) => {
      if (f.type === "response" && (f as { success?: unknown }).success === true) answered.add(String((f as { command?: unknown }).command));
    });
    try {
      const first = await client.promptAndWait({ message: "hello there" });
      assert.equal(first.result.status, "completed");

      // Queue and interrupt controls while a slow run streams.
      const started = waitFor(client, "message_update");
      const slow = client.prompt({ message: "slow one" });
      await slow;
      await started;
      await client.steer({ message: "steer it" });
      await client.followUp({ message: "and then this" });
      await client.abort();
      // The new run's agent_end can arrive in the same read as the abort_and_prompt response,
      // before a listener added after the await would exist: listen first, and count only an
      // agent_end after that response (the aborted run's own agent_end comes before it).
      let replied = false;
      const ended = new Promise<void>((resolve) => {
        const off = client.onFrame((f) => {
          if (f.type === "response" && (f as { command?: unknown }).command === "abort_and_prompt") replied = true;
          else if (replied && f.type === "agent_end") {
            off();
            resolve();
          }
        });
      });
      await client.abortAndPrompt({ message: "instead this" });
      await ended;
      await client.abortRetry();

      const state = await client.getState();
      assert.ok(state.sessionFile, "sessions are on disk");
      await client.setTodos({ phases: [{ id: "p1", name: "Build", tasks: [{ id: "t1", content: "Write it", status: "in_progress" }] }] });
      await client.setHostTools({ tools: [] });
      const models = await client.getAvailableModels();
      const offline = models.models[0]!;
      assert.equal((await client.setModel({ provider: offline.provider, modelId: offline.id })).id, offline.id);
      await client.cycleModel();
      await client.setThinkingLevel({ level: "off" });
      await client.cycleThinkingLevel();
      assert.ok((await client.getAvailableThinkingLevels()).levels.length > 0);
      await client.setSteeringMode({ mode: "one-at-a-time" });
      await client.setFollowUpMode({ mode: "all" });
      await client.setInterruptMode({ mode: "wait" });
      await client.setAutoCompaction({ enabled: false });
      await client.setAutoRetry({ enabled: true });
      await client.setEventOptions({ partialMessages: true });
      await client.negotiateProtocol({ protocolVersion: 2 });
      assert.match((await client.bash({ command: "echo from-bash" })).output, /from-bash/);
      await client.abortBash();
      assert.ok((await client.getSessionStats()).totalMessages >= 2);
      await client.compact({});
      assert.equal((await client.exportHtml({ outputPath: exportPath })).path, exportPath);
      await client.setSessionName({ name: "client test" });
      assert.ok((await client.getMessages()).messages.length > 0);
      assert.ok((await client.getMessagesPage({ limit: 1 })).messages.length === 1);
      await client.getCommands();
      await client.getAvailableCommands();
      await client.getLastAssistantText();
      await client.getTree();
      await client.getBranchMessages();
      const forkable = (await client.getForkMessages()).messages;
      assert.ok(forkable.length >= 2, "several user messages to fork and branch at");
      await client.fork({ entryId: forkable[forkable.length - 1]!.entryId });
      const branchable = (await client.getForkMessages()).messages;
      await client.branch({ entryId: branchable[branchable.length - 1]!.entryId });
      await client.clone();
      assert.ok((await client.listSessions({ scope: "all" })).sessions.length >= 2);
      await client.switchSession({ sessionPath: state.sessionFile });
      await client.newSession();

      const missing = COMMAND_TYPES.filter((c) => !answered.has(c));
      assert.deepEqual(missing, [], `commands never answered success:true: ${missing.join(", ")}`);
    } finally {
      await client.close();
    }
  });
});

describe("finding the binary", () => {
  it("rejects with AgentSpawnError, not AgentExitedError's 'exited', when the command cannot be started", async () => {
    const client = AgentClient.spawn("agentwire-does-not-exist", ["--mode", "rpc"]);
    const error = await client.getState().then(
      () => assert.fail("getState resolved"),
      (e: unknown) => e,
    );
    assert.ok(error instanceof AgentSpawnError, String(error));
    assert.ok(error instanceof AgentExitedError);
    assert.match(error.message, /could not start the agent `agentwire-does-not-exist`: spawn agentwire-does-not-exist ENOENT \(not found on PATH\)/);
    assert.match(error.message, /AGENTWIRE_BIN/);
    assert.doesNotMatch(error.message, /exited/);
    assert.equal((await client.exited).spawnError?.code, "ENOENT");
    const wire = WireClient.spawn("/nonexistent/agentwire", ["--mode", "wire"]);
    await assert.rejects(wire.initialize({ protocol_version: "1.10" }), (e: unknown) => e instanceof AgentSpawnError && /`\/nonexistent\/agentwire`.*\(not found\)/.test(e.message));
  });

  it("agentwireCommand() is $AGENTWIRE_BIN when set, else agentwire from PATH", () => {
    assert.equal(agentwireCommand({ AGENTWIRE_BIN: "/opt/agentwire" }), "/opt/agentwire");
    assert.equal(agentwireCommand({ AGENTWIRE_BIN: "" }), "agentwire");
    assert.equal(agentwireCommand({}), "agentwire");
  });
});
