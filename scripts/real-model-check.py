"""Drives agentwire through a real local model server (see scripts/real-model-check).

Usage: real-model-check.py AGENTWIRE BASE_URL MODEL_ID [RUNS]

1. Captures the Chat Completions request agentwire sends for the prompt (agentwire pointed at
   a recorder on 127.0.0.1 that answers one canned line), so that the server is asked the very
   same thing directly and through agentwire.
2. Sends that request to the server directly, RUNS times: time to the first content delta,
   content deltas per second after it.
3. Runs agentwire in rpc mode and in ACP mode against the server, RUNS times each, the same
   prompt in a fresh session: time from the prompt frame to the first text frame, text frames
   per second after it; prints the streamed answer.
4. Asks for a tool call (`ls`) once in rpc mode and says whether the model made one.

Standard library only. Prints a Markdown table of medians.
"""

import http.server
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

PROMPT = "Say hello and name three colours."
TOOL_PROMPT = "Use the ls tool to list the files in the current directory."
TIMEOUT = 180.0


def models_file(config_dir, base_url, model):
    models = {"providers": {"local": {"api": "openai-completions", "baseUrl": base_url,
                                      "models": [{"id": model, "contextWindow": 8192, "maxTokens": 512}]}}}
    with open(os.path.join(config_dir, "models.json"), "w") as f:
        json.dump(models, f)


class Agent:
    """One agentwire process; its stdout lines with the time each was read."""

    def __init__(self, agentwire, mode, config_dir, cwd):
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        self.proc = subprocess.Popen(
            [agentwire, "--mode", mode, "--config-dir", config_dir, "--cwd", cwd, "--provider", "local", "--no-session"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put((time.monotonic(), json.loads(line)))
        self.lines.put((time.monotonic(), None))

    def send(self, frame):
        self.proc.stdin.write((json.dumps(frame) + "\n").encode())
        self.proc.stdin.flush()
        return time.monotonic()

    def until(self, pred):
        deadline = time.monotonic() + TIMEOUT
        seen = []
        while True:
            at, frame = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if frame is None:
                raise RuntimeError("agentwire exited")
            seen.append((at, frame))
            if pred(frame):
                return seen

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def rates(sent, stamps):
    """(time to first, deltas per second after the first) of delta timestamps."""
    if not stamps:
        return None, None
    ttft = stamps[0] - sent
    span = stamps[-1] - stamps[0]
    return ttft, (len(stamps) - 1) / span if span > 0 and len(stamps) > 1 else None


def capture_request(agentwire, config_dir, cwd):
    """The body agentwire sends for PROMPT, recorded by a one-shot server."""
    bodies = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            bodies.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
            chunk = {"id": "x", "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}
            body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rec_dir = tempfile.mkdtemp()
    models_file(rec_dir, f"http://127.0.0.1:{server.server_port}/v1", "recorded")
    agent = Agent(agentwire, "rpc", rec_dir, cwd)
    agent.send({"id": "p", "type": "prompt", "message": PROMPT})
    agent.until(lambda f: f.get("type") == "prompt_result")
    agent.close()
    server.shutdown()
    return bodies[0]


def direct(base_url, model, body):
    """Streams `body` from the server: (ttft, deltas/s, text)."""
    body = dict(body, model=model)
    request = urllib.request.Request(f"{base_url}/chat/completions", data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    sent = time.monotonic()
    stamps, text = [], []
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            delta = (json.loads(line[6:]).get("choices") or [{}])[0].get("delta", {})
            if delta.get("content"):
                stamps.append(time.monotonic())
                text.append(delta["content"])
    return (*rates(sent, stamps), "".join(text))


def through_rpc(agentwire, config_dir, cwd, prompt=PROMPT):
    """One prompt in a fresh rpc session: (ttft, deltas/s, answer, tool calls)."""
    agent = Agent(agentwire, "rpc", config_dir, cwd)
    agent.send({"id": "s", "type": "get_state"})
    agent.until(lambda f: f.get("id") == "s")
    sent = agent.send({"id": "p", "type": "prompt", "message": prompt})
    frames = agent.until(lambda f: f.get("type") == "prompt_result")
    agent.close()
    stamps = [at for at, f in frames if f.get("type") == "message_update" and f.get("assistantMessageEvent", {}).get("type") == "text_delta"]
    ends = [f["message"] for _, f in frames if f.get("type") == "message_end" and f["message"].get("role") == "assistant"]
    answer = "".join(c.get("text", "") for m in ends[:1] for c in m["content"] if c.get("type") == "text")
    calls = [f for _, f in frames if f.get("type") == "tool_execution_start"]
    result = frames[-1][1]
    return (*rates(sent, stamps), answer, calls, ends, result)


def through_acp(agentwire, config_dir, cwd):
    """One prompt in a fresh ACP session: (ttft, deltas/s, answer)."""
    agent = Agent(agentwire, "acp", config_dir, cwd)
    agent.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})
    agent.until(lambda f: f.get("id") == 1)
    agent.send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}})
    session = agent.until(lambda f: f.get("id") == 2)[-1][1]["result"]["sessionId"]
    sent = agent.send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": PROMPT}]}})
    frames = agent.until(lambda f: f.get("id") == 3)
    agent.close()
    chunks = [(at, f["params"]["update"]) for at, f in frames if f.get("method") == "session/update" and f["params"]["update"].get("sessionUpdate") == "agent_message_chunk"]
    answer = "".join(u["content"].get("text", "") for _, u in chunks)
    return (*rates(sent, [at for at, _ in chunks]), answer, frames[-1][1])


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt_ms(v):
    return "n/a" if v is None else f"{v * 1000:.0f} ms"


