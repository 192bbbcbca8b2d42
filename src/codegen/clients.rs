//! The client bindings' generated layers (TypeScript and Python), from the bundled schema.
//!
//! The type declarations themselves come from well-kept generators (json-schema-to-typescript,
//! datamodel-code-generator), fed [`generator_input`]. What those tools cannot know — which
//! `data` answers which command (`x-response`), one typed method per command, the map from an
//! event's `type` to its type — is emitted here: [`typescript_protocol`] and
//! [`python_protocol`]. `clients/generate` writes all four files; drift tests (Rust for the
//! two emitted here, the clients' own suites for the tools' output) fail when they are stale.

use std::fmt::Write as _;

use heck::{ToLowerCamelCase, ToSnakeCase};
use serde_json::{Map, Value};

/// Which external generator a [`generator_input`] document is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// json-schema-to-typescript.
    TypeScript,
    /// datamodel-code-generator (pydantic v2).
    Python,
}

/// The bundle adapted for an external generator.
///
/// - Schema-level `title`s are dropped: both tools name types after a `title` when there is one,
///   and ours are display names (`set_model`), so names come from the `$defs` keys instead.
/// - `$id` is dropped so that nothing resolves against a URL.
/// - For TypeScript, keywords beside a `$ref` are dropped: json-schema-to-typescript copies the
///   referenced type under a new name (`AssistantMessage1`) for a `$ref` with a `description`.
/// - For Python, a `$ref` to a def that is not a model (a string enum, a string-or-integer id) is
///   replaced by the def itself, so the field is `Literal[...]` / `Union[str, int]` rather than a
///   `RootModel` wrapper the user would have to unwrap with `.root`.
pub fn generator_input(bundle: &Value, target: Target) -> Value {
    let mut doc = bundle.clone();
    if let Some(o) = doc.as_object_mut() {
        o.remove("$id");
    }
    if target == Target::Python {
        let defs = doc["$defs"].as_object().cloned().unwrap_or_default();
        inline_value_defs(&mut doc, &defs);
    }
    strip_schema(&mut doc, target);
    doc
}

fn is_model(def: &Value) -> bool {
    def.get("properties").is_some() || def.get("discriminator").is_some() || def.get("type").and_then(Value::as_str) == Some("object")
}

