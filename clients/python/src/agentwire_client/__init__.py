"""Typed asyncio client for agents speaking the JSONL RPC protocol (agentwire, pi, oh-my-pi) over
stdio. The pydantic models (:mod:`agentwire_client.models`) and the command methods
(:mod:`agentwire_client.protocol`) are generated from agentwire's JSON Schema."""

from . import models
from .client import (
    AgentClient,
    AgentCommandError,
    AgentExitedError,
    EventBufferOverflowError,
    ExitInfo,
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

__all__ = [
    "AgentClient",
    "AgentCommandError",
    "AgentEvent",
    "AgentExitedError",
    "COMMAND_TYPES",
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
    "default_ui_handler",
    "models",
    "parse_frame",
]
