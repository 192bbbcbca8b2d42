//! The client bindings' generated layers (TypeScript and Python), from the bundled schema.
//!
//! The type declarations themselves come from well-kept generators (json-schema-to-typescript,
//! datamodel-code-generator), fed [`generator_input`]. What those tools cannot know — which
//! `data` answers which command (`x-response`), one typed method per command, the map from an
//! event's `type` to its type — is emitted here: [`typescript_protocol`] and
//! [`python_protocol`]. `clients/generate` writes all four files; drift tests (Rust for the
//! two emitted here, the clients' own suites for the tools' output) fail when they are stale.
//!
//! This file reads the schema into what both languages share (commands, agent frames, wire
//! methods, events and agent requests); each language's emitters live in their own file
//! (`typescript.rs`, `python.rs`), and the input for the external generators in
//! `input.rs`.

mod input;
mod python;
mod typescript;

pub use input::{generator_input, Target};
pub use python::{python_protocol, python_wire};
pub use typescript::{typescript_protocol, typescript_wire};

use serde_json::{Map, Value};

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

#[cfg(test)]
mod tests {
    use heck::ToLowerCamelCase;

    use super::python::py_name;
    use super::*;

    fn bundle() -> Value {
        serde_json::from_str(crate::protocol::embedded::bundle_json()).unwrap()
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
