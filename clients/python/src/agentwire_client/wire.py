"""An asyncio client of one agent speaking the JSON-RPC 2.0 wire dialect (``agentwire --mode
wire``, kimi-cli's ``--wire``)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Set, Union

from pydantic import BaseModel

from . import models as m
from ._connection import AgentExitedError, Connection, ExitInfo, StdioClient, Writer, jsonable, maybe_await, parse_as, spawn_process
from .wire_protocol import WIRE_AGENT_REQUESTS, WIRE_EVENT_MODELS, WireMethods


class WireRequestError(Exception):
    """The agent answered a wire request with a JSON-RPC error."""

    def __init__(self, method: str, code: int, reason: str, data: Any) -> None:
        super().__init__(f"{method} failed ({code}): {reason}")
        self.method = method
        self.code = code
        self.reason = reason
        self.data = data


class WireTimeoutError(asyncio.TimeoutError):
    """No result within the request's timeout."""


@dataclass
class WireEvent:
    """One event as delivered."""

    #: The event's type (``TurnBegin``, ``ContentPart``, …).
    type: str
    #: Its payload: the payload model when the schema knows the type, else the raw value.
    payload: Any
    #: True for historical events written by ``replay``.
    replayed: bool


#: Answers one kind of agent request: gets the payload model, returns the result as a dict
#: (its id field is filled in) or a model. Plain or async.
WireRequestHandler = Callable[[Any], Union[Mapping[str, Any], BaseModel, Awaitable[Union[Mapping[str, Any], BaseModel]]]]

#: Without a handler: approvals are rejected, tool calls fail, questions get no answers.
DEFAULT_ANSWERS: Dict[str, Dict[str, Any]] = {
    "ApprovalRequest": {"response": "reject", "feedback": "no approval handler on the client"},
    "ToolCallRequest": {"return_value": {"is_error": True, "output": "", "message": "no tool handler on the client", "display": []}},
    "QuestionRequest": {"answers": {}},
    "HookRequest": {"action": "allow"},
}

