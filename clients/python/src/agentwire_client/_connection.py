"""The stdio transport shared by both clients: LF-only lines, frame writing, the stderr tail, the
exit (once), and the close ladder (close stdin, then SIGTERM, then SIGKILL)."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import signal as signal_module
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, Mapping, Optional, Protocol, Type, TypeVar

from pydantic import BaseModel, RootModel, TypeAdapter

_log = logging.getLogger("agentwire_client")

#: Longest line read from the agent.
LINE_LIMIT = 256 * 1024 * 1024


@dataclass
class ExitInfo:
    """How the agent process ended."""

    #: Exit code; None when killed by a signal or when attached to streams.
    code: Optional[int]
    #: Name of the signal that ended it (``"SIGKILL"``), if any.
    signal: Optional[str]
    #: The last bytes the process wrote to stderr.
    stderr_tail: str


class AgentExitedError(Exception):
    """The agent process exited (or its output ended) before answering."""

    def __init__(self, exit: ExitInfo) -> None:
        how = f"signal {exit.signal}" if exit.signal else f"code {exit.code}"
        tail = exit.stderr_tail.strip()
        super().__init__(f"agent exited ({how}) before answering" + (f"; stderr: {tail}" if tail else ""))
        self.exit = exit


class AgentSpawnError(OSError):
    """The agent process could not be started (the program was not found or not executable).

    Raised by ``AgentClient.spawn`` / ``WireClient.spawn`` with the ``OSError`` as its cause; it
    is an ``OSError`` itself (``errno`` kept), so code catching ``FileNotFoundError``'s base keeps
    working.
    """

    def __init__(self, program: str, cause: OSError) -> None:
        if isinstance(cause, FileNotFoundError):
            where = "" if "/" in program else " on PATH"
            hint = (
                f" (not found{where}). Install agentwire (`cargo install --path . --locked` in its checkout),"
                " pass the binary's path as the program, or set AGENTWIRE_BIN and use agentwire_command()"
            )
        elif isinstance(cause, PermissionError):
            hint = " (not executable)"
        else:
            hint = ""
        super().__init__(cause.errno, f"could not start the agent `{program}`: {cause.strerror or cause}{hint}")
        self.program = program


def agentwire_command(env: Optional[Mapping[str, str]] = None) -> str:
    """The agentwire binary to spawn: ``$AGENTWIRE_BIN`` when set and not empty, else ``agentwire``
    (found on PATH). Pass it as the program of ``AgentClient.spawn`` / ``WireClient.spawn``."""
    value = (os.environ if env is None else env).get("AGENTWIRE_BIN", "")
    return value or "agentwire"


class Writer(Protocol):
    """The agent's stdin (an ``asyncio.StreamWriter`` or anything shaped like one)."""

    def write(self, data: bytes) -> Any: ...

    async def drain(self) -> None: ...

    def close(self) -> Any: ...


