// `npm install <checkout>/clients/typescript`, `npm pack` and `npm publish` run this (the
// `prepare` script): it builds dist/src (JavaScript, .d.ts, source maps pointing into the shipped
// src/) from a clean state. A checkout installed as a dependency has no node_modules of its own,
// so the pinned dev dependencies (package-lock.json) are installed first, as npm does for a git
// dependency.
import { execFileSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const run = (command, args) => execFileSync(command, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"] });

const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
if (!existsSync(tsc)) {
  console.error("@agentwire/client: installing the pinned build tools (npm ci) to build dist/");
  run(npm, ["ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]);
}
rmSync(join(root, "dist", "src"), { recursive: true, force: true });
run(process.execPath, [tsc, "-p", "tsconfig.build.json"]);