fn inline_value_defs(value: &mut Value, defs: &Map<String, Value>) {
    match value {
        Value::Object(o) => {
            if let Some(target) = o.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
                if let Some(def) = defs.get(target).filter(|d| !is_model(d)) {
                    o.remove("$ref");
                    for (k, v) in def.as_object().into_iter().flatten() {
                        if k != "title" && (k != "description" || !o.contains_key(k)) {
                            o.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            o.values_mut().for_each(|v| inline_value_defs(v, defs));
        }
        Value::Array(a) => a.iter_mut().for_each(|v| inline_value_defs(v, defs)),
        _ => {}
    }
}

fn strip_schema(schema: &mut Value, target: Target) {
    let Some(o) = schema.as_object_mut() else { return };
    o.remove("title");
    if target == Target::TypeScript && o.contains_key("$ref") {
        o.retain(|k, _| k == "$ref");
        return;
    }
    const SHAPE: &[&str] = &["type", "$ref", "oneOf", "anyOf", "allOf", "enum", "const", "properties", "$defs"];
    if target == Target::TypeScript && !SHAPE.iter().any(|k| o.contains_key(*k)) {
        // Any JSON value (`data`, `details`, an echoed `id`): json-schema-to-typescript would
        // otherwise guess an object.
        o.insert("tsType".into(), Value::String("unknown".into()));
    }
    for key in ["properties", "$defs"] {
        if let Some(Value::Object(m)) = o.get_mut(key) {
            m.values_mut().for_each(|s| strip_schema(s, target));
        }
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(Value::Array(a)) = o.get_mut(key) {
            a.iter_mut().for_each(|s| strip_schema(s, target));
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(s) = o.get_mut(key) {
            strip_schema(s, target);
        }
    }
}

/// One JSONL command as the clients see it.
struct CommandSpec<'a> {
    tag: &'a str,
    def: &'a str,
    description: &'a str,
    params: Vec<ParamSpec<'a>>,
    response: Option<&'a str>,
    nullable: bool,
    optional: bool,
}

struct ParamSpec<'a> {
    name: &'a str,
    schema: &'a Value,
    required: bool,
    description: &'a str,
}

fn defs(bundle: &Value) -> &Map<String, Value> {
    bundle["$defs"].as_object().expect("the bundle has $defs")
}

fn ref_name(schema: &Value) -> Option<&str> {
    schema.get("$ref")?.as_str()?.strip_prefix("#/$defs/")
}

fn description(schema: &Value) -> &str {
    schema.get("description").and_then(Value::as_str).unwrap_or("")
}

/// The leaf members of a discriminated union, in schema order: `(tag, def)`. A member that is
/// itself a union contributes its own leaves.
fn union_leaves<'a>(defs: &'a Map<String, Value>, union: &str) -> Vec<(&'a str, &'a str)> {
    let def = &defs[union];
    let tag_property = def["discriminator"]["propertyName"].as_str().expect("a discriminator");
    let mut out = Vec::new();
    for member in def["oneOf"].as_array().expect("oneOf") {
        let name = ref_name(member).expect("union members are $refs");
        let (key, member_def) = defs.get_key_value(name).expect("bundled");
        if member_def.get("discriminator").is_some() {
            out.extend(union_leaves(defs, key));
        } else {
            let tag = member_def["properties"][tag_property]["const"].as_str().expect("a const tag");
            out.push((tag, key.as_str()));
        }
    }
    out
}

fn commands(defs: &Map<String, Value>) -> Vec<CommandSpec<'_>> {
    union_leaves(defs, "RpcCommand")
        .into_iter()
        .map(|(tag, name)| {
            let def = &defs[name];
            let required: Vec<&str> =
                def["required"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
            let params = def["properties"]
                .as_object()
                .expect("properties")
                .iter()
                .filter(|(k, _)| *k != "type" && *k != "id")
                .map(|(k, s)| ParamSpec {
                    name: k,
                    schema: s,
                    required: required.contains(&k.as_str()),
                    description: description(s),
                })
                .collect();
            CommandSpec {
                tag,
                def: name,
                description: description(def),
                params,
                response: def.get("x-response").and_then(ref_name),
                nullable: def.get("x-response-nullable").and_then(Value::as_bool).unwrap_or(false),
                optional: def.get("x-response-optional").and_then(Value::as_bool).unwrap_or(false),
            }
        })
        .collect()
}

/// Frames the agent sends on its own (events, UI requests, host tool calls): `(type, def)`.
/// A def that is a union (`ExtensionUiRequest`) is kept whole: its members share the `type`.
fn agent_frames(defs: &Map<String, Value>) -> Vec<(&str, &str)> {
    let outbound = &defs["RpcOutboundFrame"];
    let mut out = Vec::new();
    for member in outbound["oneOf"].as_array().expect("oneOf") {
        let name = ref_name(member).expect("$ref");
        let (key, def) = defs.get_key_value(name).expect("bundled");
        if key == "RpcResponse" {
            continue;
        }
        if key == "RpcEvent" {
            out.extend(union_leaves(defs, key));
        } else {
            let tag = def["properties"]["type"]["const"]
                .as_str()
                .or_else(|| {
                    // A union whose members share one `type` (its discriminator is another field).
                    let first = ref_name(&def["oneOf"][0])?;
                    defs[first]["properties"]["type"]["const"].as_str()
                })
                .expect("a const type");
            out.push((tag, key.as_str()));
        }
    }
    out
}

const HEADER_NOTE: &str = "Generated by `agentwire codegen` from schema/*.schema.json. Do not edit: run `clients/generate`.";

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

const PY_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "timeout",
];

fn py_name(name: &str) -> String {
    let snake = name.to_snake_case();
    if PY_KEYWORDS.contains(&snake.as_str()) {
        format!("{snake}_")
    } else {
        snake
    }
}

fn py_literal(values: &[Value]) -> String {
    let items: Vec<String> = values.iter().map(|v| serde_json::to_string(v).expect("JSON")).collect();
    format!("Literal[{}]", items.join(", "))
}

