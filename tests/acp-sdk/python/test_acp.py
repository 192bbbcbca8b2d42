"""Drives `agentwire --mode acp` (AGENTWIRE_BIN) with the official ACP Python SDK
(`agent-client-protocol`: `spawn_agent_process` / `ClientSideConnection`). The offline model's
script (`--model-script`) makes the tool calls happen."""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

BIN = os.environ.get("AGENTWIRE_BIN")
if not BIN:
    raise RuntimeError("set AGENTWIRE_BIN to the agentwire binary")


class Recorder:
    """A client: records session updates and answers permission requests with `decide`."""

    def __init__(self, decide: Any = None) -> None:
        self.updates: list[Any] = []
        self.asks: list[Any] = []
        self.decide = decide or (lambda ask: "cancelled")

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> RequestPermissionResponse:
        self.asks.append((tool_call, options))
        choice = self.decide(tool_call)
        if choice == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=choice))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    def kinds(self) -> list[str]:
        return [u.session_update for _, u in self.updates]


CREATED: list[Path] = []
atexit.register(lambda: [shutil.rmtree(d, ignore_errors=True) for d in CREATED])


def dirs() -> tuple[Path, Path]:
    """A working directory and a config directory, both removed when the tests end."""
    made = Path(tempfile.mkdtemp(prefix="acp-py-cwd-")), Path(tempfile.mkdtemp(prefix="acp-py-cfg-"))
    CREATED.extend(made)
    return made


def args(cwd: Path, config: Path, script: list[dict[str, Any]], *extra: str) -> list[str]:
    path = config / f"script-{uuid.uuid4().hex}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in script))
    return ["--mode", "acp", "--cwd", str(cwd), "--config-dir", str(config), "--model-script", str(path), *extra]


def env() -> dict[str, str]:
    e = dict(os.environ)
    for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "AGENTWIRE_CONFIG_DIR"):
        e.pop(k, None)
    return e


async def new_session(conn: Any, cwd: Path) -> str:
    init = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
    assert init.protocol_version == 1
    assert init.agent_capabilities.load_session is True
    assert [m.id for m in init.auth_methods] == ["provider-keys"]
    caps = init.agent_capabilities.session_capabilities
    assert caps.close is not None and caps.delete is not None
    session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
    return str(session.session_id)


SLOW = {"text": "a slow answer, two characters at a time, going on and on for a while", "chunkSize": 2, "delayMs": 40}


async def start_streaming(conn: Any, client: Recorder, sid: str) -> asyncio.Task[Any]:
    """Starts a prompt of the SLOW reply; returns it once its first chunk arrived."""
    prompt = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("go")]))
    while "agent_message_chunk" not in client.kinds():
        await asyncio.sleep(0.01)
    return prompt


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_initialize_new_and_streaming_prompt() -> None:
    async def go() -> None:
        cwd, config = dirs()
        client = Recorder()
        script = [{"thinking": "thinking hard", "text": "Hello from the Python SDK test", "chunkSize": 6}]
        async with spawn_agent_process(client, BIN, *args(cwd, config, script), env=env()) as (conn, _proc):
            sid = await new_session(conn, cwd)
            res = await conn.prompt(session_id=sid, prompt=[text_block("hi")])
            assert res.stop_reason == "end_turn"
            chunks = [u.content.text for _, u in client.updates if u.session_update == "agent_message_chunk"]
            assert len(chunks) > 1 and "".join(chunks) == "Hello from the Python SDK test"
            thought = "".join(u.content.text for _, u in client.updates if u.session_update == "agent_thought_chunk")
            assert thought == "thinking hard"
            assert "available_commands_update" in client.kinds()
            assert all(s == sid for s, _ in client.updates)

    run(go())


def test_permission_granted_and_rejected() -> None:
    async def go() -> None:
        cwd, config = dirs()
        script = [
            {"toolCalls": [{"id": "g1", "name": "bash", "arguments": {"command": "echo granted > granted.txt"}}]},
            {"text": "ran"},
            {"toolCalls": [{"id": "r1", "name": "edit", "arguments": {"path": "granted.txt", "oldText": "granted", "newText": "changed"}}]},
            {"text": "did not"},
        ]
        client = Recorder(lambda call: "allow_once" if call.tool_call_id == "g1" else "reject_once")
        async with spawn_agent_process(client, BIN, *args(cwd, config, script), env=env()) as (conn, _proc):
            sid = await new_session(conn, cwd)
            assert (await conn.prompt(session_id=sid, prompt=[text_block("run it")])).stop_reason == "end_turn"
            assert (cwd / "granted.txt").read_text() == "granted\n"
            done = [u for _, u in client.updates if u.session_update == "tool_call_update" and u.tool_call_id == "g1" and u.status == "completed"]
            assert done, client.kinds()
            assert (await conn.prompt(session_id=sid, prompt=[text_block("edit it")])).stop_reason == "end_turn"
            assert (cwd / "granted.txt").read_text() == "granted\n", "the rejected edit did not run"
            failed = [u for _, u in client.updates if u.session_update == "tool_call_update" and u.tool_call_id == "r1" and u.status == "failed"]
            assert failed
            assert [o.kind for o in client.asks[0][1]] == ["allow_once", "allow_always", "reject_once", "reject_always"]
            started = [u for _, u in client.updates if u.session_update == "tool_call" and u.tool_call_id == "r1"]
            assert started[0].kind == "edit"

    run(go())


