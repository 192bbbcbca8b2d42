"""Typed asyncio client for agents speaking the JSONL RPC protocol (agentwire, pi, oh-my-pi) over
stdio. The pydantic models (:mod:`agentwire_client.models`) and the command methods
(:mod:`agentwire_client.protocol`, :mod:`agentwire_client.wire_protocol`) are generated from
agentwire's JSON Schema. :class:`AgentClient` speaks the JSONL RPC dialect, :class:`WireClient`
the JSON-RPC 2.0 wire dialect."""

from . import models
from ._connection import AgentExitedError, AgentSpawnError, ExitInfo, agentwire_command
from .chunks import ChunkReassembler, ChunkSequenceError, split_frame
from .client import (
    AgentClient,
    AgentCommandError,
    EventBufferOverflowError,
    Frame,
    HostToolContext,
    HostToolHandler,
    PromptOutcome,
    RequestTimeoutError,
    UiAnswer,
    UiContext,
    UiHandler,
    UiRequest,
    default_ui_handler,
    parse_frame,
)
from .protocol import COMMAND_TYPES, EVENT_MODELS, RESPONSE_MODELS, AgentEvent
from .wire import WireClient, WireEvent, WirePromptOutcome, WireRequestError, WireRequestHandler, WireTimeoutError

__all__ = [
    "AgentClient",
    "AgentCommandError",
    "AgentEvent",
    "AgentExitedError",
    "AgentSpawnError",
    "COMMAND_TYPES",
    "ChunkReassembler",
    "ChunkSequenceError",
    "EVENT_MODELS",
    "EventBufferOverflowError",
    "ExitInfo",
    "Frame",
    "HostToolContext",
    "HostToolHandler",
    "PromptOutcome",
    "RESPONSE_MODELS",
    "RequestTimeoutError",
    "UiAnswer",
    "UiContext",
    "UiHandler",
    "UiRequest",
    "WireClient",
    "WireEvent",
    "WirePromptOutcome",
    "WireRequestError",
    "WireRequestHandler",
    "WireTimeoutError",
    "agentwire_command",
    "default_ui_handler",
    "models",
    "parse_frame",
    "split_frame",
]