/// The Python annotation of a value of this schema (parameters of the typed methods).
fn py_type(defs: &Map<String, Value>, schema: &Value) -> String {
    if let Some(name) = ref_name(schema) {
        let def = &defs[name];
        let is_model = def.get("properties").is_some() || def.get("discriminator").is_some();
        return if is_model { format!("m.{name}") } else { py_type(defs, def) };
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return py_literal(values);
    }
    if let Some(v) = schema.get("const") {
        return py_literal(std::slice::from_ref(v));
    }
    if let Some(alts) = schema.get("oneOf").and_then(Value::as_array) {
        let parts: Vec<String> = alts.iter().map(|a| py_type(defs, a)).collect();
        return format!("Union[{}]", parts.join(", "));
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => "str".into(),
        Some("integer") => "int".into(),
        Some("number") => "float".into(),
        Some("boolean") => "bool".into(),
        Some("array") => format!("List[{}]", py_type(defs, &schema["items"])),
        Some("object") => "Dict[str, Any]".into(),
        _ => "Any".into(),
    }
}

/// The Python annotation of a def (a model, or a union of models for a discriminated union).
fn py_def_type(defs: &Map<String, Value>, name: &str) -> String {
    if defs[name].get("discriminator").is_some() {
        let leaves: Vec<String> = union_leaves(defs, name).iter().map(|(_, d)| format!("m.{d}")).collect();
        format!("Union[{}]", leaves.join(", "))
    } else {
        format!("m.{name}")
    }
}

fn py_response_type(c: &CommandSpec<'_>) -> String {
    match c.response {
        None => "None".into(),
        Some(r) if c.nullable || c.optional => format!("Optional[m.{r}]"),
        Some(r) => format!("m.{r}"),
    }
}

fn py_docstring(out: &mut String, indent: &str, text: &str) {
    let text = text.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"");
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("");
    let _ = write!(out, "{indent}\"\"\"{first}");
    let rest: Vec<&str> = lines.collect();
    if rest.is_empty() {
        out.push_str("\"\"\"\n");
    } else {
        out.push('\n');
        for line in rest {
            if line.is_empty() {
                out.push('\n');
            } else {
                let _ = writeln!(out, "{indent}{line}");
            }
        }
        let _ = writeln!(out, "{indent}\"\"\"");
    }
}

