"""The client against the real agentwire binary (offline model, scripted replies)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from typing import Any, Dict, List, Optional, Set

import pytest

from agentwire_client import (
    COMMAND_TYPES,
    AgentClient,
    ChunkReassembler,
    ChunkSequenceError,
    AgentCommandError,
    AgentExitedError,
    AgentSpawnError,
    Frame,
    HostToolContext,
    RequestTimeoutError,
    UiContext,
    UiRequest,
    WireClient,
    agentwire_command,
    models as m,
    split_frame,
)

from .conftest import AGENTWIRE_BIN, PACKAGE_ROOT, Sandbox, maybe


def streamed_text(events: List[Frame]) -> str:
    return "".join(
        e.assistantMessageEvent.root.delta
        for e in events
        if isinstance(e, m.MessageUpdateEvent) and isinstance(e.assistantMessageEvent.root, m.AmeTextDelta)
    )


def first(events: List[Frame], kind: Any) -> Any:
    return next(e for e in events if isinstance(e, kind))


async def wait_for(client: AgentClient, kind: str) -> "asyncio.Future[Frame]":
    future: "asyncio.Future[Frame]" = asyncio.get_running_loop().create_future()

    def check(frame: Frame) -> None:
        frame_type = frame.get("type") if isinstance(frame, dict) else getattr(frame, "type", None)
        if frame_type == kind and not future.done():
            future.set_result(frame)

    off = client.on_frame(check)
    future.add_done_callback(lambda _: off())
    return future


def test_the_ui_request_alias_matches_the_generated_union() -> None:
    from typing import get_args

    from agentwire_client import client as client_module

    generated = get_args(m.ExtensionUiRequest.model_fields["root"].annotation)
    assert set(get_args(UiRequest)) == set(generated) == set(client_module._UI_REQUEST_TYPES)


def test_generated_modules_are_current() -> None:
    run = subprocess.run(
        [sys.executable, str(PACKAGE_ROOT / "scripts" / "generate.py"), "--check"],
        env={**os.environ, "AGENTWIRE_BIN": AGENTWIRE_BIN},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, f"regenerate with clients/generate:\n{run.stderr}"


async def test_streams_text_and_runs_a_builtin_tool(sandbox: Sandbox) -> None:
    client = await sandbox.spawn(
        [{"text": "Listing.", "toolCalls": [{"id": "c1", "name": "ls", "arguments": {"path": "."}}]}, {"text": "Done listing."}]
    )
    async with client:
        ends: List[m.ToolExecutionEndEvent] = []
        client.on("tool_execution_end", ends.append)
        outcome = await client.prompt_and_wait("list files")
        assert outcome.result.status == "completed"
        assert streamed_text(outcome.events) == "Listing.Done listing."
        assert [(e.toolName, e.isError) for e in ends] == [("ls", False)]
        assert (await client.get_last_assistant_text()).text == "Done listing."


async def test_host_tool_round_trip_with_update_and_cancel(sandbox: Sandbox) -> None:
    client = await sandbox.spawn(
        [
            {"toolCalls": [{"id": "h1", "name": "lookup", "arguments": {"key": "alpha"}}]},
            {"text": "Looked up."},
            {"toolCalls": [{"id": "h2", "name": "slow", "arguments": {}}]},
        ]
    )
    async with client:
        slow_started = asyncio.Event()
        slow_cancelled = asyncio.Event()

        async def lookup(args: Dict[str, Any], ctx: HostToolContext) -> str:
            await ctx.update("halfway")
            return f"value of {args['key']}"

        async def slow(args: Dict[str, Any], ctx: HostToolContext) -> str:
            slow_started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                assert ctx.cancelled.is_set()
                slow_cancelled.set()
                raise
            return "never"

        names = await client.set_host_tools(
            [
                m.HostToolDefinition(name="lookup", description="Looks a key up.", parameters={"type": "object", "properties": {"key": {"type": "string"}}}),
                m.HostToolDefinition(name="slow", description="Never finishes on its own.", parameters={"type": "object", "properties": {}}),
            ],
            {"lookup": lookup, "slow": slow},
        )
        assert names.toolNames == ["lookup", "slow"]

        updates: List[m.ToolExecutionUpdateEvent] = []
        client.on("tool_execution_update", updates.append)
        outcome = await client.prompt_and_wait("look alpha up")
        assert outcome.result.status == "completed"
        end: m.ToolExecutionEndEvent = first(outcome.events, m.ToolExecutionEndEvent)
        assert end.result.content[0].root == m.TextContent(type="text", text="value of alpha")
        assert len(updates) == 1

        cancel = await wait_for(client, "host_tool_cancel")
        run = asyncio.ensure_future(client.prompt_and_wait("be slow"))
        await asyncio.wait_for(slow_started.wait(), 10)
        await client.abort()
        assert (await run).result.status == "aborted"
        await asyncio.wait_for(cancel, 10)
        await asyncio.wait_for(slow_cancelled.wait(), 10)


async def test_ui_handler_answers_an_approval_select(sandbox: Sandbox) -> None:
    requests: List[UiRequest] = []

    async def ui(request: UiRequest, ctx: UiContext) -> Optional[Dict[str, Any]]:
        requests.append(request)
        # The approval dialog is pi's select: "Allow tool: <name>\nCommand: ...", Approve / Deny.
        return {"value": "Approve"} if request.method == "select" else None

    client = await sandbox.spawn(
        [{"toolCalls": [{"name": "bash", "arguments": {"command": "echo approved-run"}}]}, {"text": "ok"}],
        ["--approval", "dangerous"],
        ui_handler=ui,
    )
    async with client:
        outcome = await client.prompt_and_wait("run it")
        assert requests[0].method == "select"
        assert getattr(requests[0], "title", "").startswith("Allow tool: bash\nCommand: echo approved-run")
        end: m.ToolExecutionEndEvent = first(outcome.events, m.ToolExecutionEndEvent)
        assert end.isError is False
        assert "approved-run" in end.result.model_dump_json()


async def test_default_ui_handler_refuses_a_dangerous_tool(sandbox: Sandbox) -> None:
    client = await sandbox.spawn([{"toolCalls": [{"name": "bash", "arguments": {"command": "echo no"}}]}, {"text": "ok"}], ["--approval", "dangerous"])
    async with client:
        outcome = await client.prompt_and_wait("run it")
        assert first(outcome.events, m.ToolExecutionEndEvent).isError is True


async def test_abort_ends_a_running_prompt(sandbox: Sandbox) -> None:
    client = await sandbox.spawn([{"text": "x" * 400, "chunkSize": 1, "delayMs": 20}])
    async with client:
        started = await wait_for(client, "message_update")
        run = asyncio.ensure_future(client.prompt_and_wait("long answer"))
        await started
        await client.abort()
        assert (await run).result.status == "aborted"


async def test_success_false_raises_and_the_agent_keeps_serving(sandbox: Sandbox) -> None:
    client = await sandbox.spawn()
    async with client:
        with pytest.raises(AgentCommandError) as info:
            await client.set_model(provider="nope", model_id="missing")
        assert info.value.command == "set_model"
        assert "nope/missing" in info.value.reason
        assert (await client.get_state()).isStreaming is False


async def test_unknown_frames_and_fields_are_passed_through() -> None:
    reader = asyncio.StreamReader()

    class Sink:
        def write(self, data: bytes) -> None:
            pass

        async def drain(self) -> None:
            pass

        def close(self) -> None:
            pass

    client = AgentClient.attach(reader, Sink())
    frames: List[Frame] = []
    client.on_frame(frames.append)
    unknown: List[Any] = []
    client.on("shiny_new_event", unknown.append)
    invalid: List[bytes] = []
    client.on_invalid_line(lambda line, error: invalid.append(line))
    reader.feed_data(b'{"type":"shiny_new_event","extra":{"a":1}}\nnot json\n{"type":"agent_start","futureField":true}\n')
    reader.feed_eof()
    info = await client.wait_closed()
    assert info.code is None
    assert frames[0] == {"type": "shiny_new_event", "extra": {"a": 1}}
    assert isinstance(frames[1], m.AgentStartEvent)
    assert frames[1].model_extra == {"futureField": True}
    assert unknown == [{"type": "shiny_new_event", "extra": {"a": 1}}]
    assert invalid == [b"not json"]


async def test_a_failing_listener_is_logged_and_reading_goes_on(sandbox: Sandbox, caplog: pytest.LogCaptureFixture) -> None:
    client = await sandbox.spawn([{"text": "still here"}])
    async with client:

        def broken(frame: Frame) -> None:
            raise RuntimeError("listener bug")

        client.on("agent_start", broken)
        outcome = await asyncio.wait_for(client.prompt_and_wait("hi"), 10)
        assert streamed_text(outcome.events) == "still here"
        assert (await client.get_state()).isStreaming is False
    assert any("listener bug" in (r.exc_text or "") or (r.exc_info and "listener bug" in str(r.exc_info[1])) for r in caplog.records)


async def test_pending_requests_fail_with_exit_code_and_stderr_tail() -> None:
    client = await AgentClient.spawn("sh", "-c", "read line; echo 'fatal: out of cheese' >&2; exit 3")
    with pytest.raises(AgentExitedError) as info:
        await client.get_state()
    assert info.value.exit.code == 3
    assert "out of cheese" in info.value.exit.stderr_tail
    with pytest.raises(AgentExitedError):
        await client.get_state()


async def test_agent_killed_mid_prompt(sandbox: Sandbox) -> None:
    client = await sandbox.spawn([{"text": "y" * 200, "chunkSize": 1, "delayMs": 50}])
    started = await wait_for(client, "message_update")
    run = asyncio.ensure_future(client.prompt_and_wait("slow"))
    await started
    os.kill(maybe(client.pid), signal.SIGKILL)
    with pytest.raises(AgentExitedError) as info:
        await run
    assert info.value.exit.signal == "SIGKILL"


async def test_request_timeout() -> None:
    client = await AgentClient.spawn("sh", "-c", "cat > /dev/null")
    try:
        with pytest.raises(RequestTimeoutError):
            await client.get_state(timeout=0.05)
    finally:
        await client.close(grace=0.2)


async def test_events_iterator_ends_when_the_process_exits(sandbox: Sandbox) -> None:
    client = await sandbox.spawn([{"text": "iterated"}])
    kinds: List[str] = []

    async def collect() -> None:
        async for frame in client.events():
            kinds.append(str(frame["type"] if isinstance(frame, dict) else frame.type))

    task = asyncio.ensure_future(collect())
    await asyncio.sleep(0)
    await client.prompt_and_wait("hi")
    await client.close()
    await asyncio.wait_for(task, 10)
    assert {"agent_start", "agent_end", "prompt_result"} <= set(kinds)
    assert "response" not in kinds


async def test_wait_until_settled_returns_on_agent_settled_not_on_agent_end() -> None:
    reader = asyncio.StreamReader()

    class Sink:
        def write(self, data: bytes) -> None:
            pass

        async def drain(self) -> None:
            pass

        def close(self) -> None:
            pass

    client = AgentClient.attach(reader, Sink())
    waiting = asyncio.ensure_future(client.wait_until_settled(timeout=5.0))
    reader.feed_data(b'{"type":"agent_start"}\n{"type":"agent_end","messages":[],"willRetry":true}\n')
    await asyncio.sleep(0.05)
    assert not waiting.done(), "a retry follows: not settled yet"
    reader.feed_data(b'{"type":"agent_settled","aborted":true}\n')
    settled = await waiting
    assert isinstance(settled, m.AgentSettledEvent) and settled.aborted is True
    with pytest.raises(RequestTimeoutError):
        await client.wait_until_settled(timeout=0.05)
    reader.feed_eof()
    await client.wait_closed()


async def test_pi_16_commands_entries_tree_queue_and_bash_updates(sandbox: Sandbox) -> None:
    client = await sandbox.spawn([{"text": "first answer"}, {"text": "a slow second answer", "chunkSize": 2, "delayMs": 30}, {"text": "never"}])
    async with client:
        await client.prompt_and_wait("hello")
        everything = await client.get_entries()
        ids = [e.root.id for e in everything.entries]
        assert len(ids) >= 2 and everything.leafId == ids[-1]
        after_first = await client.get_entries(since=ids[0])
        assert [e.root.id for e in after_first.entries] == ids[1:]
        with pytest.raises(AgentCommandError) as bad:
            await client.get_entries(since="no-such-entry")
        assert bad.value.code == "not_found"
        tree = await client.get_tree()
        assert tree.leafId == ids[-1] and len(tree.tree) == 1 and tree.tree[0].entry.root.id == ids[0]
        assert (await client.get_available_thinking_levels()).levels == ["off"]

        streaming = asyncio.Event()
        unsubscribe = client.on("message_update", lambda _: streaming.set())
        second = asyncio.ensure_future(client.prompt_and_wait("again"))
        await asyncio.wait_for(streaming.wait(), 10)
        unsubscribe()
        await client.follow_up(message="queued for later")
        cleared = await client.clear_queue()
        assert (cleared.steering, cleared.followUp) == ([], ["queued for later"])
        await second

        updates: List[Any] = []
        client.on("bash_execution_update", updates.append)
        result = await client.bash(command="echo streamed")
        assert [u.delta for u in updates] == ["streamed\n"] and result.output == "streamed\n"
        assert all(u.id is not None for u in updates)


async def test_lean_stream_after_set_event_options(sandbox: Sandbox) -> None:
    client = await sandbox.spawn([{"text": "Hello there, lean host!", "chunkSize": 4}, {"text": "Snapshots again.", "chunkSize": 4}])
    async with client:
        await client.set_event_options(partial_messages=False)
        lean = await client.prompt_and_wait("hi")
        updates = [e for e in lean.events if isinstance(e, m.MessageUpdateEvent)]
        assert len(updates) > 5
        for update in updates:
            assert update.message is None, "no top-level snapshot"
            assert getattr(update.assistantMessageEvent.root, "partial", None) is None, "no partial"
        assert streamed_text(lean.events) == "Hello there, lean host!"
        end = next(e for e in lean.events if isinstance(e, m.MessageEndEvent) and e.message.root.role == "assistant")
        assert end.message.root.model_dump(exclude_none=True)["content"] == [{"type": "text", "text": "Hello there, lean host!"}]

        await client.set_event_options(partial_messages=True)
        full = await client.prompt_and_wait("again")
        snapshots = [e for e in full.events if isinstance(e, m.MessageUpdateEvent)]
        assert snapshots and all(u.message is not None and getattr(u.assistantMessageEvent.root, "partial", None) is not None for u in snapshots)


class _ChunkCounter:
    """Counts the ``rpc_chunk`` lines in a byte stream."""

    def __init__(self) -> None:
        self.count = 0
        self._rest = b""

    def feed(self, data: bytes) -> None:
        *lines, self._rest = (self._rest + data).split(b"\n")
        self.count += sum(1 for line in lines if json.loads(line).get("type") == "rpc_chunk")


class _TapWriter:
    """The agent's stdin, counting the chunk lines written to it."""

    def __init__(self, inner: asyncio.StreamWriter) -> None:
        self.inner = inner
        self.counter = _ChunkCounter()

    def write(self, data: bytes) -> None:
        self.counter.feed(data)
        self.inner.write(data)

    async def drain(self) -> None:
        await self.inner.drain()

    def close(self) -> None:
        self.inner.close()


