#!/usr/bin/env python3
"""How long an ACP agent (or the bridge in front of it) takes from its start to its `initialize` answer.

Usage: scripts/initialize-time.py VERSION N -- AGENT COMMAND...  (VERSION: the host's ACP version, 1 or 2; N runs)"""
import json, os, signal, subprocess, sys, time, statistics, tempfile
version = int(sys.argv[1]); n = int(sys.argv[2]); cmd = sys.argv[sys.argv.index('--')+1:]
if version == 1:
    req = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}
else:
    req = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2, "info": {"name": "m", "version": "1"}, "capabilities": {}}}
times = []
for _ in range(n):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    p.stdin.write((json.dumps(req) + "\n").encode()); p.stdin.flush()
    while True:
        line = p.stdout.readline()
        if not line: raise SystemExit("no answer")
        try: f = json.loads(line)
        except ValueError: continue
        if f.get("id") == 0: break
    times.append((time.monotonic() - t0) * 1000)
    p.stdin.close()
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        # codex-acp 0.16 does not always exit at EOF: its process group goes (the time is taken).
        os.killpg(p.pid, signal.SIGKILL); p.wait()
print(f"v{version} median {statistics.median(times):.0f} ms  min {min(times):.0f}  max {max(times):.0f}  (n={n}) answer protocolVersion={f['result'].get('protocolVersion')}")
