"""Spawns agentwire on its built-in offline model, registers a host tool, prompts, and prints the
streamed answer. The model script makes the offline model call the host tool first.

Run: AGENTWIRE_BIN=../../target/debug/agentwire python examples/offline.py
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict

from agentwire_client import AgentClient, HostToolContext, models as m


async def weather(args: Dict[str, Any], ctx: HostToolContext) -> str:
    await ctx.update("asking the sky...")
    answer = f"weather in {args['city']}: sunny"
    print(f"[host tool] {answer}")
    return answer


def print_delta(event: m.MessageUpdateEvent) -> None:
    inner = event.assistantMessageEvent.root
    if isinstance(inner, m.AmeTextDelta):
        sys.stdout.write(inner.delta)
        sys.stdout.flush()


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.jsonl"
        # One scripted reply; afterwards the offline model answers on its own, summarising the tool result.
        script.write_text(json.dumps({"text": "Let me check. ", "toolCalls": [{"name": "weather", "arguments": {"city": "Paris"}}]}) + "\n")
        binary = os.environ.get("AGENTWIRE_BIN", "agentwire")
        async with await AgentClient.spawn(binary, "--mode", "rpc", "--no-session", "--model-script", str(script)) as client:
            await client.set_host_tools(
                [
                    m.HostToolDefinition(
                        name="weather",
                        description="Current weather for a city.",
                        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                    )
                ],
                {"weather": weather},
            )
            client.on("message_update", print_delta)
            outcome = await client.prompt_and_wait("What is the weather in Paris?")
            print(f"\n[prompt {outcome.result.status}]")
            print((await client.get_last_assistant_text()).text)


if __name__ == "__main__":
    asyncio.run(main())
