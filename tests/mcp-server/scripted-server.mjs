// A small stdio MCP server for tests/mcp.rs, speaking newline-delimited JSON-RPC by hand so it
// can do what a well-behaved server (server-everything) never does:
// - `add-tool` adds the tool `added` and announces notifications/tools/list_changed;
// - `garbage` answers with a result that is not a tool result (`content` is a number);
// - `fails` answers isError: true;
// - `hangs` never answers.
import { createInterface } from "node:readline";

const tool = (name, readOnly) => ({
  name,
  description: `The ${name} tool.`,
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: readOnly },
});
const tools = [tool("add-tool", true), tool("garbage", true), tool("fails", true), tool("hangs", true)];
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
const text = (t) => ({ content: [{ type: "text", text: t }] });

createInterface({ input: process.stdin }).on("line", (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return; // notifications need no answer
  switch (method) {
    case "initialize":
      return send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: { listChanged: true } }, serverInfo: { name: "scripted", version: "1.0.0" } } });
    case "tools/list":
      return send({ id, result: { tools } });
    case "tools/call":
      switch (params.name) {
        case "add-tool":
          if (!tools.some((t) => t.name === "added")) tools.push(tool("added", true));
          send({ method: "notifications/tools/list_changed" });
          return send({ id, result: text("added a tool") });
        case "added":
          return send({ id, result: text("the added tool works") });
        case "garbage":
          return send({ id, result: { content: 42, isError: "maybe" } });
        case "fails":
          return send({ id, result: { ...text("it broke"), isError: true } });
        case "hangs":
          return;
        default:
          return send({ id, error: { code: -32602, message: `no tool ${params.name}` } });
      }
    default:
      return send({ id, error: { code: -32601, message: `no method ${method}` } });
  }
});