async def test_protocol_2_chunks_large_frames_both_ways(sandbox: Sandbox) -> None:
    # Spawned by hand and attached through taps, to count the rpc_chunk lines each way.
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(sandbox.dir), "AGENTWIRE_CONFIG_DIR": str(sandbox.dir / "config")}
    process = await asyncio.create_subprocess_exec(
        AGENTWIRE_BIN, "--mode", "rpc", "--session-dir", str(sandbox.dir / "sessions"), "--cwd", str(sandbox.dir),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    stdout = process.stdout
    from_agent = _ChunkCounter()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)

    async def pump() -> None:
        while data := await stdout.read(65536):
            from_agent.feed(data)
            reader.feed_data(data)
        reader.feed_eof()

    pumping = asyncio.get_running_loop().create_task(pump())
    writer = _TapWriter(process.stdin)
    client = AgentClient.attach(reader, writer, request_timeout=30.0)

    def big(text: str) -> List[m.TodoPhase]:
        return [m.TodoPhase(id="p1", name="Big", tasks=[m.TodoItem(id="t1", content=text * 300_000, status="pending")])]

    try:
        # Protocol 1: nothing is chunked, however large.
        before = big("é—12")
        assert (await client.set_todos(phases=before)).todoPhases == before
        assert (writer.counter.count, from_agent.count) == (0, 0)

        with pytest.raises(AgentCommandError, match="Unsupported RPC protocol version: 3"):
            await client.negotiate_protocol(protocol_version=3)
        assert (await client.negotiate_protocol(protocol_version=2)).protocolVersion == 2
        updates: List[Any] = []
        client.on("todo_update", updates.append)
        after = big("ü—34")
        assert (await client.set_todos(phases=after)).todoPhases == after, "the 1.8 MB answer reassembled"
        assert [u.todoPhases for u in updates] == [after], "events are reassembled too"
        assert writer.counter.count >= 7, "the 1.8 MB command went out in chunks"
        assert from_agent.count >= 14, "the event and the answer came in chunks"
        assert (await client.get_state()).todoPhases == after
        # Small frames are not chunked.
        counts = (writer.counter.count, from_agent.count)
        await client.set_session_name(name="small")
        assert (writer.counter.count, from_agent.count) == counts
    finally:
        await client.close()
        await pumping


