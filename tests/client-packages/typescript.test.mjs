// @agentwire/client as a newcomer gets it: from a pristine copy of the checkout (only the files git
// tracks, outside the repository), installed into a fresh project as a folder and as the `npm pack`
// tarball; the README's `ts` blocks type-checked there with the project's own tsc and run against
// $AGENTWIRE_BIN. Run by scripts/test:
//   AGENTWIRE_BIN=target/debug/agentwire node --test tests/client-packages/typescript.test.mjs
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";

import { readmeBlocks } from "./readme-blocks.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../..");
const agentwireBin = resolve(process.env.AGENTWIRE_BIN ?? join(repo, "target/debug/agentwire"));
const readme = join(repo, "clients/typescript/README.md");

// What each README block must print (in README order). A new block needs an entry here.
const expectedOutput = [
  { what: "the rpc example: host tool, streamed answer, completed", stdout: [/summar|weather/i, /\ncompleted\n$/] },
  { what: "the wire example: streamed answer, finished", stdout: [/\nfinished\n$/] },
];

const npmEnv = { ...process.env, npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false", npm_config_loglevel: "error" };

function run(command, args, options) {
  try {
    return execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 300_000, ...options });
  } catch (error) {
    throw new Error(`${command} ${args.join(" ")} (in ${options.cwd}) failed:\n${error.stdout ?? ""}\n${error.stderr ?? error.message}`);
  }
}

/** Copies the files git tracks (plus new, not ignored ones) under `folder` to `dest`: a clean clone's view. */
function pristineCopy(folder, dest) {
  const files = run("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", folder], { cwd: repo }).split("\0").filter(Boolean);
  let copied = 0;
  for (const file of files) {
    if (!existsSync(join(repo, file))) continue; // deleted in the work tree
    mkdirSync(dirname(join(dest, file)), { recursive: true });
    cpSync(join(repo, file), join(dest, file));
    copied++;
  }
  assert.ok(copied > 10, `only ${copied} files under ${folder}`);
  return join(dest, folder);
}

/** A fresh project with the pinned typescript and @types/node (ts-consumer/), installed. */
function freshProject(dir) {
  mkdirSync(dir, { recursive: true });
  for (const file of ["package.json", "package-lock.json"]) cpSync(join(here, "ts-consumer", file), join(dir, file));
  // The README's tsconfig.json, as a newcomer would copy it.
  const tsconfigs = readmeBlocks(readme, "json");
  assert.equal(tsconfigs.length, 1, "the README shows one tsconfig.json");
  writeFileSync(join(dir, "tsconfig.json"), tsconfigs[0].code);
  run("npm", ["ci"], { cwd: dir, env: npmEnv });
  return dir;
}

/** Writes the README's blocks into `project`, type-checks them with its tsc and runs each. */
function checkExamples(project) {
  const blocks = readmeBlocks(readme, "ts");
  assert.equal(blocks.length, expectedOutput.length, `README has ${blocks.length} ts blocks; give each an entry in expectedOutput`);
  const names = blocks.map((block) => {
    const name = `readme_line_${block.line}.ts`;
    writeFileSync(join(project, name), block.code);
    return name;
  });
  run(process.execPath, [join(project, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"], { cwd: project });
  names.forEach((name, i) => {
    const js = join(project, "dist", name.replace(/\.ts$/, ".js"));
    let stdout;
    try {
      stdout = execFileSync(process.execPath, [js], { cwd: project, encoding: "utf8", env: { ...process.env, AGENTWIRE_BIN: agentwireBin }, timeout: 30_000, stdio: ["ignore", "pipe", "pipe"] });
    } catch (error) {
      assert.fail(`README.md:${blocks[i].line} (${expectedOutput[i].what}) failed:\n${error.stdout ?? ""}\n${error.stderr ?? error.message}`);
    }
    for (const pattern of expectedOutput[i].stdout) assert.match(stdout, pattern, `README.md:${blocks[i].line} (${expectedOutput[i].what}) printed:\n${stdout}`);
  });
}

describe("@agentwire/client as a package", () => {
  let work;
  let checkout;
  let tarball;

  before(() => {
    assert.ok(existsSync(agentwireBin), `build agentwire first (cargo build): ${agentwireBin}`);
    work = mkdtempSync(join(tmpdir(), "agentwire-ts-package-"));
    assert.ok(relative(repo, work).startsWith(".."), "the test project must live outside the repository");
    checkout = pristineCopy("clients/typescript", join(work, "agentwire"));
    assert.ok(!existsSync(join(checkout, "dist")) && !existsSync(join(checkout, "node_modules")), "the copy must start without dist/ and node_modules/");
  });

  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("installs from a clean checkout folder (prepare installs the build tools and builds dist/), type-checks and runs the README examples", () => {
    const project = freshProject(join(work, "from-folder"));
    run("npm", ["install", checkout], { cwd: project, env: npmEnv });
    const installed = join(project, "node_modules/@agentwire/client");
    assert.ok(existsSync(join(installed, "dist/src/index.js")), "dist/src/index.js was not built on install");
    assert.ok(existsSync(join(installed, "dist/src/index.d.ts")), "dist/src/index.d.ts was not built on install");
    checkExamples(project);
  });

  it("npm pack ships dist/ with .d.ts, the sources its maps point to, and no tests", () => {
    const [packed] = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", work], { cwd: checkout, env: npmEnv }));
    tarball = join(work, packed.filename);
    const files = new Set(packed.files.map((f) => f.path));
    for (const needed of ["package.json", "README.md", "dist/src/index.js", "dist/src/index.d.ts", "dist/src/client.js", "dist/src/generated/types.d.ts", "src/index.ts"]) {
      assert.ok(files.has(needed), `${needed} missing from the package: ${[...files].join(", ")}`);
    }
    assert.ok(![...files].some((f) => f.startsWith("dist/test") || f.startsWith("test/") || f.includes("node_modules")), "tests or node_modules in the package");
    const maps = [...files].filter((f) => f.endsWith(".map"));
    assert.ok(maps.length > 5, "no source maps in the package");
    for (const map of maps) {
      const { sources } = JSON.parse(readFileSync(join(checkout, map), "utf8"));
      for (const source of sources) {
        const target = relative(checkout, resolve(dirname(join(checkout, map)), source));
        assert.ok(files.has(target), `${map} points to ${target}, which is not in the package`);
      }
    }
    for (const declaration of [...files].filter((f) => f.endsWith(".d.ts"))) {
      const text = readFileSync(join(checkout, declaration), "utf8");
      if (/NodeJS\.|from "node:/.test(text)) assert.match(text, /^\/\/\/ <reference types="node"/, `${declaration} uses Node's types without referencing them`);
    }
    assert.ok(readdirSync(work).includes(packed.filename));
  });

  it("installs from the packed tarball, type-checks and runs the README examples", () => {
    assert.ok(tarball, "the pack test did not run");
    const project = freshProject(join(work, "from-tarball"));
    run("npm", ["install", tarball], { cwd: project, env: npmEnv });
    assert.deepEqual(JSON.parse(readFileSync(join(project, "package.json"), "utf8")).dependencies, { "@agentwire/client": `file:${relative(project, tarball)}` });
    checkExamples(project);
  });
});
