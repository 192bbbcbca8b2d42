//! Renders `docs/protocol.md` from the bundled schema and `schema/examples/`, and its ACP part
//! from the vendored official ACP schema (`schema/acp/`) and our method table.
//!
//! Every command, event, sub-protocol frame, wire method, payload and error code gets a
//! section with its description, a field table and an example taken from the examples (which
//! the tests validate); every ACP method agentwire answers or sends gets its params and result
//! with the types they reach (anchors `acp-def-…`, since ACP's def names overlap ours).
//! `tests/docs_fresh.rs` regenerates it and fails when the committed file differs.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::bundle::{BundleError, SchemaSet};
use crate::protocol::acp::{AcpMethodInfo, ACP_AGENT_METHODS, ACP_CLIENT_METHODS};
use crate::protocol::embedded::{acp_schema_json, example_files, schema_files};

struct Docs {
    /// Anchor prefix of type sections: `def-` for ours, `acp-def-` for ACP's.
    prefix: &'static str,
    defs: Map<String, Value>,
    examples: Vec<(String, Value)>,
    out: String,
    /// Defs already given a section (so shared types get one section, linked from the rest).
    written: BTreeSet<String>,
    /// Defs linked from a section but not yet written.
    referenced: BTreeSet<String>,
}

/// Why the protocol reference could not be rendered from the embedded schema texts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocsError {
    /// The schema files do not bundle.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// An example or the ACP schema is not JSON.
    #[error("{file}: {source}")]
    Json {
        /// The file.
        file: String,
        /// The parser's reason.
        source: serde_json::Error,
    },
}

/// The protocol reference in Markdown.
pub fn protocol_markdown() -> Result<String, DocsError> {
    let set = SchemaSet::from_texts(schema_files().iter().copied())?;
    let bundle = set.bundle()?;
    let defs = bundle["$defs"].as_object().cloned().unwrap_or_default();
    let mut examples = Vec::new();
    for (file, text) in example_files() {
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line).map_err(|source| DocsError::Json { file: (*file).to_owned(), source })?;
            examples.push(((*file).to_owned(), v));
        }
    }
    let mut d = Docs { prefix: "def-", defs, examples, out: String::new(), written: BTreeSet::new(), referenced: BTreeSet::new() };
    d.render();
    let acp: Value = serde_json::from_str(acp_schema_json()).map_err(|source| DocsError::Json { file: "schema/acp/schema.json".into(), source })?;
    let defs = acp["$defs"].as_object().cloned().unwrap_or_default();
    let mut a = Docs { prefix: "acp-def-", defs, examples: Vec::new(), out: d.out, written: BTreeSet::new(), referenced: BTreeSet::new() };
    a.render_acp();
    Ok(a.out)
}

fn members(defs: &Map<String, Value>, union: &str) -> Vec<String> {
    defs.get(union)
        .and_then(|d| d["oneOf"].as_array())
        .map(|a| a.iter().filter_map(|m| m["$ref"].as_str()).map(|r| r.trim_start_matches("#/$defs/").to_owned()).collect())
        .unwrap_or_default()
}

fn desc(v: &Value) -> String {
    v.get("description").and_then(Value::as_str).unwrap_or_default().replace('\n', " ")
}

fn code(v: &Value) -> String {
    format!("`{}`", serde_json::to_string(v).unwrap_or_default())
}

