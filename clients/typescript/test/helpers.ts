import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { AgentClient, WireClient, type AgentClientOptions } from "../src/index.js";

/** The package root (tests run from dist/test/). */
export const packageRoot = resolve(fileURLToPath(import.meta.url), "../../..");

/** The agentwire binary under test: $AGENTWIRE_BIN, else the workspace's debug build. */
export const agentwireBin = process.env.AGENTWIRE_BIN ?? resolve(packageRoot, "../../target/debug/agentwire");

/** One scripted model reply (schema/model-script.schema.json). */
export interface ScriptEntry {
  text?: string;
  thinking?: string;
  toolCalls?: { id?: string; name: string; arguments: { [key: string]: unknown } }[];
  error?: string;
  delayMs?: number;
  chunkSize?: number;
}

/** A temporary directory with config, sessions and work dirs, removed by `dispose`. */
export class Sandbox {
  readonly dir = mkdtempSync(join(tmpdir(), "agentwire-ts-"));

  /** Spawns agentwire on the offline model with `script`, isolated in this sandbox. */
  spawn(script: ScriptEntry[] = [], extraArgs: string[] = [], options: AgentClientOptions = {}): AgentClient {
    const scriptPath = join(this.dir, `script-${Math.random().toString(36).slice(2)}.jsonl`);
    writeFileSync(scriptPath, script.map((e) => JSON.stringify(e)).join("\n") + (script.length ? "\n" : ""));
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: this.dir, AGENTWIRE_CONFIG_DIR: join(this.dir, "config") };
    return AgentClient.spawn(
      agentwireBin,
      ["--mode", "rpc", "--model-script", scriptPath, "--session-dir", join(this.dir, "sessions"), "--cwd", this.dir, ...extraArgs],
      { env, requestTimeoutMs: 10_000, ...options },
    );
  }

  /** Spawns agentwire in wire mode (JSON-RPC) on the offline model with `script`. */
  spawnWire(script: ScriptEntry[] = [], extraArgs: string[] = []): WireClient {
    const scriptPath = join(this.dir, `script-${Math.random().toString(36).slice(2)}.jsonl`);
    writeFileSync(scriptPath, script.map((e) => JSON.stringify(e)).join("\n") + (script.length ? "\n" : ""));
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: this.dir, AGENTWIRE_CONFIG_DIR: join(this.dir, "config") };
    return WireClient.spawn(
      agentwireBin,
      ["--mode", "wire", "--model-script", scriptPath, "--session-dir", join(this.dir, "sessions"), "--cwd", this.dir, ...extraArgs],
      { env, requestTimeoutMs: 10_000 },
    );
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
