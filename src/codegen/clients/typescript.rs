//! The TypeScript client's generated layers: `protocol.ts` (JSONL dialect) and `wire.ts`
//! (JSON-RPC wire dialect).

use std::fmt::Write as _;

use heck::ToLowerCamelCase;
use serde_json::Value;

use super::{agent_frames, commands, defs, description, union_leaves, wire_agent_requests, wire_events, wire_methods, CommandSpec, HEADER_NOTE};

fn jsdoc(out: &mut String, indent: &str, text: &str) {
    if text.is_empty() {
        return;
    }
    let text = text.replace("*/", "*\\/");
    let _ = writeln!(out, "{indent}/**");
    for line in text.lines() {
        let _ = writeln!(out, "{indent} * {line}");
    }
    let _ = writeln!(out, "{indent} */");
}

fn ts_response_type(c: &CommandSpec<'_>) -> String {
    let mut t = c.response.map_or_else(|| "void".to_owned(), |r| format!("T.{r}"));
    if c.nullable {
        t.push_str(" | null");
    }
    if c.optional {
        t.push_str(" | undefined");
    }
    t
}

/// `clients/typescript/src/generated/protocol.ts`.
pub fn typescript_protocol(bundle: &Value) -> String {
    let defs = defs(bundle);
    let commands = commands(defs);
    let frames = agent_frames(defs);
    let mut out = String::new();
    let _ = writeln!(out, "// {HEADER_NOTE}\n");
    out.push_str("import type * as T from \"./types.js\";\nimport type { RequestOptions } from \"../options.js\";\n\n");

    jsdoc(&mut out, "", "The success `data` of every command (its `x-response`); `void` when the response carries none.");
    out.push_str("export interface CommandResponseMap {\n");
    for c in &commands {
        jsdoc(&mut out, "  ", c.description);
        let _ = writeln!(out, "  {}: {};", c.tag, ts_response_type(c));
    }
    out.push_str("}\n\n");
    out.push_str(
        "/** A command's `type`. */\nexport type CommandType = keyof CommandResponseMap;\n\
         /** The command frame with this `type`. */\nexport type CommandOf<K extends CommandType> = Extract<T.RpcCommand, { type: K }>;\n\
         /** A command's fields other than `type` and `id` (the client sets those). */\n\
         export type CommandParams<K extends CommandType> = Omit<CommandOf<K>, \"type\" | \"id\">;\n\n",
    );
    out.push_str("/** Every command `type`, in schema order. */\nexport const COMMAND_TYPES: readonly CommandType[] = [\n");
    for c in &commands {
        let _ = writeln!(out, "  \"{}\",", c.tag);
    }
    out.push_str("];\n\n");

    jsdoc(&mut out, "", "Frames the agent sends on its own (events, UI requests, host tool calls), by `type`.");
    out.push_str("export interface AgentEventMap {\n");
    for (tag, def) in &frames {
        jsdoc(&mut out, "  ", description(&defs[*def]));
        let _ = writeln!(out, "  {tag}: T.{def};");
    }
    out.push_str("}\n\n");
    out.push_str(
        "/** The `type` of a frame the agent sends on its own. */\nexport type AgentEventType = keyof AgentEventMap;\n\
         /** Any frame the agent sends on its own. */\nexport type AgentEvent = AgentEventMap[AgentEventType];\n\n",
    );
    out.push_str("/** Every agent frame `type` the schema knows, in schema order. */\nexport const AGENT_EVENT_TYPES: readonly AgentEventType[] = [\n");
    for (tag, _) in &frames {
        let _ = writeln!(out, "  \"{tag}\",");
    }
    out.push_str("];\n\n");
    out.push_str(
        "const AGENT_EVENT_TYPE_SET: ReadonlySet<string> = new Set(AGENT_EVENT_TYPES);\n\n\
         /** Whether `frame` is an agent frame of this `type`. */\n\
         export function isAgentEvent<K extends AgentEventType>(frame: unknown, type: K): frame is AgentEventMap[K] {\n\
         \x20 return typeof frame === \"object\" && frame !== null && (frame as { type?: unknown }).type === type;\n}\n\n\
         /** Whether `frame` is an agent frame of a `type` the schema knows (unknown types are still delivered to generic listeners). */\n\
         export function isKnownAgentEvent(frame: unknown): frame is AgentEvent {\n\
         \x20 if (typeof frame !== \"object\" || frame === null) return false;\n\
         \x20 const type = (frame as { type?: unknown }).type;\n\
         \x20 return typeof type === \"string\" && AGENT_EVENT_TYPE_SET.has(type);\n}\n\n",
    );

    jsdoc(&mut out, "", "One typed method per command. `AgentClient` implements `send`.");
    out.push_str("export abstract class CommandMethods {\n");
    out.push_str("  /** Sends one command and resolves with its success `data` (rejects on `success:false`). */\n");
    out.push_str("  protected abstract send<K extends CommandType>(type: K, params: CommandParams<K>, options?: RequestOptions): Promise<CommandResponseMap[K]>;\n\n");
    for c in &commands {
        let mut doc = c.description.to_owned();
        let _ = write!(doc, "\n\nSends `{}` ({}).", c.tag, c.def);
        if let Some(r) = c.response {
            let _ = write!(doc, " Resolves with `{r}`");
            if c.nullable {
                doc.push_str(" or `null`");
            }
            if c.optional {
                doc.push_str(" (or `undefined` from agents that send no data)");
            }
            doc.push('.');
        }
        jsdoc(&mut out, "  ", &doc);
        let method = c.tag.to_lower_camel_case();
        let default = if c.params.iter().any(|p| p.required) { "" } else { " = {}" };
        let _ = writeln!(
            out,
            "  {method}(params: CommandParams<\"{tag}\">{default}, options?: RequestOptions): Promise<{ret}> {{\n    return this.send(\"{tag}\", params, options);\n  }}\n",
            tag = c.tag,
            ret = ts_response_type(c),
        );
    }
    out.truncate(out.trim_end().len());
    out.push_str("\n}\n");
    out
}