/// `clients/python/src/agentwire_client/protocol.py`.
pub fn python_protocol(bundle: &Value) -> String {
    let defs = defs(bundle);
    let commands = commands(defs);
    let frames = agent_frames(defs);
    let mut out = String::new();
    let _ = writeln!(out, "# {HEADER_NOTE}");
    out.push_str(
        "\"\"\"The protocol layer the model generator cannot know: command → response model, one typed\n\
         method per command, event type → model.\"\"\"\n\n\
         from __future__ import annotations\n\n\
         from typing import Any, Awaitable, Callable, Dict, List, Literal, Optional, Tuple, Union, overload\n\n\
         from . import models as m\n\n",
    );

    out.push_str("#: The model of each command's success `data` (its `x-response`); None when it carries none.\n");
    out.push_str("RESPONSE_MODELS: Dict[str, Any] = {\n");
    for c in &commands {
        let model = c.response.map_or_else(|| "None".to_owned(), |r| format!("m.{r}"));
        let _ = writeln!(out, "    \"{}\": {model},", c.tag);
    }
    out.push_str("}\n\n#: Every command `type`, in schema order.\nCOMMAND_TYPES: Tuple[str, ...] = (\n");
    for c in &commands {
        let _ = writeln!(out, "    \"{}\",", c.tag);
    }
    out.push_str(")\n\n#: The model of each frame the agent sends on its own (events, UI requests, host tool calls).\n");
    out.push_str("EVENT_MODELS: Dict[str, Any] = {\n");
    for (tag, def) in &frames {
        let _ = writeln!(out, "    \"{tag}\": m.{def},");
    }
    out.push_str("}\n\n#: Any frame the agent sends on its own whose `type` the schema knows.\nAgentEvent = Union[\n");
    let mut leaves = Vec::new();
    for (_, def) in &frames {
        if defs[*def].get("discriminator").is_some() {
            leaves.extend(union_leaves(defs, def).into_iter().map(|(_, d)| d));
        } else {
            leaves.push(def);
        }
    }
    for d in &leaves {
        let _ = writeln!(out, "    m.{d},");
    }
    out.push_str("]\n\n#: A handler of one event type: a plain or an async callable.\nHandler = Callable[[Any], Union[None, Awaitable[None]]]\n\n\n");

    out.push_str("class CommandMethods:\n");
    py_docstring(&mut out, "    ", "One typed method per command. `AgentClient` implements `_call`.");
    out.push_str(
        "\n    async def _call(self, frame: Dict[str, Any], response_model: Any, timeout: Optional[float]) -> Any:\n\
         \x20       raise NotImplementedError\n",
    );
    for c in &commands {
        let name = py_name(c.tag);
        let mut sig = String::new();
        let mut body = String::new();
        let mut args_doc = String::new();
        let ordered = c.params.iter().filter(|p| p.required).chain(c.params.iter().filter(|p| !p.required));
        for p in ordered {
            let arg = py_name(p.name);
            let ty = py_type(defs, p.schema);
            if p.required {
                let _ = write!(sig, ", {arg}: {ty}");
                let _ = writeln!(body, "        frame[\"{}\"] = {arg}", p.name);
            } else {
                let _ = write!(sig, ", {arg}: Optional[{ty}] = None");
                let _ = writeln!(body, "        if {arg} is not None:\n            frame[\"{}\"] = {arg}", p.name);
            }
            let _ = writeln!(args_doc, "    {arg}: {}", p.description.replace('\n', " "));
        }
        let _ = writeln!(args_doc, "    timeout: Seconds to wait for the response (default: the client's).");
        let ret = py_response_type(c);
        let model = c.response.map_or_else(|| "None".to_owned(), |r| format!("m.{r}"));
        let _ = writeln!(out, "\n    async def {name}(self, *{sig}, timeout: Optional[float] = None) -> {ret}:");
        let doc = format!("{}\n\nSends `{}` ({}).\n\nArgs:\n{args_doc}", c.description, c.tag, c.def);
        py_docstring(&mut out, "        ", doc.trim_end());
        let _ = writeln!(out, "        frame: Dict[str, Any] = {{\"type\": \"{}\"}}", c.tag);
        out.push_str(&body);
        if ret == "None" {
            let _ = writeln!(out, "        await self._call(frame, None, timeout)");
        } else {
            let _ = writeln!(out, "        result: {ret} = await self._call(frame, {model}, timeout)\n        return result");
        }
    }

    out.push_str("\n\nclass EventSubscriptions:\n");
    py_docstring(&mut out, "    ", "Typed `on(type, handler)`; `AgentClient` implements `_subscribe`.");
    out.push_str(
        "\n    def _subscribe(self, event_type: str, handler: Handler) -> Callable[[], None]:\n\
         \x20       raise NotImplementedError\n",
    );
    for (tag, def) in &frames {
        let ty = py_def_type(defs, def);
        let _ = writeln!(
            out,
            "\n    @overload\n    def on(self, event_type: Literal[\"{tag}\"], handler: Callable[[{ty}], Union[None, Awaitable[None]]]) -> Callable[[], None]: ..."
        );
    }
    out.push_str(
        "\n    @overload\n    def on(self, event_type: str, handler: Handler) -> Callable[[], None]: ...\n\n\
         \x20   def on(self, event_type: str, handler: Handler) -> Callable[[], None]:\n",
    );
    py_docstring(
        &mut out,
        "        ",
        "Calls `handler` with every agent frame of this `type` (parsed into its model when the schema\nknows the type, else the raw dict). Returns a function that unsubscribes.",
    );
    out.push_str("        return self._subscribe(event_type, handler)\n");
    out
}

/// One wire method as the clients see it.
struct WireMethodSpec<'a> {
    name: &'a str,
    description: &'a str,
    /// The params def (`None`: params are ignored, e.g. `cancel`).
    params: Option<&'a str>,
    result: &'a str,
}

fn wire_methods(defs: &Map<String, Value>) -> Vec<WireMethodSpec<'_>> {
    union_leaves(defs, "WireRequest")
        .into_iter()
        .map(|(name, def)| {
            let d = &defs[def];
            WireMethodSpec {
                name,
                description: description(d),
                params: ref_name(&d["properties"]["params"]),
                result: ref_name(&d["x-result"]).expect("wire methods have x-result"),
            }
        })
        .collect()
}

/// Agent requests: (`params.type`, payload def, result def, the result's id field).
fn wire_agent_requests(defs: &Map<String, Value>) -> Vec<(&str, &str, &str, &'static str)> {
    union_leaves(defs, "WireAgentRequestParams")
        .into_iter()
        .map(|(kind, def)| {
            let d = &defs[def];
            let payload = ref_name(&d["properties"]["payload"]).expect("a payload def");
            let result = ref_name(&d["x-result"]).expect("agent requests have x-result");
            let id_field = if defs[result]["properties"].get("tool_call_id").is_some() { "tool_call_id" } else { "request_id" };
            (kind, payload, result, id_field)
        })
        .collect()
}