def test_cancel_mid_stream() -> None:
    async def go() -> None:
        cwd, config = dirs()
        client = Recorder()
        async with spawn_agent_process(client, BIN, *args(cwd, config, [SLOW, {"text": "again"}]), env=env()) as (conn, _proc):
            sid = await new_session(conn, cwd)
            prompt = await start_streaming(conn, client, sid)
            loop = asyncio.get_running_loop()
            t = loop.time()
            await conn.cancel(session_id=sid)
            res = await prompt
            assert res.stop_reason == "cancelled"
            assert loop.time() - t < 2
            assert (await conn.prompt(session_id=sid, prompt=[text_block("again")])).stop_reason == "end_turn"

    run(go())


def test_load_in_a_fresh_process() -> None:
    async def go() -> None:
        cwd, config = dirs()
        first = Recorder()
        script = [{"toolCalls": [{"id": "h1", "name": "bash", "arguments": {"command": "echo py-history"}}]}, {"text": "first answer"}]
        async with spawn_agent_process(first, BIN, *args(cwd, config, script, "--approval", "never"), env=env()) as (conn, _proc):
            sid = await new_session(conn, cwd)
            assert (await conn.prompt(session_id=sid, prompt=[text_block("remember")])).stop_reason == "end_turn"
        second = Recorder()
        async with spawn_agent_process(second, BIN, *args(cwd, config, [{"text": "second answer"}]), env=env()) as (conn, _proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            listed = await conn.list_sessions(cwd=str(cwd))
            assert listed.sessions[0].session_id == sid
            await conn.load_session(cwd=str(cwd), session_id=sid, mcp_servers=[])
            # Everything, the commands first, was sent before the answer.
            assert second.kinds() == ["available_commands_update", "user_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk"]
            assert second.updates[1][1].content.text == "remember"
            assert (await conn.prompt(session_id=sid, prompt=[text_block("more")])).stop_reason == "end_turn"

    run(go())


def test_config_option_close_and_delete() -> None:
    async def go() -> None:
        cwd, config = dirs()
        client = Recorder()
        async with spawn_agent_process(client, BIN, *args(cwd, config, [SLOW, {"text": "kept"}]), env=env()) as (conn, _proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            created = await conn.new_session(cwd=str(cwd), mcp_servers=[])
            sid = str(created.session_id)
            model = next(o for o in created.config_options if o.id == "model")
            assert model.category == "model" and any(v.value == model.current_value for v in model.options)
            answer = await conn.set_config_option(config_id="mode", session_id=sid, value="auto")
            assert next(o for o in answer.config_options if o.id == "mode").current_value == "auto"
            assert "current_mode_update" in client.kinds()
            with pytest.raises(RequestError) as e:
                await conn.set_config_option(config_id="effort", session_id=sid, value="high")
            assert e.value.code == -32602

            # Close during a streaming prompt: it resolves cancelled; the session is gone.
            prompt = await start_streaming(conn, client, sid)
            loop = asyncio.get_running_loop()
            t = loop.time()
            await conn.close_session(session_id=sid)
            assert (await prompt).stop_reason == "cancelled"
            assert loop.time() - t < 3
            with pytest.raises(RequestError) as e:
                await conn.prompt(session_id=sid, prompt=[text_block("x")])
            assert e.value.code == -32002

            # Delete: the session leaves the list and cannot be loaded. The SDK (0.12.1) has no
            # typed session/delete yet; its JSON-RPC connection sends the request.
            other = str((await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id)
            assert (await conn.prompt(session_id=other, prompt=[text_block("hello")])).stop_reason == "end_turn"
            assert await conn._conn.send_request("session/delete", {"sessionId": other}) == {}
            assert other not in [s.session_id for s in (await conn.list_sessions(cwd=str(cwd))).sessions]
            with pytest.raises(RequestError) as e:
                await conn.load_session(cwd=str(cwd), session_id=other, mcp_servers=[])
            assert e.value.code == -32002

    run(go())


def test_errors_and_survival() -> None:
    async def go() -> None:
        cwd, config = dirs()
        client = Recorder()
        async with spawn_agent_process(client, BIN, *args(cwd, config, [{"text": "alive"}]), env=env()) as (conn, _proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            with pytest.raises(RequestError) as e:
                await conn.prompt(session_id="missing", prompt=[text_block("x")])
            assert e.value.code == -32002
            with pytest.raises(RequestError) as e:
                await conn.load_session(cwd=str(cwd), session_id="missing", mcp_servers=[])
            assert e.value.code == -32002
            with pytest.raises(RequestError) as e:
                await conn.new_session(cwd="not/absolute", mcp_servers=[])
            assert e.value.code == -32602
            sid = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
            assert (await conn.prompt(session_id=sid, prompt=[text_block("ok?")])).stop_reason == "end_turn"

    run(go())


class Editor(Recorder):
    """A client offering fs and terminal: its buffers hold unsaved text; commands run locally."""

    def __init__(self, buffers: dict[str, str]) -> None:
        super().__init__()
        self.buffers = buffers
        self.calls: list[tuple[str, ...]] = []
        self.terminals: dict[str, Any] = {}

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any) -> ReadTextFileResponse:
        self.calls.append(("read", path))
        return ReadTextFileResponse(content=self.buffers[path] if path in self.buffers else Path(path).read_text())

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.calls.append(("write", path))
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None, env: Any = None, cwd: str | None = None, output_byte_limit: int | None = None, **kwargs: Any) -> CreateTerminalResponse:
        self.calls.append(("terminal/create", command, cwd or ""))
        proc = await asyncio.create_subprocess_exec(command, *(args or []), cwd=cwd, stdout=asyncio.subprocess.PIPE)
        terminal_id = f"t{len(self.terminals) + 1}"
        self.terminals[terminal_id] = proc
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> WaitForTerminalExitResponse:
        code = await self.terminals[terminal_id].wait()
        return WaitForTerminalExitResponse(exit_code=code)

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        proc = self.terminals[terminal_id]
        out = (await proc.stdout.read()).decode()
        return TerminalOutputResponse(output=out, truncated=False, exit_status=TerminalExitStatus(exit_code=proc.returncode))

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> ReleaseTerminalResponse:
        self.calls.append(("terminal/release", terminal_id))
        del self.terminals[terminal_id]
        return ReleaseTerminalResponse()


def test_editor_fs_and_terminal() -> None:
    async def go() -> None:
        cwd, config = dirs()
        (cwd / "notes.txt").write_text("saved text on disk\n")
        notes, out = str(cwd / "notes.txt"), str(cwd / "out.txt")
        editor = Editor({notes: "unsaved text in the buffer\n"})
        script = [
            {"toolCalls": [{"id": "r1", "name": "read", "arguments": {"path": "notes.txt"}}]},
            {"toolCalls": [{"id": "w1", "name": "write", "arguments": {"path": "out.txt", "content": "from the model\n"}}]},
            {"toolCalls": [{"id": "e1", "name": "edit", "arguments": {"path": "notes.txt", "oldText": "unsaved", "newText": "edited"}}]},
            {"toolCalls": [{"id": "b1", "name": "bash", "arguments": {"command": "echo from-the-terminal"}}]},
            {"text": "done"},
        ]
        async with spawn_agent_process(editor, BIN, *args(cwd, config, script, "--approval", "never"), env=env()) as (conn, _proc):
            caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True)
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps)
            sid = str((await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id)
            assert (await conn.prompt(session_id=sid, prompt=[text_block("work")])).stop_reason == "end_turn"
        done = {u.tool_call_id: u for _, u in editor.updates if u.session_update == "tool_call_update" and u.status in ("completed", "failed")}
        assert "unsaved text in the buffer" in done["r1"].content[0].content.text
        assert editor.buffers[out] == "from the model\n" and not Path(out).exists()
        assert editor.buffers[notes] == "edited text in the buffer\n"
        assert (cwd / "notes.txt").read_text() == "saved text on disk\n"
        assert done["b1"].status == "completed" and "from-the-terminal" in done["b1"].content[0].content.text
        assert editor.calls == [("read", notes), ("write", out), ("read", notes), ("write", notes), ("terminal/create", "bash", str(cwd)), ("terminal/release", "t1")]

    run(go())