/// `clients/typescript/src/generated/wire.ts`: the JSON-RPC wire dialect's method, event and
/// agent-request maps and one typed method per wire method.
pub fn typescript_wire(bundle: &Value) -> String {
    let defs = defs(bundle);
    let methods = wire_methods(defs);
    let mut out = String::new();
    let _ = writeln!(out, "// {HEADER_NOTE}\n");
    out.push_str("import type * as T from \"./types.js\";\nimport type { RequestOptions } from \"../options.js\";\n\n");
    jsdoc(&mut out, "", "Every wire method: its params and its result (`x-result`).");
    out.push_str("export interface WireMethodMap {\n");
    for m in &methods {
        jsdoc(&mut out, "  ", m.description);
        let params = m.params.map_or_else(|| "undefined".to_owned(), |p| format!("T.{p}"));
        let _ = writeln!(out, "  {}: {{ params: {params}; result: T.{} }};", m.name, m.result);
    }
    out.push_str("}\n\n/** A wire method name. */\nexport type WireMethod = keyof WireMethodMap;\n\n");
    jsdoc(&mut out, "", "Every event the agent sends (`event` notifications): `type` → payload.");
    out.push_str("export interface WireEventMap {\n");
    for (kind, payload, doc) in wire_events(defs) {
        jsdoc(&mut out, "  ", doc);
        let _ = writeln!(out, "  {kind}: T.{payload};");
    }
    out.push_str("}\n\n/** A wire event type. */\nexport type WireEventType = keyof WireEventMap;\n\n");
    out.push_str("/** Every wire event type the schema knows, in schema order. */\nexport const WIRE_EVENT_TYPES: readonly WireEventType[] = [\n");
    for (kind, _, _) in wire_events(defs) {
        let _ = writeln!(out, "  \"{kind}\",");
    }
    out.push_str("];\n\n");
    jsdoc(&mut out, "", "Requests the agent sends (`request` messages): `params.type` → payload, the client's result, and the result field that carries the request's id.");
    out.push_str("export interface WireAgentRequestMap {\n");
    for (kind, payload, result, id_field) in wire_agent_requests(defs) {
        jsdoc(&mut out, "  ", description(&defs[union_leaves(defs, "WireAgentRequestParams").iter().find(|(k, _)| *k == kind).map_or("", |(_, d)| *d)]));
        let _ = writeln!(out, "  {kind}: {{ payload: T.{payload}; result: T.{result}; idField: \"{id_field}\" }};");
    }
    out.push_str("}\n\n/** A wire agent request type. */\nexport type WireAgentRequestType = keyof WireAgentRequestMap;\n\n");
    jsdoc(&mut out, "", "One typed method per wire method. `WireClient` implements `call`.");
    out.push_str("export abstract class WireMethods {\n");
    out.push_str("  /** Sends one request and resolves with its result (rejects on a JSON-RPC error). */\n");
    out.push_str("  protected abstract call<K extends WireMethod>(method: K, params: WireMethodMap[K][\"params\"], options?: RequestOptions): Promise<WireMethodMap[K][\"result\"]>;\n\n");
    for m in &methods {
        let camel = m.name.to_lower_camel_case();
        let mut doc = m.description.to_owned();
        let _ = write!(doc, "\n\nSends `{}`; resolves with `{}`.", m.name, m.result);
        jsdoc(&mut out, "  ", &doc);
        match m.params {
            Some(p) => {
                let _ = writeln!(out, "  {camel}(params: T.{p}, options?: RequestOptions): Promise<T.{}> {{\n    return this.call(\"{}\", params, options);\n  }}\n", m.result, m.name);
            }
            None => {
                let _ = writeln!(out, "  {camel}(options?: RequestOptions): Promise<T.{}> {{\n    return this.call(\"{}\", undefined, options);\n  }}\n", m.result, m.name);
            }
        }
    }
    out.truncate(out.trim_end().len());
    out.push_str("\n}\n");
    out
}
