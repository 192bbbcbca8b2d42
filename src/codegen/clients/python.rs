//! The Python client's generated layers: `protocol.py` (JSONL dialect) and `wire_protocol.py`
//! (JSON-RPC wire dialect).

use std::fmt::Write as _;

use heck::ToSnakeCase;
use serde_json::{Map, Value};

use super::{agent_frames, commands, defs, description, ref_name, union_leaves, wire_agent_requests, wire_events, wire_methods, CommandSpec, HEADER_NOTE};

const PY_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "timeout",
];

/// A schema name as a Python identifier (snake case; keywords get a trailing `_`).
pub(super) fn py_name(name: &str) -> String {
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