impl Docs {
    fn line(&mut self, s: &str) {
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn render(&mut self) {
        self.line("# agentwire protocol reference");
        self.line("");
        self.line("<!-- Generated from schema/*.schema.json and schema/examples/ by `agentwire schema docs`. Do not edit:");
        self.line("     regenerate with `AGENTWIRE_UPDATE_DOCS=1 cargo test --test docs_fresh`. -->");
        self.line("");
        self.line("Two dialects share one agent. **JSONL RPC** (pi / oh-my-pi): one JSON object per line, commands");
        self.line("`{id?, type, …}`, one `response` per command, streamed events. **Wire** (kimi-cli): JSON-RPC 2.0 with");
        self.line("`event` notifications and `request`s from the agent. Every frame below is defined in `schema/`;");
        self.line("`agentwire schema bundle` prints it as one JSON Schema and `agentwire schema validate` checks frames.");
        self.line("");
        self.line("Contents: [JSONL commands](#jsonl-commands) · [Responses](#jsonl-responses) · [Events](#jsonl-events) ·");
        self.line("[Assistant message events](#assistant-message-events) · [Extension UI](#extension-ui-sub-protocol) ·");
        self.line("[Host tools](#host-tool-sub-protocol) · [JSONL types](#jsonl-types) · [Wire envelope](#wire-envelope) ·");
        self.line("[Wire error codes](#wire-error-codes) · [Wire methods](#wire-methods) · [Wire events](#wire-events) ·");
        self.line("[Wire agent requests](#wire-agent-requests) · [Wire types](#wire-types) · [ACP methods](#acp-methods) ·");
        self.line("[ACP client methods](#acp-client-methods) · [ACP types](#acp-types)");
        self.line("");

        self.line("## JSONL commands");
        self.line("");
        self.line("Each command line gets exactly one `response` with the command's `id` echoed (any JSON value).");
        self.line("`data` is the command's result type; \"no data\" means the key is absent.");
        self.line("");
        for m in members(&self.defs, "RpcCommand") {
            self.command_section(&m);
        }
        self.line("## JSONL responses");
        self.line("");
        self.def_section("RpcResponse", 3);
        self.def_section("RpcErrorCode", 3);
        self.examples_where(|f| f["type"] == "response" && f["success"] == false, 4);

        self.line("## JSONL events");
        self.line("");
        for m in members(&self.defs, "RpcEvent") {
            let tag = self.tag_of(&m, "type");
            self.framed_section(&m, &tag, |f| f["type"] == tag.as_str());
        }
        self.line("## Assistant message events");
        self.line("");
        self.line("The `assistantMessageEvent` of a `message_update`, discriminated by `type`.");
        self.line("");
        for m in members(&self.defs, "AssistantMessageEvent") {
            let tag = self.tag_of(&m, "type");
            self.framed_section(&m, &tag, |f| f.pointer("/assistantMessageEvent/type") == Some(&Value::from(tag.as_str())));
        }
        self.line("## Extension UI sub-protocol");
        self.line("");
        self.line("`extension_ui_request` frames, discriminated by `method`; dialogs are answered with `extension_ui_response`.");
        self.line("");
        for m in members(&self.defs, "ExtensionUiRequest") {
            let tag = self.tag_of(&m, "method");
            self.framed_section(&m, &tag, |f| f["type"] == "extension_ui_request" && f["method"] == tag.as_str());
        }
        self.framed_section("ExtensionUiResponse", "extension_ui_response", |f| f["type"] == "extension_ui_response");
        self.line("## Host tool sub-protocol");
        self.line("");
        self.def_section("HostToolDefinition", 3);
        for (m, tag) in [("HostToolCall", "host_tool_call"), ("HostToolUpdate", "host_tool_update"), ("HostToolResult", "host_tool_result"), ("HostToolCancel", "host_tool_cancel")] {
            self.framed_section(m, tag, |f| f["type"] == tag);
        }
        self.line("## JSONL types");
        self.line("");
        self.flush_referenced(|n| !n.starts_with("Wire"));

        self.line("## Wire envelope");
        self.line("");
        for m in ["WireSuccessResponse", "WireErrorResponse", "WireErrorObject", "WireEventNotification", "WireAgentRequest"] {
            self.def_section(m, 3);
        }
        self.line("## Wire error codes");
        self.line("");
        self.line("| code | name | message | meaning |");
        self.line("|---|---|---|---|");
        let codes = self.defs["WireErrorObject"]["x-error-codes"].as_array().cloned().unwrap_or_default();
        for c in codes {
            let row = format!(
                "| {} | `{}` | {} | {} |",
                c["code"],
                c["name"].as_str().unwrap_or_default(),
                c["message"].as_str().unwrap_or_default().replace('|', "\\|"),
                c["meaning"].as_str().unwrap_or_default()
            );
            self.line(&row);
        }
        self.line("");
        self.line("## Wire methods");
        self.line("");
        for m in members(&self.defs, "WireRequest") {
            self.wire_method_section(&m);
        }
        self.line("## Wire events");
        self.line("");
        self.line("`{\"jsonrpc\":\"2.0\",\"method\":\"event\",\"params\":{\"type\",\"payload\"}}`, discriminated by `params.type`.");
        self.line("");
        for m in members(&self.defs, "WireEvent") {
            let tag = self.tag_of(&m, "type");
            self.framed_section(&m, &tag, |f| f["method"] == "event" && f.pointer("/params/type") == Some(&Value::from(tag.as_str())));
        }
        self.line("## Wire agent requests");
        self.line("");
        self.line("`{\"jsonrpc\":\"2.0\",\"method\":\"request\",\"id\",\"params\":{\"type\",\"payload\"}}`; the client answers with the same id.");
        self.line("");
        for m in members(&self.defs, "WireAgentRequestParams") {
            let tag = self.tag_of(&m, "type");
            let result = self.defs[&m]["x-result"]["$ref"].as_str().unwrap_or_default().trim_start_matches("#/$defs/").to_owned();
            self.framed_section(&m, &tag, |f| f["method"] == "request" && f.pointer("/params/type") == Some(&Value::from(tag.as_str())));
            let line = format!("The client answers with [{result}](#def-{result}).\n");
            self.line(&line);
            self.referenced.insert(result);
        }
        self.line("## Wire types");
        self.line("");
        self.flush_referenced(|_| true);
    }

    /// The ACP part: `agentwire --mode acp` speaks the official schema as vendored; only the
    /// methods agentwire implements (`schema/acp/methods.json`) are listed.
    fn render_acp(&mut self) {
        self.line("## ACP methods");
        self.line("");
        self.line("`agentwire --mode acp` speaks the [Agent Client Protocol](https://agentclientprotocol.com) v1: JSON-RPC 2.0,");
        self.line("one frame per line. Its types are the official schema, vendored unchanged in `schema/acp/schema.json`");
        self.line("(`agentwire schema bundle --dialect acp` prints it); what agentwire does with each method is in");
        self.line("[acp-mode.md](acp-mode.md). Methods not listed here are answered -32601.");
        self.line("");
        for m in ACP_AGENT_METHODS {
            self.acp_method_section(m);
        }
        self.line("## ACP client methods");
        self.line("");
        self.line("What agentwire sends to the client: notifications, and requests the client answers with the same id.");
        self.line("");
        for m in ACP_CLIENT_METHODS {
            self.acp_method_section(m);
        }
        self.line("## ACP types");
        self.line("");
        self.flush_referenced(|_| true);
    }

    fn acp_method_section(&mut self, m: &AcpMethodInfo) {
        let a = format!("<a id=\"acp-method-{}\"></a>", m.method.replace('/', "-"));
        self.line(&a);
        let d = self.defs[m.params].clone();
        let h = format!("### `{}`\n\n{}\n", m.method, desc(&d));
        self.line(&h);
        let params = self.link(m.params);
        let l = match m.result {
            Some(result) => format!("Params: {params}. Result: {}.\n", self.link(result)),
            None => format!("Params: {params}. A notification: never answered.\n"),
        };
        self.line(&l);
    }

    /// A link to the type section of `def` (written later if not yet).
    fn link(&mut self, def: &str) -> String {
        if !self.written.contains(def) {
            self.referenced.insert(def.to_owned());
        }
        format!("[{def}](#{}{def})", self.prefix)
    }

    fn tag_of(&self, def: &str, prop: &str) -> String {
        self.defs[def].pointer(&format!("/properties/{prop}/const")).and_then(Value::as_str).unwrap_or_default().to_owned()
    }

    fn anchor(&mut self, def: &str) {
        let a = format!("<a id=\"{}{def}\"></a>", self.prefix);
        self.line(&a);
        self.written.insert(def.to_owned());
        self.referenced.remove(def);
    }

    fn command_section(&mut self, def: &str) {
        let tag = self.tag_of(def, "type");
        let d = self.defs[def].clone();
        self.anchor(def);
        let h = format!("### `{tag}`\n\n{}\n", desc(&d));
        self.line(&h);
        if let Some(alias) = d.get("x-alias-of").and_then(Value::as_str) {
            let l = format!("Same operation as `{alias}` (pi's name); answers with `\"command\":\"{tag}\"`.\n");
            self.line(&l);
        }
        self.fields(def);
        let data = match d.pointer("/x-response/$ref").and_then(Value::as_str) {
            None => "no data".to_owned(),
            Some(r) => {
                let r = r.trim_start_matches("#/$defs/").to_owned();
                self.referenced.insert(r.clone());
                let mut s = format!("[{r}](#def-{r})");
                if d.get("x-response-nullable") == Some(&Value::Bool(true)) {
                    s.push_str(", or `null`");
                }
                if d.get("x-response-optional") == Some(&Value::Bool(true)) {
                    s.push_str(", or absent");
                }
                s
            }
        };
        let l = format!("Response `data`: {data}.\n");
        self.line(&l);
        let request = self.example(|f| f["type"] == tag.as_str() && f.get("success").is_none());
        let response = self.example(|f| f["type"] == "response" && f["command"] == tag.as_str() && f["success"] == true);
        self.example_block(&[request, response]);
    }

    fn wire_method_section(&mut self, def: &str) {
        let tag = self.tag_of(def, "method");
        let d = self.defs[def].clone();
        self.anchor(def);
        let h = format!("### `{tag}`\n\n{}\n", desc(&d));
        self.line(&h);
        let params = d.pointer("/properties/params/$ref").and_then(Value::as_str).map(|r| r.trim_start_matches("#/$defs/").to_owned());
        let result = d.pointer("/x-result/$ref").and_then(Value::as_str).unwrap_or_default().trim_start_matches("#/$defs/").to_owned();
        let params_text = match &params {
            Some(p) => {
                self.referenced.insert(p.clone());
                format!("[{p}](#def-{p})")
            }
            None => "ignored (any value or absent)".to_owned(),
        };
        self.referenced.insert(result.clone());
        let l = format!("Params: {params_text}. Result: [{result}](#def-{result}).\n");
        self.line(&l);
        let request = self.example(|f| f["method"] == tag.as_str());
        let id = request.as_ref().and_then(|r| r.get("id").cloned());
        let response = id.and_then(|id| self.example(|f| f.get("method").is_none() && f["id"] == id && f.get("result").is_some()));
        self.example_block(&[request, response]);
    }

    fn framed_section(&mut self, def: &str, tag: &str, matches: impl Fn(&Value) -> bool) {
        self.anchor(def);
        let d = self.defs[def].clone();
        let h = format!("### `{tag}`\n\n{}\n", desc(&d));
        self.line(&h);
        self.fields(def);
        let ex = self.example(matches);
        self.example_block(&[ex]);
    }

    fn def_section(&mut self, def: &str, level: usize) {
        self.anchor(def);
        let d = self.defs[def].clone();
        let title = d.get("title").and_then(Value::as_str).unwrap_or(def);
        let h = format!("{} {def}\n\n{}{}\n", "#".repeat(level), if title == def { String::new() } else { format!("*{title}.* ") }, desc(&d));
        self.line(&h);
        if let Some(values) = d.get("enum").and_then(Value::as_array) {
            let list: Vec<String> = values.iter().map(code).collect();
            let l = format!("One of: {}.\n", list.join(", "));
            self.line(&l);
        } else if let Some(one_of) = d.get("oneOf").and_then(Value::as_array) {
            let prop = d.pointer("/discriminator/propertyName").and_then(Value::as_str).unwrap_or_default().to_owned();
            // An inline member carries its tag (ACP's `{properties: {tag: {const}}, allOf: [{$ref}]}`):
            // shown, since several tags may share one type.
            let alts: Vec<String> = one_of
                .iter()
                .map(|m| match m.pointer(&format!("/properties/{prop}/const")).and_then(Value::as_str) {
                    Some(tag) if !prop.is_empty() => format!("`{tag}`: {}", self.type_of(m)),
                    _ => self.type_of(m),
                })
                .collect();
            let by = Some(prop.as_str()).filter(|p| !p.is_empty()).map(|p| format!(" (discriminated by `{p}`)")).unwrap_or_default();
            let l = format!("One of{by}: {}.\n", alts.join(", "));
            self.line(&l);
        } else {
            self.fields(def);
        }
    }

    fn examples_where(&mut self, matches: impl Fn(&Value) -> bool, max: usize) {
        let found: Vec<Option<Value>> = self.examples.iter().filter(|(_, f)| matches(f)).take(max).map(|(_, f)| Some(f.clone())).collect();
        self.example_block(&found);
    }

    fn flush_referenced(&mut self, keep: impl Fn(&str) -> bool) {
        loop {
            let next = self.referenced.iter().find(|n| keep(n) && !self.written.contains(*n)).cloned();
            let Some(next) = next else { break };
            self.def_section(&next, 3);
        }
        // Whatever this dialect does not reach stays for the other section.
        let rest: Vec<String> = self.referenced.iter().filter(|n| keep(n)).cloned().collect();
        for r in rest {
            self.referenced.remove(&r);
        }
    }

    fn fields(&mut self, def: &str) {
        let d = self.defs[def].clone();
        let Some(props) = d.get("properties").and_then(Value::as_object) else { return };
        if props.is_empty() {
            self.line("No fields.\n");
            return;
        }
        let required: BTreeSet<&str> = d["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        self.line("| field | type | required | description |");
        self.line("|---|---|---|---|");
        for (name, p) in props {
            let row = format!(
                "| `{name}` | {} | {} | {} |",
                self.type_of(p),
                if required.contains(name.as_str()) { "yes" } else { "no" },
                desc(p).replace('|', "\\|")
            );
            self.line(&row);
        }
        if d.get("x-open") == Some(&Value::Bool(true)) {
            self.line("\nOther keys are allowed and passed through.");
        }
        self.line("");
    }

    fn type_of(&mut self, p: &Value) -> String {
        if let Some(r) = p.get("$ref").and_then(Value::as_str) {
            let name = r.trim_start_matches("#/$defs/").to_owned();
            return self.link(&name);
        }
        // schemars' described reference (the ACP schema): `{description, allOf: [{$ref}]}`.
        if let Some([only]) = p.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
            return self.type_of(only);
        }
        if let Some(c) = p.get("const") {
            return code(c);
        }
        if let Some(values) = p.get("enum").and_then(Value::as_array) {
            return values.iter().map(code).collect::<Vec<_>>().join(" \\| ");
        }
        if let Some(any) = p.get("anyOf").or_else(|| p.get("oneOf")).and_then(Value::as_array) {
            return any.iter().map(|m| self.type_of(m)).collect::<Vec<_>>().join(" \\| ");
        }
        let base = |t: &str, this: &mut Self| -> String {
            match t {
                "array" => format!("{}[]", p.get("items").map(|i| this.type_of(i)).unwrap_or_else(|| "any".into())),
                "object" => match p.get("additionalProperties") {
                    Some(ap) if ap.is_object() && !ap.as_object().is_some_and(Map::is_empty) => format!("map of {}", this.type_of(ap)),
                    _ => "object".into(),
                },
                other => other.to_owned(),
            }
        };
        match p.get("type") {
            Some(Value::String(t)) => base(t, self),
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).map(|t| base(t, self)).collect::<Vec<_>>().join(" \\| "),
            _ => "any".into(),
        }
    }

    fn example(&self, matches: impl Fn(&Value) -> bool) -> Option<Value> {
        self.examples.iter().find(|(_, f)| matches(f)).map(|(_, f)| f.clone())
    }

    fn example_block(&mut self, frames: &[Option<Value>]) {
        let frames: Vec<&Value> = frames.iter().flatten().collect();
        if frames.is_empty() {
            return;
        }
        let mut block = String::from("```json\n");
        for f in frames {
            let _ = writeln!(block, "{}", serde_json::to_string(f).unwrap_or_default());
        }
        block.push_str("```\n");
        self.line(&block);
    }
}
