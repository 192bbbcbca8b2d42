// What the pi-host suites share: the agentwire binary under test, a fresh directory per test
// (HOME, config, cwd) with the offline model's script, and pi's RpcClient started on a shim in
// it; every client is stopped and its directory removed when the suite ends.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { after } from "node:test";

import { RpcClient } from "@mariozechner/pi-coding-agent";

const here = dirname(fileURLToPath(import.meta.url));
export const agentwireBin = resolve(process.env.AGENTWIRE_BIN ?? join(here, "../../target/debug/agentwire"));
assert.ok(existsSync(agentwireBin), `build agentwire first (cargo build): ${agentwireBin}`);

const sandboxes = [];
after(async () => {
  for (const { client, dir } of sandboxes) {
    await client.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A fresh directory holding `script` (schema/model-script.schema.json) as script.jsonl. */
export function sandbox(script) {
  const dir = mkdtempSync(join(tmpdir(), "agentwire-pi-host-"));
  const scriptPath = join(dir, "script.jsonl");
  writeFileSync(scriptPath, script.map((entry) => JSON.stringify(entry) + "\n").join(""));
  return { dir, scriptPath };
}

/** RpcClient (not yet started) on the shim `shim` of this folder, in `dir`, with `args`. */
export function rpcClient(shim, dir, args) {
  const client = new RpcClient({
    cliPath: join(here, shim),
    cwd: dir,
    env: { HOME: dir, AGENTWIRE_CONFIG_DIR: join(dir, "config"), AGENTWIRE_BIN: agentwireBin },
    args,
  });
  sandboxes.push({ client, dir });
  return client;
}
