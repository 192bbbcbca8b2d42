// pi's RpcClient starts its agent as `node <cliPath> --mode rpc …`; as cliPath this shim runs
// `$AGENTWIRE_BIN bridge --serve rpc -- $AGENTWIRE_BIN --mode acp …` instead: pi's own host in
// front of agentwire's ACP agent through the bridge (issue 26, done-when 2.5). The arguments
// after `--mode rpc` go to the ACP agent. Signals are passed on, and the shim exits as the
// bridge did.
import { spawn } from "node:child_process";

const bin = process.env.AGENTWIRE_BIN;
if (!bin) {
  console.error("bridge-shim: AGENTWIRE_BIN is not set");
  process.exit(2);
}
const given = process.argv.slice(2);
const agentArgs = given[0] === "--mode" && given[1] === "rpc" ? given.slice(2) : given;
const child = spawn(bin, ["bridge", "--serve", "rpc", "--", bin, "--mode", "acp", ...agentArgs], { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => child.kill(signal));
child.on("error", (error) => {
  console.error(`bridge-shim: cannot start ${bin}: ${error.message}`);
  process.exit(127);
});
child.on("exit", (code, signal) => process.exit(code ?? 128 + ({ SIGTERM: 15, SIGINT: 2, SIGHUP: 1, SIGKILL: 9 }[signal] ?? 0)));
