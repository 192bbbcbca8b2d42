// pi's RpcClient starts its agent as `node <cliPath> --mode rpc …`; as cliPath this shim runs
// $AGENTWIRE_BIN with the same arguments on the same stdio, passes SIGTERM / SIGINT / SIGHUP on
// (RpcClient.stop() sends SIGTERM) and exits as agentwire did.
import { spawn } from "node:child_process";

const bin = process.env.AGENTWIRE_BIN;
if (!bin) {
  console.error("agentwire-shim: AGENTWIRE_BIN is not set");
  process.exit(2);
}
const child = spawn(bin, process.argv.slice(2), { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => child.kill(signal));
child.on("error", (error) => {
  console.error(`agentwire-shim: cannot start ${bin}: ${error.message}`);
  process.exit(127);
});
child.on("exit", (code, signal) => process.exit(code ?? 128 + ({ SIGTERM: 15, SIGINT: 2, SIGHUP: 1, SIGKILL: 9 }[signal] ?? 0)));
