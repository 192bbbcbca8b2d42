"""omp RPC protocol v2 framing (``negotiate_protocol`` with ``protocolVersion: 2``).

A frame longer than the agent's ``ready.maxFrameBytes`` travels as ``rpc_chunk`` frames, each
carrying the base64 of at most 256 KiB of the frame's UTF-8 JSON text, in order and back to back.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

#: Bytes of the frame one chunk carries (omp's and agentwire's slice size).
CHUNK_DATA_BYTES = 256 * 1024

#: omp's physical frame limit, used until the agent's ``ready`` frame says otherwise.
DEFAULT_MAX_FRAME_BYTES = 1024 * 1024

#: omp's reassembly limit.
DEFAULT_MAX_REASSEMBLED_FRAME_BYTES = 64 * 1024 * 1024


def split_frame(text: bytes, chunk_id: str, data_bytes: int = CHUNK_DATA_BYTES) -> List[Dict[str, Any]]:
    """The ``rpc_chunk`` frames carrying ``text`` (one frame's UTF-8 JSON, without its LF)."""
    count = max(1, -(-len(text) // data_bytes))
    return [
        {
            "type": "rpc_chunk",
            "chunkId": chunk_id,
            "index": index,
            "count": count,
            "byteLength": len(text),
            "data": base64.b64encode(text[index * data_bytes : (index + 1) * data_bytes]).decode("ascii"),
        }
        for index in range(count)
    ]


class ChunkSequenceError(ValueError):
    """A chunk sequence broke the rules; it is discarded."""


@dataclass
class _Open:
    chunk_id: str
    count: int
    byte_length: int
    next: int = 0
    parts: List[bytes] = field(default_factory=list)
    received: int = 0


class ChunkReassembler:
    """Reassembles inbound ``rpc_chunk`` sequences one at a time.

    :meth:`push` returns the whole frame's bytes with the last chunk, ``None`` before it, and
    raises :class:`ChunkSequenceError` for a broken sequence, which is then discarded: its later
    chunks (same id, index above 0) are dropped silently.
    """

    def __init__(self, limit: int = DEFAULT_MAX_REASSEMBLED_FRAME_BYTES) -> None:
        self._limit = limit
        self._open: Optional[_Open] = None
        self._dropping: Optional[str] = None

    def push(self, chunk: Mapping[str, Any]) -> Optional[bytes]:
        chunk_id = str(chunk.get("chunkId"))
        index, count, byte_length = chunk.get("index"), chunk.get("count"), chunk.get("byteLength")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (index, count, byte_length)):
            raise ChunkSequenceError(f"rpc_chunk {chunk_id}: index, count and byteLength must be integers")
        assert isinstance(index, int) and isinstance(count, int) and isinstance(byte_length, int)
        last = index + 1 >= count
        # Index 0 under a refused id is a new sequence (ids may be reused).
        if index > 0 and self._dropping == chunk_id:
            if last:
                self._dropping = None
            return None
        self._dropping = None

        def fail(message: str) -> ChunkSequenceError:
            self._open = None
            self._dropping = chunk_id
            return ChunkSequenceError(f"rpc_chunk {chunk_id}: {message}")

        open_ = self._open
        if open_ is not None and open_.chunk_id != chunk_id:
            self._open = None
            self._dropping = open_.chunk_id
            raise ChunkSequenceError(f"rpc_chunk {open_.chunk_id}: interrupted by {chunk_id} after {open_.next} of {open_.count} chunks")
        if open_ is None:
            if index != 0:
                raise fail(f"a sequence starts at index 0, not {index}")
            if byte_length > self._limit:
                raise fail(f"byteLength {byte_length} exceeds the {self._limit}-byte reassembly limit")
            open_ = _Open(chunk_id, count, byte_length)
        elif count != open_.count or byte_length != open_.byte_length:
            raise fail("count / byteLength changed mid-sequence")
        elif index != open_.next:
            raise fail(f"index {index} where {open_.next} was expected")
        data = chunk.get("data")
        try:
            if not isinstance(data, str):
                raise ValueError("not a string")
            part = base64.b64decode(data, validate=True)
        except (ValueError, binascii.Error):
            raise fail("data is not valid base64") from None
        open_.received += len(part)
        if open_.received > open_.byte_length:
            raise fail(f"more data than byteLength {open_.byte_length}")
        open_.parts.append(part)
        open_.next = index + 1
        if open_.next < open_.count:
            self._open = open_
            return None
        self._open = None
        if open_.received != open_.byte_length:
            raise fail(f"the chunks carry {open_.received} bytes but byteLength is {open_.byte_length}")
        return b"".join(open_.parts)