def fmt_rate(v):
    return "n/a" if v is None else f"{v:.0f}/s"


def main():
    agentwire, base_url, model = sys.argv[1:4]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    config_dir, cwd = tempfile.mkdtemp(), tempfile.mkdtemp()
    models_file(config_dir, base_url, model)
    body = capture_request(agentwire, config_dir, cwd)
    print(f"request agentwire sends: {len(json.dumps(body))} bytes, {len(body.get('tools', []))} tools, keys {sorted(body)}")

    rows = {"server directly": [], "agentwire rpc": [], "agentwire ACP": []}
    for i in range(runs):
        ttft, rate, text = direct(base_url, model, body)
        rows["server directly"].append((ttft, rate))
        ttft, rate, answer, _, ends, result = through_rpc(agentwire, config_dir, cwd)
        rows["agentwire rpc"].append((ttft, rate))
        if i == 0:
            print(f"\nstreamed answer (rpc): {answer!r}")
            print(f"prompt_result: {json.dumps(result)}")
            print(f"usage reported: {json.dumps(ends[0]['usage'])}")
            print(f"server directly, same request: {text!r}")
        ttft, rate, answer, result = through_acp(agentwire, config_dir, cwd)
        rows["agentwire ACP"].append((ttft, rate))
        if i == 0:
            print(f"streamed answer (ACP): {answer!r}; stopReason {result.get('result', {}).get('stopReason')}")

    print(f"\n| path ({runs} runs, medians) | time to first token | tokens/s after it |")
    print("|---|---|---|")
    for name, values in rows.items():
        print(f"| {name} | {fmt_ms(median([t for t, _ in values]))} | {fmt_rate(median([r for _, r in values]))} |")

    _, _, answer, calls, ends, _ = through_rpc(agentwire, config_dir, cwd, TOOL_PROMPT)
    if calls:
        print(f"\ntool call: the model called {calls[0]['toolName']} with {json.dumps(calls[0].get('args'))}")
    else:
        print(f"\ntool call: none; the model answered {answer!r}")


if __name__ == "__main__":
    main()
