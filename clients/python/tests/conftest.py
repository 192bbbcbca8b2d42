"""Fixtures: the agentwire binary under test and an isolated sandbox to run it in."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import pytest

from agentwire_client import AgentClient, WireClient

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
AGENTWIRE_BIN = os.environ.get("AGENTWIRE_BIN") or str(PACKAGE_ROOT.parent.parent / "target" / "debug" / "agentwire")


class Sandbox:
    """A temporary directory with config, sessions and work dirs for one test."""

    def __init__(self, root: Path) -> None:
        self.dir = root

    async def spawn(self, script: Sequence[Dict[str, Any]] = (), extra_args: Sequence[str] = (), **options: Any) -> AgentClient:
        """Spawns agentwire on the offline model with ``script``, isolated in this sandbox."""
        path = self.dir / f"script-{uuid.uuid4().hex}.jsonl"
        path.write_text("".join(json.dumps(entry) + "\n" for entry in script))
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.dir), "AGENTWIRE_CONFIG_DIR": str(self.dir / "config")}
        args: List[str] = ["--mode", "rpc", "--model-script", str(path), "--session-dir", str(self.dir / "sessions"), "--cwd", str(self.dir), *extra_args]
        options.setdefault("request_timeout", 10.0)
        return await AgentClient.spawn(AGENTWIRE_BIN, *args, env=env, **options)


    async def spawn_wire(self, script: Sequence[Dict[str, Any]] = (), extra_args: Sequence[str] = ()) -> WireClient:
        """Spawns agentwire in wire mode (JSON-RPC) on the offline model with ``script``."""
        path = self.dir / f"script-{uuid.uuid4().hex}.jsonl"
        path.write_text("".join(json.dumps(entry) + "\n" for entry in script))
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.dir), "AGENTWIRE_CONFIG_DIR": str(self.dir / "config")}
        args: List[str] = ["--mode", "wire", "--model-script", str(path), "--session-dir", str(self.dir / "sessions"), "--cwd", str(self.dir), *extra_args]
        return await WireClient.spawn(AGENTWIRE_BIN, *args, env=env, request_timeout=10.0)


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    assert Path(AGENTWIRE_BIN).exists(), f"build agentwire first (cargo build): {AGENTWIRE_BIN}"
    return Sandbox(tmp_path)


def maybe(value: Optional[Any]) -> Any:
    """Asserts a value is present and returns it (for typed access in tests)."""
    assert value is not None
    return value
