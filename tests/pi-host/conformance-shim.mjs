// pi's RpcClient starts its agent as `node <cliPath> --mode rpc …`; as cliPath this shim runs the
// command line in $AGENTWIRE_SCRIPTED_AGENT (`agentwire conformance client`'s scripted agent) on
// the same stdio, ignoring pi's arguments, passes SIGTERM / SIGINT / SIGHUP on (RpcClient.stop()
// sends SIGTERM) and exits as the agent did.
import { spawn } from "node:child_process";

const agent = process.env.AGENTWIRE_SCRIPTED_AGENT;
if (!agent) {
  console.error("conformance-shim: AGENTWIRE_SCRIPTED_AGENT is not set");
  process.exit(2);
}
const child = spawn("/bin/sh", ["-c", `exec ${agent}`], { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? 128 + ({ SIGTERM: 15, SIGINT: 2, SIGHUP: 1, SIGKILL: 9 }[signal] ?? 0)));
