#!/usr/bin/env python3
"""A kimi wire host on our Python client (clients/python, `agentwire_client.WireClient`), for
`agentwire conformance client --dialect wire`: `python-wire-host.py '<agent command line>'`
starts the agent, sends `initialize`, the prompt line read from stdin with `prompt_and_wait`, and
closes the client (the agent's input first). Agent requests get the client's defaults (an
approval is rejected). Run it with clients/python/src on PYTHONPATH and the client's venv.
"""

import asyncio
import sys

from agentwire_client import WireClient


async def main() -> int:
    prompt = sys.stdin.readline().strip() or "hello"
    client = await WireClient.spawn("sh", "-c", sys.argv[1])
    code = 0
    try:
        await client.initialize(protocol_version="1.10")
        await client.prompt_and_wait(prompt)
    except Exception as error:  # any failure is this host's exit status, told on stderr
        print(f"python-wire-host: {error!r}", file=sys.stderr)
        code = 1
    await client.close()
    return code


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
