#!/usr/bin/env python3
"""A host on our Python client (clients/python, `agentwire_client.AgentClient`), for `agentwire
conformance client --dialect rpc`: `python-host.py '<agent command line>'` starts the agent,
sends the prompt line read from stdin, waits for `agent_settled` and closes the client (the
agent's input first). Dialogs get the client's default UI handler. Run it with
clients/python/src on PYTHONPATH and the client's venv (clients/python/.venv).
"""

import asyncio
import sys

from agentwire_client import AgentClient


async def main() -> int:
    prompt = sys.stdin.readline().strip() or "hello"
    client = await AgentClient.spawn("sh", "-c", sys.argv[1])
    code = 0
    try:
        settled = asyncio.ensure_future(client.wait_until_settled())
        await asyncio.sleep(0)  # subscribed before the prompt goes out
        await client.prompt(message=prompt)
        await settled
    except Exception as error:  # any failure is this host's exit status, told on stderr
        print(f"python-host: {error!r}", file=sys.stderr)
        code = 1
    await client.close()
    return code


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