class WireClient(StdioClient, WireMethods):
    """A client of one wire-dialect agent: a typed method per wire method
    (``await client.prompt(user_input="hi")``), events through ``on(type, handler)`` and
    ``events()``, agent requests answered by ``handle(kind, handler)``. Replayed requests are
    never answered. Use :meth:`spawn` or :meth:`attach`."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: Writer,
        process: Optional[asyncio.subprocess.Process] = None,
        *,
        request_timeout: Optional[float] = 60.0,
        stderr_tail_bytes: int = 8192,
    ) -> None:
        self._request_timeout = request_timeout
        self._pending: Dict[str, "asyncio.Future[Any]"] = {}
        self._listeners: Dict[str, Set[Callable[[WireEvent], Any]]] = {}
        self._message_listeners: Set[Callable[[Dict[str, Any]], Any]] = set()
        self._handlers: Dict[str, WireRequestHandler] = {}
        self._tasks: Set["asyncio.Task[Any]"] = set()
        self._next_id = 1
        self._connection = Connection(reader, writer, process, self._handle_line, self._finish, stderr_tail_bytes)

    @classmethod
    async def spawn(
        cls,
        program: str,
        *args: str,
        cwd: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        request_timeout: Optional[float] = 60.0,
    ) -> "WireClient":
        """Starts ``program args`` (e.g. ``agentwire --mode wire``) and speaks JSON-RPC on its stdio."""
        process = await spawn_process(program, args, cwd, env)
        assert process.stdin is not None and process.stdout is not None
        return cls(process.stdout, process.stdin, process, request_timeout=request_timeout)

    def on(self, event_type: str, handler: Callable[[WireEvent], Any]) -> Callable[[], None]:
        """Calls ``handler`` with every event of this type (live and replayed)."""
        self._listeners.setdefault(event_type, set()).add(handler)
        return lambda: self._listeners.get(event_type, set()).discard(handler)

    def on_message(self, handler: Callable[[Dict[str, Any]], Any]) -> Callable[[], None]:
        """Calls ``handler`` with every message read (raw dicts: events, requests, responses)."""
        self._message_listeners.add(handler)
        return lambda: self._message_listeners.discard(handler)

    def handle(self, kind: str, handler: WireRequestHandler) -> None:
        """Answers one kind of agent request (``ApprovalRequest``, ``ToolCallRequest``,
        ``QuestionRequest``, ``HookRequest``)."""
        self._handlers[kind] = handler

    async def prompt_and_wait(self, user_input: Union[str, List[m.WireContentPart]], *, timeout: Optional[float] = None) -> "WirePromptOutcome":
        """Sends a prompt and returns its result with every live event of the turn."""
        events: List[WireEvent] = []

        def collect(message: Dict[str, Any]) -> None:
            if message.get("method") == "event" and message.get("replayed") is not True:
                params = message.get("params") or {}
                events.append(self._event(params, False))

        off = self.on_message(collect)
        try:
            result = await self.prompt(user_input=user_input, timeout=timeout if timeout is not None else 0)
            return WirePromptOutcome(result=result, events=events)
        finally:
            off()

    async def send_raw(self, message: Mapping[str, Any]) -> None:
        """Writes one raw message."""
        await self._connection.write(message)

    async def _call(self, method: str, params: Optional[Dict[str, Any]], result_model: Any, timeout: Optional[float]) -> Any:
        if self._connection.exit_info is not None:
            raise AgentExitedError(self._connection.exit_info)
        request_id = f"w-{self._next_id}"
        self._next_id += 1
        future: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._connection.write(message)
            wait = self._request_timeout if timeout is None else timeout
            try:
                raw = await (asyncio.wait_for(asyncio.shield(future), wait) if wait else future)
            except asyncio.TimeoutError:
                raise WireTimeoutError(f"{method}: no result within {wait} s") from None
        finally:
            self._pending.pop(request_id, None)
        if isinstance(raw, dict) and "error" in raw:
            e = raw["error"] or {}
            raise WireRequestError(method, int(e.get("code", 0)), str(e.get("message", "error")), e.get("data"))
        return parse_as(result_model, raw.get("result") if isinstance(raw, dict) else None)

    def _finish(self, info: ExitInfo) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(AgentExitedError(info))

    def _event(self, params: Dict[str, Any], replayed: bool) -> WireEvent:
        kind = str(params.get("type"))
        payload = params.get("payload")
        model = WIRE_EVENT_MODELS.get(kind)
        if model is not None:
            try:
                payload = parse_as(model, payload)
            except ValueError:
                pass  # a shape this client does not know: passed on raw
        return WireEvent(type=kind, payload=payload, replayed=replayed)

    async def _handle_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        for listener in list(self._message_listeners):
            await maybe_await(listener(message))
        method = message.get("method")
        if method == "event":
            event = self._event(message.get("params") or {}, message.get("replayed") is True)
            for handler in list(self._listeners.get(event.type, ())):
                await maybe_await(handler(event))
        elif method == "request":
            if message.get("replayed") is not True:
                task = asyncio.get_running_loop().create_task(self._answer(message))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        elif "id" in message and ("result" in message or "error" in message):
            future = self._pending.get(message["id"]) if isinstance(message["id"], str) else None
            if future is not None and not future.done():
                future.set_result(message)

    async def _answer(self, message: Dict[str, Any]) -> None:
        params = message.get("params") or {}
        kind = str(params.get("type"))
        raw_payload = params.get("payload") or {}
        spec = WIRE_AGENT_REQUESTS.get(kind)
        handler = self._handlers.get(kind)
        reply: Dict[str, Any] = {"jsonrpc": "2.0", "id": message.get("id")}
        try:
            if handler is None:
                if kind not in DEFAULT_ANSWERS:
                    raise LookupError(f"no handler for {kind}")
                result: Any = dict(DEFAULT_ANSWERS[kind])
            else:
                payload = parse_as(spec[0], raw_payload) if spec is not None else raw_payload
                result = jsonable(await maybe_await(handler(payload)))
            id_field = spec[2] if spec is not None else "request_id"
            result.setdefault(id_field, raw_payload.get("id", message.get("id")))
            reply["result"] = result
        except Exception as error:  # the handler failed: the agent gets an error, not silence
            reply["error"] = {"code": -32603, "message": str(error)}
        await self._connection.write(reply)


@dataclass
class WirePromptOutcome:
    """What :meth:`WireClient.prompt_and_wait` returns."""

    #: The prompt's result (``finished``, ``cancelled``, ``max_steps_reached``).
    result: m.WirePromptResult
    #: Every live event of the turn, in order.
    events: List[WireEvent]
