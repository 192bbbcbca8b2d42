#!/usr/bin/env python3
"""Fills fuzz/corpus/<target>/ with seed inputs (not committed: regenerated on demand).

- rpc_decode / wire_decode / acp_decode: one corpus file per inbound line, taken from
  schema/examples/*.jsonl (the dialect's inbound examples) and from every conformance transcript
  in tests/conformance/**/*.jsonl (its `in` steps: `frame` serialised compactly, or `raw` as is),
  by the transcript header's dialect. ACP also gets the JSON-RPC lines of the wire dialect.
- session_parse: the committed session files in fuzz/seeds/session_parse/.
- every target: the committed files in fuzz/seeds/<target>/ (one line each for the decoders).

Files are named by the SHA-1 of their content, as libFuzzer does, so reruns add nothing twice.
Usage: python3 fuzz/seed.py   (from anywhere; paths are relative to this file)
"""
import hashlib
import json
import pathlib

FUZZ = pathlib.Path(__file__).resolve().parent
ROOT = FUZZ.parent
EXAMPLES = {
    "rpc_decode": ["rpc-commands.jsonl", "rpc-subprotocols.jsonl"],
    "wire_decode": ["wire-methods.jsonl"],
    "acp_decode": ["wire-methods.jsonl"],
}


def add(target, data, counts):
    out = FUZZ / "corpus" / target
    out.mkdir(parents=True, exist_ok=True)
    path = out / hashlib.sha1(data).hexdigest()
    if not path.exists():
        path.write_bytes(data)
        counts[target] = counts.get(target, 0) + 1


def transcript_lines(path):
    """(dialect, inbound line bytes) of a conformance transcript's `in` steps."""
    dialect = None
    for text in path.read_text(encoding="utf-8").split("\n"):
        if not text.strip():
            continue
        step = json.loads(text)
        if step.get("kind") == "header":
            dialect = step.get("dialect")
        elif step.get("kind") == "in":
            if "raw" in step:
                yield dialect, step["raw"].encode("utf-8", "surrogatepass")
            elif "frame" in step:
                yield dialect, json.dumps(step["frame"], separators=(",", ":"), ensure_ascii=False).encode()


def main():
    counts = {}
    for target, files in EXAMPLES.items():
        for name in files:
            for line in (ROOT / "schema" / "examples" / name).read_bytes().split(b"\n"):
                if line.strip():
                    add(target, line, counts)
    for path in sorted((ROOT / "tests" / "conformance").rglob("*.jsonl")):
        for dialect, line in transcript_lines(path):
            if dialect == "rpc":
                add("rpc_decode", line, counts)
            elif dialect == "wire":
                add("wire_decode", line, counts)
                add("acp_decode", line, counts)
    for seeds in sorted((FUZZ / "seeds").iterdir()):
        for path in sorted(seeds.iterdir()):
            data = path.read_bytes()
            add(seeds.name, data if seeds.name == "session_parse" else data.rstrip(b"\n"), counts)
    for target in sorted(counts):
        print(f"{target}: {counts[target]} new seed files in {FUZZ / 'corpus' / target}")


if __name__ == "__main__":
    main()