def test_chunk_sequences_reassemble_and_broken_ones_are_refused() -> None:
    text = json.dumps({"type": "notice", "message": "é" * 1000}, ensure_ascii=False).encode()
    chunks = split_frame(text, "c1", 100)
    reassembler = ChunkReassembler()
    results = [reassembler.push(c) for c in chunks]
    assert results[-1] == text and all(r is None for r in results[:-1])
    with pytest.raises(ChunkSequenceError, match="a sequence starts at index 0"):
        reassembler.push(chunks[1])
    assert reassembler.push(chunks[2]) is None, "the broken sequence's leftovers are dropped"
    with pytest.raises(ChunkSequenceError, match="reassembly limit"):
        ChunkReassembler(10).push(chunks[0])


async def test_every_command_end_to_end(sandbox: Sandbox) -> None:
    export_path = str(sandbox.dir / "export.html")
    client = await sandbox.spawn(
        [{"text": "first answer"}, {"text": "z" * 300, "chunkSize": 1, "delayMs": 20}],
        ["--compaction-keep-tokens", "1"],
    )
    answered: Set[str] = set()
    client.on_frame(lambda f: answered.add(f.command) if isinstance(f, m.RpcResponse) and f.success else None)
    async with client:
        assert (await client.prompt_and_wait("hello there")).result.status == "completed"

        started = await wait_for(client, "message_update")
        await client.prompt(message="slow one")
        await started
        await client.steer(message="steer it")
        await client.follow_up(message="and then this")
        ended = await wait_for(client, "agent_end")
        await client.abort()
        await ended
        ended = await wait_for(client, "agent_end")
        await client.abort_and_prompt(message="instead this")
        await ended
        await client.abort_retry()

        state = await client.get_state()
        session_file = maybe(state.sessionFile)
        await client.set_todos(phases=[m.TodoPhase(id="p1", name="Build", tasks=[m.TodoItem(id="t1", content="Write it", status="in_progress")])])
        await client.set_host_tools([])
        models = await client.get_available_models()
        offline = models.models[0]
        assert (await client.set_model(provider=offline.provider, model_id=offline.id)).id == offline.id
        await client.cycle_model()
        await client.set_thinking_level(level="off")
        await client.cycle_thinking_level()
        assert (await client.get_available_thinking_levels()).levels
        await client.set_steering_mode(mode="one-at-a-time")
        await client.set_follow_up_mode(mode="all")
        await client.set_interrupt_mode(mode="wait")
        await client.set_auto_compaction(enabled=False)
        await client.set_auto_retry(enabled=True)
        await client.set_event_options(partial_messages=True)
        await client.negotiate_protocol(protocol_version=2)
        assert "from-bash" in (await client.bash(command="echo from-bash")).output
        await client.abort_bash()
        assert (await client.get_session_stats()).totalMessages >= 2
        await client.compact()
        assert (await client.export_html(output_path=export_path)).path == export_path
        await client.set_session_name(name="client test")
        assert (await client.get_messages()).messages
        assert len((await client.get_messages_page(limit=1)).messages) == 1
        await client.get_commands()
        await client.get_available_commands()
        await client.get_last_assistant_text()
        await client.get_tree()
        await client.get_branch_messages()
        forkable = (await client.get_fork_messages()).messages
        assert len(forkable) >= 2
        await client.fork(entry_id=forkable[-1].entryId)
        branchable = (await client.get_fork_messages()).messages
        await client.branch(entry_id=branchable[-1].entryId)
        await client.clone()
        assert len((await client.list_sessions(scope="all")).sessions) >= 2
        await client.switch_session(session_path=session_file)
        await client.new_session()

    missing = [c for c in COMMAND_TYPES if c not in answered]
    assert missing == [], f"commands never answered success:true: {missing}"


