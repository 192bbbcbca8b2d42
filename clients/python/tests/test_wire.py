"""The wire (JSON-RPC) client against the real agentwire binary in --mode wire."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List

import pytest

from agentwire_client import AgentExitedError, WireClient, WireEvent, WireRequestError, models as m

from .conftest import Sandbox


def outputs(events: List[WireEvent]) -> List[Any]:
    return [e.payload.return_value.output for e in events if e.type == "ToolResult"]


async def test_initialize_turn_and_external_tool(sandbox: Sandbox) -> None:
    client = await sandbox.spawn_wire(
        [{"text": "Checking. ", "toolCalls": [{"id": "call_1", "name": "lookup_ticket", "arguments": {"id": "T-42"}}]}, {"text": "It is open."}]
    )
    async with client:
        async def lookup(payload: m.WireToolCallRequestPayload) -> Dict[str, Any]:
            assert payload.name == "lookup_ticket"
            assert json.loads(payload.arguments or "{}") == {"id": "T-42"}
            return {"return_value": {"is_error": False, "output": "status: open", "message": "", "display": []}}

        client.handle("ToolCallRequest", lookup)
        init = await client.initialize(
            protocol_version="1.10",
            client=m.WireClientInfo(name="py-test", version="1"),
            external_tools=[m.WireExternalTool(name="lookup_ticket", description="Look a ticket up.", parameters={"type": "object", "properties": {"id": {"type": "string"}}})],
        )
        assert init.protocol_version == "1.10"
        assert init.external_tools is not None and init.external_tools.accepted == ["lookup_ticket"]
        text: List[str] = []
        client.on("ContentPart", lambda e: text.append(e.payload.text) if isinstance(e.payload, m.WireTextPart) else None)
        outcome = await client.prompt_and_wait("check T-42")
        assert outcome.result.status == "finished"
        assert "".join(text) == "Checking. It is open."
        assert outputs(outcome.events) == ["status: open"]
        assert outcome.events[-1].type == "TurnEnd"


async def test_approvals_and_questions_through_handlers(sandbox: Sandbox) -> None:
    client = await sandbox.spawn_wire(
        [
            {"toolCalls": [{"id": "c1", "name": "bash", "arguments": {"command": "echo approved"}}]},
            {"toolCalls": [{"id": "q1", "name": "AskUserQuestion", "arguments": {"questions": [{"question": "Which?", "options": [{"label": "A"}, {"label": "B"}]}]}}]},
            {"text": "done"},
        ],
        ["--approval", "dangerous"],
    )
    async with client:
        asked: List[str] = []

        def approve(payload: m.WireApprovalRequestPayload) -> Dict[str, Any]:
            asked.append(payload.action)
            return {"response": "approve"}

        client.handle("ApprovalRequest", approve)
        client.handle("QuestionRequest", lambda p: {"answers": {p.questions[0].question: "B"}})
        await client.initialize(protocol_version="1.10", capabilities=m.WireClientCapabilities(supports_question=True))
        outcome = await client.prompt_and_wait("go")
        assert outcome.result.status == "finished"
        assert asked == ["run command"]
        assert outputs(outcome.events) == ["approved\n", '{"answers":{"Which?":"B"}}']


async def test_default_rejection_errors_and_cancel(sandbox: Sandbox) -> None:
    client = await sandbox.spawn_wire(
        [{"toolCalls": [{"id": "c1", "name": "bash", "arguments": {"command": "echo never"}}]}, {"text": "ok"}, {"text": "z" * 300, "chunkSize": 1, "delayMs": 20}],
        ["--approval", "dangerous"],
    )
    async with client:
        with pytest.raises(WireRequestError) as info:
            await client.steer(user_input="nobody")
        assert info.value.code == -32000
        first = await client.prompt_and_wait("run")
        denied = [e for e in first.events if e.type == "ToolResult"]
        assert denied[0].payload.return_value.is_error is True
        started = asyncio.get_running_loop().create_future()
        client.on("ContentPart", lambda e: None if started.done() else started.set_result(True))
        second = asyncio.ensure_future(client.prompt_and_wait("long"))
        await started
        await client.cancel()
        assert (await second).result.status == "cancelled"


async def test_pending_calls_fail_when_the_agent_exits() -> None:
    client = await WireClient.spawn("sh", "-c", "read line; echo boom >&2; exit 4")
    with pytest.raises(AgentExitedError) as info:
        await client.replay()
    assert info.value.exit.code == 4
    assert "boom" in info.value.exit.stderr_tail
