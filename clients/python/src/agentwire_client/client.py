"""An asyncio client of one agent process speaking the JSONL RPC protocol."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Dict,
    List,
    Mapping,
    Optional,
    Set,
    Tuple,
    Union,
    cast,
    get_args,
)


from . import models as m
from .chunks import ChunkReassembler, ChunkSequenceError, DEFAULT_MAX_FRAME_BYTES, split_frame
from ._connection import AgentExitedError, Connection, ExitInfo, StdioClient, Writer, jsonable, maybe_await, parse_as, spawn_process
from .protocol import EVENT_MODELS, AgentEvent, CommandMethods, EventSubscriptions, Handler

#: Any frame read from the agent: a known event or UI / host tool frame as its model, a response,
#: or the raw dict of a frame whose ``type`` this client does not know.
Frame = Union[AgentEvent, m.RpcResponse, Dict[str, Any]]

#: A UI request (``extension_ui_request``), as its model.
UiRequest = Union[
    m.UiSelectRequest,
    m.UiConfirmRequest,
    m.UiInputRequest,
    m.UiEditorRequest,
    m.UiNotifyRequest,
    m.UiSetStatusRequest,
    m.UiSetWidgetRequest,
    m.UiSetTitleRequest,
    m.UiSetEditorTextRequest,
    m.UiCancelRequest,
]

#: A dialog's answer: ``{"value": ...}`` (select, input, editor), ``{"confirmed": bool}`` (confirm)
#: or ``{"cancelled": True}``.
UiAnswer = Dict[str, Any]

#: The same members as a tuple for isinstance checks (tests/test_client.py checks both match the
#: generated ``ExtensionUiRequest`` union).
_UI_REQUEST_TYPES: Tuple[type, ...] = get_args(UiRequest)

DIALOG_METHODS = frozenset({"select", "confirm", "input", "editor"})


class AgentCommandError(Exception):
    """The agent answered ``success: false``."""

    def __init__(self, command: str, reason: str, code: Optional[str]) -> None:
        super().__init__(f"{command} failed: {reason}")
        self.command = command
        self.reason = reason
        self.code = code


class RequestTimeoutError(asyncio.TimeoutError):
    """No response within the request's timeout."""

    def __init__(self, command: str, timeout: float) -> None:
        super().__init__(f"{command}: no response within {timeout} s")
        self.command = command
        self.timeout = timeout


class EventBufferOverflowError(Exception):
    """An ``events()`` iterator fell too far behind; it ends with this instead of dropping frames."""


@dataclass
class UiContext:
    """Handed to a UI handler."""

    #: Set when the agent withdraws the dialog (its timeout expired) or the process exits.
    withdrawn: asyncio.Event = field(default_factory=asyncio.Event)


#: Answers UI requests: returns a :data:`UiAnswer` for dialogs (None counts as cancelled); the
#: return value of fire-and-forget methods (notify, setStatus, ...) is ignored. Plain or async.
UiHandler = Callable[[UiRequest, UiContext], Union[Optional[UiAnswer], Awaitable[Optional[UiAnswer]]]]


def default_ui_handler(request: UiRequest, context: UiContext) -> Optional[UiAnswer]:
    """Without a handler: dialogs are cancelled (a confirm is answered ``confirmed: False``)."""
    if request.method == "confirm":
        return {"confirmed": False}
    return {"cancelled": True}


ToolResult = Union[str, m.AgentToolResult, Dict[str, Any]]


class HostToolContext:
    """Handed to a host tool handler. When the agent cancels the call the handler's task is
    cancelled (``asyncio.CancelledError``) and :attr:`cancelled` is set."""

    def __init__(self, client: "AgentClient", call: m.HostToolCall) -> None:
        self._client = client
        #: The ``host_tool_call`` frame.
        self.call = call
        #: Set when the agent cancels the call or the process exits.
        self.cancelled = asyncio.Event()

    async def update(self, partial: ToolResult) -> None:
        """Sends a ``host_tool_update`` with progress so far."""
        if not self.cancelled.is_set():
            await self._client.send_frame({"type": "host_tool_update", "id": self.call.id, "partialResult": _tool_result(partial)})