async def test_a_missing_binary_is_a_spawn_error_not_an_exit(tmp_path: Any) -> None:
    with pytest.raises(AgentSpawnError) as caught:
        await AgentClient.spawn("agentwire-does-not-exist", "--mode", "rpc")
    assert "could not start the agent `agentwire-does-not-exist`" in str(caught.value)
    assert "not found on PATH" in str(caught.value)
    assert "AGENTWIRE_BIN" in str(caught.value)
    assert isinstance(caught.value.__cause__, FileNotFoundError)
    missing = str(tmp_path / "nope" / "agentwire")
    with pytest.raises(AgentSpawnError) as caught:
        await WireClient.spawn(missing, "--mode", "wire")
    assert f"`{missing}`" in str(caught.value) and "(not found)" in str(caught.value)
    not_executable = tmp_path / "agentwire"
    not_executable.write_text("")
    with pytest.raises(AgentSpawnError, match="not executable"):
        await AgentClient.spawn(str(not_executable))


def test_agentwire_command_reads_agentwire_bin() -> None:
    assert agentwire_command({"AGENTWIRE_BIN": "/opt/agentwire"}) == "/opt/agentwire"
    assert agentwire_command({"AGENTWIRE_BIN": ""}) == "agentwire"
    assert agentwire_command({}) == "agentwire"