def jsonable(value: Any) -> Any:
    """Pydantic models (and containers of them) as plain JSON values, by their wire names."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


_adapters: Dict[Any, TypeAdapter[Any]] = {}


def parse_as(model: Any, data: Any) -> Any:
    """``data`` validated as ``model`` (a model class or a union); a root model is unwrapped."""
    adapter = _adapters.get(model)
    if adapter is None:
        adapter = _adapters[model] = TypeAdapter(model)
    value = adapter.validate_python(data)
    return value.root if isinstance(value, RootModel) else value


async def maybe_await(value: Any) -> Any:
    """Awaits what a plain-or-async handler returned."""
    if inspect.isawaitable(value):
        return await value
    return value


async def spawn_process(program: str, args: Any, cwd: Optional[str], env: Optional[Mapping[str, str]]) -> asyncio.subprocess.Process:
    """Starts the agent with piped stdio; :class:`AgentSpawnError` when it cannot be started."""
    try:
        return await asyncio.create_subprocess_exec(
            program,
            *args,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=LINE_LIMIT,
        )
    except (FileNotFoundError, PermissionError) as error:
        # A missing cwd is also a FileNotFoundError; only blame the program when the cwd exists.
        if cwd is not None and not os.path.isdir(cwd):
            raise
        raise AgentSpawnError(program, error) from error


class Connection:
    """Reads lines from ``reader`` into ``on_line`` until EOF, then calls ``on_exit`` once."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: Writer,
        process: Optional[asyncio.subprocess.Process],
        on_line: Callable[[bytes], Awaitable[None]],
        on_exit: Callable[[ExitInfo], None],
        stderr_tail_bytes: int = 8192,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._process = process
        self._on_line = on_line
        self._on_exit = on_exit
        self._stderr_tail_bytes = stderr_tail_bytes
        self._stderr_tail = ""
        self.exit_info: Optional[ExitInfo] = None
        self.exited = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._stderr_task = loop.create_task(self._read_stderr()) if process is not None and process.stderr is not None else None
        self._read_task = loop.create_task(self._read_loop())

    @property
    def pid(self) -> Optional[int]:
        """The process id, when spawned."""
        return self._process.pid if self._process else None

    async def write(self, frame: Mapping[str, Any]) -> None:
        """Writes one frame as a line (dropped once the agent has exited)."""
        await self.write_text(json.dumps(jsonable(dict(frame)), ensure_ascii=False).encode())

    async def write_text(self, text: bytes) -> None:
        """Writes one frame already serialized as UTF-8 JSON (no LF) as a line."""
        if self.exit_info is not None:
            return
        try:
            self._writer.write(text + b"\n")
            await self._writer.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass

    async def wait_closed(self) -> ExitInfo:
        """Waits until the agent exits (or its output ends)."""
        await self.exited.wait()
        assert self.exit_info is not None
        return self.exit_info

    async def close(self, grace: float = 2.0) -> ExitInfo:
        """Closes stdin and waits for the exit; SIGTERM after ``grace`` seconds, SIGKILL after as long again."""
        if self.exit_info is None:
            try:
                self._writer.close()
            except (BrokenPipeError, ConnectionResetError):
                pass
        process = self._process
        if process is not None:
            for send in (None, process.terminate, process.kill):
                if send is not None and process.returncode is None:
                    send()
                try:
                    await asyncio.wait_for(asyncio.shield(self.exited.wait()), grace)
                    break
                except asyncio.TimeoutError:
                    continue
        return await self.wait_closed()

    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        while True:
            chunk = await self._process.stderr.read(4096)
            if not chunk:
                return
            self._stderr_tail = (self._stderr_tail + chunk.decode("utf-8", "replace"))[-self._stderr_tail_bytes :]

    async def _deliver(self, line: bytes) -> None:
        # A listener or handler that raises is the caller's bug, not the agent's: it is logged
        # (like an exception in an asyncio callback) and the next line is read as usual.
        try:
            await self._on_line(line)
        except Exception:
            _log.exception("a listener failed on a line from the agent")

    async def _read_loop(self) -> None:
        try:
            while True:
                try:
                    line = await self._reader.readuntil(b"\n")
                except asyncio.IncompleteReadError as eof:
                    if eof.partial:
                        await self._deliver(eof.partial)
                    break
                await self._deliver(line)
        except (ConnectionResetError, BrokenPipeError):
            pass
        code: Optional[int] = None
        sig: Optional[str] = None
        if self._process is not None:
            returncode = await self._process.wait()
            if self._stderr_task is not None:
                # Let the stderr reader take the process's last words.
                await asyncio.gather(self._stderr_task, return_exceptions=True)
            if returncode < 0:
                sig = signal_module.Signals(-returncode).name
            else:
                code = returncode
        self.exit_info = ExitInfo(code=code, signal=sig, stderr_tail=self._stderr_tail)
        self._on_exit(self.exit_info)
        self.exited.set()


_Client = TypeVar("_Client", bound="StdioClient")


class StdioClient:
    """What both clients share over their :class:`Connection`: attaching to streams, the
    process id and exit, closing, and ``async with``."""

    _connection: Connection

    def __init__(self, reader: asyncio.StreamReader, writer: Writer, process: Optional[asyncio.subprocess.Process] = None, **options: Any) -> None:
        raise NotImplementedError  # each client builds its own connection

    @classmethod
    def attach(cls: Type[_Client], reader: asyncio.StreamReader, writer: Writer, **options: Any) -> _Client:
        """Speaks the protocol over given streams (``writer`` is the agent's stdin)."""
        return cls(reader, writer, None, **options)

    @property
    def pid(self) -> Optional[int]:
        """The process id, when spawned."""
        return self._connection.pid

    @property
    def exit_info(self) -> Optional[ExitInfo]:
        """How the process ended, once it has."""
        return self._connection.exit_info

    async def wait_closed(self) -> ExitInfo:
        """Waits until the process exits (or its output ends)."""
        return await self._connection.wait_closed()

    async def close(self, grace: float = 2.0) -> ExitInfo:
        """Closes stdin and waits for the process to exit; after ``grace`` seconds sends
        SIGTERM, and SIGKILL after as long again."""
        return await self._connection.close(grace)

    async def __aenter__(self: _Client) -> _Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