/// Wire events: (`type`, payload def, description).
fn wire_events(defs: &Map<String, Value>) -> Vec<(&str, &str, &str)> {
    union_leaves(defs, "WireEvent")
        .into_iter()
        .map(|(kind, def)| (kind, ref_name(&defs[def]["properties"]["payload"]).expect("a payload def"), description(&defs[def])))
        .collect()
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

/// `clients/python/src/agentwire_client/wire_protocol.py`: the wire dialect's typed methods and
/// event / agent-request model maps.
pub fn python_wire(bundle: &Value) -> String {
    let defs = defs(bundle);
    let mut out = String::new();
    let _ = writeln!(out, "# {HEADER_NOTE}");
    out.push_str(
        "\"\"\"The JSON-RPC wire dialect's protocol layer: one typed method per wire method, and the\n\
         models of its events and agent requests.\"\"\"\n\n\
         from __future__ import annotations\n\n\
         from typing import Any, Dict, List, Literal, Optional, Tuple, Union\n\n\
         from . import models as m\n\n",
    );
    out.push_str("#: The model of each wire method's result (`x-result`).\nWIRE_RESULT_MODELS: Dict[str, Any] = {\n");
    for mth in wire_methods(defs) {
        let _ = writeln!(out, "    \"{}\": m.{},", mth.name, mth.result);
    }
    out.push_str("}\n\n#: The payload model of each wire event type.\nWIRE_EVENT_MODELS: Dict[str, Any] = {\n");
    for (kind, payload, _) in wire_events(defs) {
        let _ = writeln!(out, "    \"{kind}\": m.{payload},");
    }
    out.push_str("}\n\n#: Each agent request type: (payload model, result model, the result field carrying the request id).\nWIRE_AGENT_REQUESTS: Dict[str, Tuple[Any, Any, str]] = {\n");
    for (kind, payload, result, id_field) in wire_agent_requests(defs) {
        let _ = writeln!(out, "    \"{kind}\": (m.{payload}, m.{result}, \"{id_field}\"),");
    }
    out.push_str("}\n\n\nclass WireMethods:\n");
    py_docstring(&mut out, "    ", "One typed method per wire method. `WireClient` implements `_call`.");
    out.push_str(
        "\n    async def _call(self, method: str, params: Optional[Dict[str, Any]], result_model: Any, timeout: Optional[float]) -> Any:\n\
         \x20       raise NotImplementedError\n",
    );
    for mth in wire_methods(defs) {
        let name = py_name(mth.name);
        let mut sig = String::new();
        let mut body = String::new();
        let mut args_doc = String::new();
        if let Some(p) = mth.params {
            let d = &defs[p];
            let required: Vec<&str> = d["required"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
            let props = d["properties"].as_object().expect("params are objects");
            let ordered = props.iter().filter(|(k, _)| required.contains(&k.as_str())).chain(props.iter().filter(|(k, _)| !required.contains(&k.as_str())));
            for (k, schema) in ordered {
                let arg = py_name(k);
                let ty = py_type(defs, schema);
                if required.contains(&k.as_str()) {
                    let _ = write!(sig, ", {arg}: {ty}");
                    let _ = writeln!(body, "        params[\"{k}\"] = {arg}");
                } else {
                    let _ = write!(sig, ", {arg}: Optional[{ty}] = None");
                    let _ = writeln!(body, "        if {arg} is not None:\n            params[\"{k}\"] = {arg}");
                }
                let _ = writeln!(args_doc, "    {arg}: {}", description(schema).replace('\n', " "));
            }
        }
        let _ = writeln!(args_doc, "    timeout: Seconds to wait for the result (default: the client's).");
        let _ = writeln!(out, "\n    async def {name}(self, *{sig}, timeout: Optional[float] = None) -> m.{}:", mth.result);
        let doc = format!("{}\n\nSends `{}`.\n\nArgs:\n{args_doc}", mth.description, mth.name);
        py_docstring(&mut out, "        ", doc.trim_end());
        if mth.params.is_some() {
            out.push_str("        params: Dict[str, Any] = {}\n");
            out.push_str(&body);
            let _ = writeln!(out, "        result: m.{} = await self._call(\"{}\", params, m.{}, timeout)\n        return result", mth.result, mth.name, mth.result);
        } else {
            let _ = writeln!(out, "        result: m.{} = await self._call(\"{}\", None, m.{}, timeout)\n        return result", mth.result, mth.name, mth.result);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle() -> Value {
        serde_json::from_str(crate::protocol::generated::BUNDLE_JSON).unwrap()
    }

    #[test]
    fn every_command_gets_a_typed_method_in_both_languages() {
        let b = bundle();
        let ts = typescript_protocol(&b);
        let py = python_protocol(&b);
        for info in crate::protocol::generated::RPC_COMMANDS {
            let camel = info.command.to_lower_camel_case();
            assert!(ts.contains(&format!("  {camel}(params: CommandParams<\"{}\">", info.command)), "{camel}");
            assert!(py.contains(&format!("    async def {}(self, *", py_name(info.command))), "{}", info.command);
        }
        assert!(ts.contains("  set_model: T.Model;"));
        assert!(ts.contains("  cycle_model: T.CycleModelResult | null;"));
        assert!(py.contains("async def set_model(self, *, provider: str, model_id: str, timeout: Optional[float] = None) -> m.Model:"));
        assert!(py.contains("frame[\"modelId\"] = model_id"));
    }

    #[test]
    fn wire_layers_cover_every_method_event_and_agent_request() {
        let b = bundle();
        let ts = typescript_wire(&b);
        let py = python_wire(&b);
        for m in crate::protocol::generated::WIRE_METHODS {
            assert!(ts.contains(&format!("  {}: {{ params: ", m.name)), "{}", m.name);
            assert!(py.contains(&format!("    async def {}(self, *", py_name(m.name))), "{}", m.name);
        }
        assert!(ts.contains("  setPlanMode(params: T.WireSetPlanModeParams, options?: RequestOptions): Promise<T.WireSetPlanModeResult> {"));
        assert!(ts.contains("  cancel(options?: RequestOptions): Promise<T.WireEmptyResult> {"));
        assert!(ts.contains("  ToolCallRequest: { payload: T.WireToolCallRequestPayload; result: T.WireToolCallResult; idField: \"tool_call_id\" };"));
        assert!(ts.contains("  TurnBegin: T.WireTurnBeginPayload;"));
        assert!(py.contains("async def prompt(self, *, user_input: Union[str, List[m.WireContentPart]], timeout: Optional[float] = None) -> m.WirePromptResult:"), "{py}");
    }

    #[test]
    fn event_maps_cover_ui_requests_and_host_tool_frames() {
        let b = bundle();
        let ts = typescript_protocol(&b);
        assert!(ts.contains("  message_update: T.MessageUpdateEvent;"));
        assert!(ts.contains("  extension_ui_request: T.ExtensionUiRequest;"));
        assert!(ts.contains("  host_tool_cancel: T.HostToolCancel;"));
        assert!(!ts.contains("  response: "));
        let py = python_protocol(&b);
        assert!(py.contains("Literal[\"extension_ui_request\"], handler: Callable[[Union[m.UiSelectRequest,"));
    }

    #[test]
    fn generator_input_drops_titles_but_not_title_properties() {
        let b = bundle();
        let ts = generator_input(&b, Target::TypeScript);
        assert!(ts.get("$id").is_none());
        let confirm = &ts["$defs"]["UiConfirmRequest"];
        assert!(confirm.get("title").is_none());
        assert!(confirm["properties"]["title"].is_object(), "the UI request's `title` field stays");
        // `$ref` siblings go for TypeScript only.
        let prop = &b["$defs"]["HostToolUpdate"]["properties"]["partialResult"];
        assert!(prop.get("description").is_some());
        assert!(ts["$defs"]["HostToolUpdate"]["properties"]["partialResult"].get("description").is_none());
        assert_eq!(ts["$defs"]["RpcResponse"]["properties"]["data"]["tsType"], "unknown");
        let py = generator_input(&b, Target::Python);
        assert!(py["$defs"]["HostToolUpdate"]["properties"]["partialResult"].get("description").is_some());
        // Value defs are inlined for Python, models stay references.
        let level = &py["$defs"]["SetThinkingLevelCommand"]["properties"]["level"];
        assert!(level.get("$ref").is_none() && level["enum"].is_array(), "{level}");
        assert!(py["$defs"]["HostToolUpdate"]["properties"]["partialResult"]["$ref"].is_string());
    }
}