#: Runs one host tool call: a string result becomes one text block; an exception an error result.
HostToolHandler = Callable[[Dict[str, Any], HostToolContext], Awaitable[ToolResult]]


@dataclass
class PromptOutcome:
    """What :meth:`AgentClient.prompt_and_wait` returns."""

    #: The ``prompt_result`` that ended the prompt.
    result: m.PromptResultEvent
    #: Every frame between the prompt and its ``prompt_result`` (responses excluded).
    events: List[Frame]
    #: The prompt's response data (pi sends none).
    accepted: Optional[m.PromptAccepted]


def _tool_result(value: ToolResult) -> Any:
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}]}
    return jsonable(value)


def parse_frame(raw: Dict[str, Any]) -> Frame:
    """The model of a frame from the agent; the dict itself when its ``type`` is unknown."""
    kind = raw.get("type")
    if kind == "response":
        result: Frame = m.RpcResponse.model_validate(raw)
        return result
    model = EVENT_MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        return raw
    event: Frame = parse_as(model, raw)
    return event


class AgentClient(StdioClient, CommandMethods, EventSubscriptions):
    """A client of one agent process.

    Every command has a typed method (``await client.set_model(provider=..., model_id=...)``);
    frames arrive through ``on(type, handler)``, ``on_frame(handler)`` (every frame, unknown
    types included as dicts) and ``events()``; ``prompt_and_wait`` runs one prompt to its
    ``prompt_result``. Use :meth:`spawn` or :meth:`attach` to make one.

    Large frames (omp protocol v2): inbound ``rpc_chunk`` frames are always reassembled before
    anything sees them; after ``negotiate_protocol(protocol_version=2)`` succeeds, frames longer
    than the agent's ``ready.maxFrameBytes`` are sent as ``rpc_chunk`` frames too.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: Writer,
        process: Optional[asyncio.subprocess.Process] = None,
        *,
        request_timeout: Optional[float] = 60.0,
        ui_handler: Optional[UiHandler] = None,
        stderr_tail_bytes: int = 8192,
        event_buffer_limit: int = 100_000,
    ) -> None:
        self._request_timeout = request_timeout
        self._ui_handler: UiHandler = ui_handler or default_ui_handler
        self._event_buffer_limit = event_buffer_limit
        self._pending: Dict[str, "asyncio.Future[Any]"] = {}
        self._pending_models: Dict[str, Any] = {}
        self._handlers: Dict[str, Set[Handler]] = {}
        self._frame_handlers: Set[Callable[[Frame], Any]] = set()
        self._invalid_line_handlers: Set[Callable[[bytes, Exception], Any]] = set()
        self._host_tool_handlers: Dict[str, HostToolHandler] = {}
        self._host_tool_calls: Dict[str, "asyncio.Task[None]"] = {}
        self._host_tool_contexts: Dict[str, HostToolContext] = {}
        self._dialogs: Dict[str, UiContext] = {}
        self._background: Set["asyncio.Task[Any]"] = set()
        self._next_id = 1
        #: The protocol version in use (2 after a successful ``negotiate_protocol``).
        self._protocol_version = 1
        #: The agent's physical frame limit (its ``ready`` frame), for chunking outbound frames.
        self._max_frame_bytes = DEFAULT_MAX_FRAME_BYTES
        self._chunks_sent = 0
        self._chunks = ChunkReassembler()
        self._connection = Connection(reader, writer, process, self._handle_line, self._finish, stderr_tail_bytes)

    @classmethod
    async def spawn(
        cls,
        program: str,
        *args: str,
        cwd: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        request_timeout: Optional[float] = 60.0,
        ui_handler: Optional[UiHandler] = None,
        stderr_tail_bytes: int = 8192,
        event_buffer_limit: int = 100_000,
    ) -> "AgentClient":
        """Starts ``program args`` and speaks the protocol on its stdin/stdout."""
        process = await spawn_process(program, args, cwd, env)
        assert process.stdin is not None and process.stdout is not None
        client = cls(
            process.stdout,
            process.stdin,
            process,
            request_timeout=request_timeout,
            ui_handler=ui_handler,
            stderr_tail_bytes=stderr_tail_bytes,
            event_buffer_limit=event_buffer_limit,
        )
        return client

    def set_ui_handler(self, handler: Optional[UiHandler]) -> None:
        """Replaces the UI handler (None restores :func:`default_ui_handler`)."""
        self._ui_handler = handler or default_ui_handler

    def on_frame(self, handler: Callable[[Frame], Any]) -> Callable[[], None]:
        """Calls ``handler`` with every frame read, responses and unknown types included."""
        self._frame_handlers.add(handler)
        return lambda: self._frame_handlers.discard(handler)

    def on_invalid_line(self, handler: Callable[[bytes, Exception], Any]) -> Callable[[], None]:
        """Calls ``handler`` for each stdout line that is not a JSON object (it is otherwise skipped)."""
        self._invalid_line_handlers.add(handler)
        return lambda: self._invalid_line_handlers.discard(handler)

    def _subscribe(self, event_type: str, handler: Handler) -> Callable[[], None]:
        self._handlers.setdefault(event_type, set()).add(handler)
        return lambda: self._handlers.get(event_type, set()).discard(handler)

    async def events(self) -> AsyncIterator[Frame]:
        """Every frame from now on except responses, in order, until the process exits.

        Unread frames are buffered up to ``event_buffer_limit``; past it the iterator raises
        :class:`EventBufferOverflowError` rather than silently dropping frames.
        """
        queue: "asyncio.Queue[Optional[Frame]]" = asyncio.Queue()
        overflow = False

        def push(frame: Frame) -> None:
            nonlocal overflow
            if isinstance(frame, m.RpcResponse):
                return
            if queue.qsize() >= self._event_buffer_limit:
                overflow = True
            else:
                queue.put_nowait(frame)

        unsubscribe = self.on_frame(push)
        closer = asyncio.get_running_loop().create_task(self._connection.exited.wait())
        closer.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while True:
                if overflow:
                    raise EventBufferOverflowError(f"more than {self._event_buffer_limit} frames buffered in an unread events() iterator")
                frame = await queue.get()
                if frame is None:
                    return
                yield frame
        finally:
            unsubscribe()
            closer.cancel()

    async def prompt_and_wait(
        self,
        message: str,
        *,
        images: Optional[List[m.ImageContent]] = None,
        streaming_behavior: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> PromptOutcome:
        """Sends a prompt and returns on the ``prompt_result`` for it, with every frame of the run.

        Raises when the prompt is refused, after ``timeout`` seconds (default: none) or when the
        process exits.
        """
        request_id = self._allocate_id()
        loop = asyncio.get_running_loop()
        finished: "asyncio.Future[m.PromptResultEvent]" = loop.create_future()
        events: List[Frame] = []

        def collect(frame: Frame) -> None:
            if isinstance(frame, m.PromptResultEvent) and frame.id == request_id:
                if not finished.done():
                    finished.set_result(frame)
            elif not isinstance(frame, m.RpcResponse):
                events.append(frame)

        unsubscribe = self.on_frame(collect)
        try:
            frame: Dict[str, Any] = {"type": "prompt", "message": message}
            if images is not None:
                frame["images"] = images
            if streaming_behavior is not None:
                frame["streamingBehavior"] = streaming_behavior
            accepted = await self._request(frame, m.PromptAccepted, self._request_timeout, request_id)
            result = await self._until_exit(finished, "prompt", timeout)
            return PromptOutcome(result=result, events=events, accepted=accepted)
        finally:
            unsubscribe()

    async def wait_until_settled(self, *, timeout: Optional[float] = None) -> m.AgentSettledEvent:
        """Returns on the next ``agent_settled`` (pi 1.6's ``waitForIdle``): the agent has no
        automatic work left (retries, compaction, queued steering and follow-ups) for the run in
        progress or the next one to start. Call it before or right after sending the prompt; a
        prompt answered ``disposition: "handled"`` starts no run and brings no ``agent_settled``.

        Raises after ``timeout`` seconds (default: none) or when the process exits.
        """
        loop = asyncio.get_running_loop()
        settled: "asyncio.Future[m.AgentSettledEvent]" = loop.create_future()

        def on_settled(frame: m.AgentSettledEvent) -> None:
            if not settled.done():
                settled.set_result(frame)

        unsubscribe = self.on("agent_settled", on_settled)
        try:
            return await self._until_exit(settled, "agent_settled", timeout)
        finally:
            unsubscribe()

    async def set_host_tools(
        self,
        tools: List[m.HostToolDefinition],
        handlers: Optional[Mapping[str, HostToolHandler]] = None,
        *,
        timeout: Optional[float] = None,
    ) -> m.HostToolNames:
        """Registers host tools (``set_host_tools``), replacing earlier ones, with the async
        callables that run them. A tool without a handler still registers; calls to it are
        answered with an error result."""
        self._host_tool_handlers = dict(handlers or {})
        result: m.HostToolNames = await self._call({"type": "set_host_tools", "tools": tools}, m.HostToolNames, timeout)
        return result

    async def negotiate_protocol(self, *, protocol_version: int, timeout: Optional[float] = None) -> m.NegotiatedProtocol:
        """Switches to omp's RPC protocol 2 (``negotiate_protocol``): once the agent accepts,
        frames longer than its ``ready.maxFrameBytes`` are sent as ``rpc_chunk`` frames. Raises
        :class:`AgentCommandError` for a version the agent does not speak (nothing changes then)."""
        negotiated = await super().negotiate_protocol(protocol_version=protocol_version, timeout=timeout)
        self._protocol_version = negotiated.protocolVersion
        return negotiated

    async def send_frame(self, frame: Mapping[str, Any]) -> None:
        """Writes one raw frame (a sub-protocol answer, or a deliberate test of bad input);
        chunked when protocol 2 is on and it is too long."""
        if self._protocol_version < 2:
            await self._connection.write(frame)
            return
        text = json.dumps(jsonable(dict(frame)), ensure_ascii=False).encode()
        if len(text) <= self._max_frame_bytes:
            await self._connection.write_text(text)
            return
        self._chunks_sent += 1
        for chunk in split_frame(text, f"rpc-{self._chunks_sent}"):
            await self._connection.write(chunk)

    # -- internals -------------------------------------------------------------------------

    async def _call(self, frame: Dict[str, Any], response_model: Any, timeout: Optional[float]) -> Any:
        return await self._request(frame, response_model, timeout if timeout is not None else self._request_timeout, None)

    def _allocate_id(self) -> str:
        request_id = f"req-{self._next_id}"
        self._next_id += 1
        return request_id

    async def _request(self, frame: Dict[str, Any], response_model: Any, timeout: Optional[float], request_id: Optional[str]) -> Any:
        if self._connection.exit_info is not None:
            raise AgentExitedError(self._connection.exit_info)
        request_id = request_id or self._allocate_id()
        future: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._pending_models[request_id] = response_model
        try:
            await self.send_frame({"id": request_id, **frame})
            if timeout is None or timeout <= 0:
                return await future
            try:
                return await asyncio.wait_for(asyncio.shield(future), timeout)
            except asyncio.TimeoutError:
                raise RequestTimeoutError(str(frame["type"]), timeout) from None
        finally:
            self._pending.pop(request_id, None)
            self._pending_models.pop(request_id, None)

    async def _until_exit(self, future: "asyncio.Future[Any]", command: str, timeout: Optional[float]) -> Any:
        exited = asyncio.get_running_loop().create_task(self._connection.exited.wait())
        try:
            done, _ = await asyncio.wait({future, exited}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            exited.cancel()
        if future in done:
            return future.result()
        if self._connection.exit_info is not None:
            raise AgentExitedError(self._connection.exit_info)
        raise RequestTimeoutError(command, timeout or 0)

    def _spawn_background(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _finish(self, info: ExitInfo) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(AgentExitedError(info))
        for task in self._host_tool_calls.values():
            task.cancel()
        for ctx in self._host_tool_contexts.values():
            ctx.cancelled.set()
        for dialog in self._dialogs.values():
            dialog.withdrawn.set()

    async def _handle_line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            raw = json.loads(line)
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
        except ValueError as error:
            for line_handler in list(self._invalid_line_handlers):
                await maybe_await(line_handler(line.rstrip(b"\n"), error))
            return
        kind = raw.get("type")
        if kind == "rpc_chunk":
            # Transparent: handlers see the reassembled frame, never its chunks.
            try:
                whole = self._chunks.push(raw)
            except ChunkSequenceError as error:
                for line_handler in list(self._invalid_line_handlers):
                    await maybe_await(line_handler(line.rstrip(b"\n"), error))
                return
            if whole is not None:
                await self._handle_line(whole)
            return
        if kind == "ready" and isinstance(raw.get("maxFrameBytes"), int) and raw["maxFrameBytes"] > 0:
            self._max_frame_bytes = raw["maxFrameBytes"]
        frame = parse_frame(raw)
        if isinstance(frame, m.RpcResponse):
            self._handle_response(frame)
        elif isinstance(frame, m.HostToolCall):
            self._start_host_tool(frame)
        elif isinstance(frame, m.HostToolCancel):
            self._cancel_host_tool(frame.targetId)
        elif isinstance(frame, _UI_REQUEST_TYPES):
            self._handle_ui_request(cast(UiRequest, frame))  # narrowed by the tuple above
        for frame_handler in list(self._frame_handlers):
            await maybe_await(frame_handler(frame))
        if isinstance(kind, str):
            for typed_handler in list(self._handlers.get(kind, ())):
                await maybe_await(typed_handler(frame))

    def _handle_response(self, response: m.RpcResponse) -> None:
        request_id = response.id
        future = self._pending.get(request_id) if isinstance(request_id, str) else None
        if future is None or future.done():
            return  # not ours (timed out, or no id): still delivered to frame handlers
        if not response.success:
            future.set_exception(AgentCommandError(response.command, response.error or "unknown error", response.code))
            return
        model = self._pending_models.get(request_id) if isinstance(request_id, str) else None
        try:
            future.set_result(None if model is None or response.data is None else parse_as(model, response.data))
        except Exception as error:  # a response that does not match the schema
            future.set_exception(error)

    def _start_host_tool(self, call: m.HostToolCall) -> None:
        context = HostToolContext(self, call)
        handler = self._host_tool_handlers.get(call.toolName)

        async def run() -> None:
            try:
                if handler is None:
                    raise LookupError(f"no handler registered for host tool {call.toolName}")
                result = await handler(dict(call.arguments), context)
                frame: Dict[str, Any] = {"type": "host_tool_result", "id": call.id, "result": _tool_result(result)}
            except asyncio.CancelledError:
                return  # the agent cancelled the call: it expects no result
            except Exception as error:  # the tool failed: an error result, not a dead client
                frame = {"type": "host_tool_result", "id": call.id, "result": _tool_result(str(error)), "isError": True}
            finally:
                self._host_tool_calls.pop(call.id, None)
                self._host_tool_contexts.pop(call.id, None)
            if not context.cancelled.is_set():
                await self.send_frame(frame)

        self._host_tool_contexts[call.id] = context
        self._host_tool_calls[call.id] = asyncio.get_running_loop().create_task(run())

    def _cancel_host_tool(self, target_id: str) -> None:
        context = self._host_tool_contexts.get(target_id)
        if context is not None:
            context.cancelled.set()
        task = self._host_tool_calls.get(target_id)
        if task is not None:
            task.cancel()

    def _handle_ui_request(self, request: UiRequest) -> None:
        if isinstance(request, m.UiCancelRequest):
            dialog = self._dialogs.pop(request.targetId, None)
            if dialog is not None:
                dialog.withdrawn.set()
            return
        is_dialog = request.method in DIALOG_METHODS
        context = UiContext()
        if is_dialog:
            self._dialogs[request.id] = context
        handler = self._ui_handler

        async def run() -> None:
            try:
                answer = await maybe_await(handler(request, context))
            except Exception:
                answer = None
            if not is_dialog or self._dialogs.pop(request.id, None) is None:
                return
            await self.send_frame({"type": "extension_ui_response", "id": request.id, **(answer or {"cancelled": True})})

        self._spawn_background(run())
