//! Build-time generator for the Agent Client Protocol (`schema/acp/`): Rust types from the
//! vendored official schema, plus the method table and the typed request enums from
//! `schema/acp/methods.json`; the `AcpAgentHandler` trait, its dispatch and the per-method
//! types come from the handler generator every dialect shares (`handlers.rs`). Compiled only
//! into `build.rs` (it needs typify).
//!
//! The official schema follows schemars' conventions, not ours: a union member is
//! `{properties: {tag: {const}}, required: [tag], allOf: [{$ref: Member}]}` and a described
//! reference is `{description, allOf: [{$ref}]}`. typify 0.8 cannot merge `allOf`s (it panics),
//! so the pipeline normalizes what it hands to typify, never the vendored file:
//!
//! - a one-element `allOf` holding only a `$ref` becomes that `$ref`;
//! - a union member with its own `properties` and such an `allOf` gets the referenced def's
//!   properties and `required` merged in (typify then emits an internally tagged enum with the
//!   member's fields).
//!
//! - an `anyOf` whose members are all strings (known values plus "any other string", e.g.
//!   `SessionConfigOptionCategory`) becomes a plain string, and one whose members are all
//!   arrays (`SessionConfigSelectOptions`) a `oneOf`: typify turns such an `anyOf` into a
//!   struct of flattened options that serde cannot serialize.
//!
//! - an open union (v2: known members plus an "other" member defined by `not` them) loses the
//!   "other" member and becomes a `oneOf` of the known ones: an unknown value passes
//!   validation and then fails to read, so a request carrying one is -32602 naming it, a
//!   notification carrying one is ignored (logged), and an unknown permission outcome is no
//!   approval;
//! - a union member that refers to another union (v2's `state_update`: `StateUpdate`) gets
//!   that union's fields flattened in, its discriminator a string (typify has no nested
//!   internally tagged enums);
//! - a `format: date-time` string stays a plain string (typify would type it with chrono).
//!
//! Empty arrays are serialized (typify would skip them).
//!
//! Only the defs reachable from the methods agentwire implements are generated (the rest of
//! the protocol, e.g. elicitation, is not needed and stays in the schema for validation).
//! Validation always uses the vendored schema as it is (`crate::protocol::acp`).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use heck::{ToSnakeCase, ToUpperCamelCase};
use quote::{format_ident, quote};
use serde_json::{Map, Value};

use crate::handlers::{jsonrpc_handler, method_types, HandlerMethod};
use crate::rust_types::CodegenError;

/// One method of `methods.json`.
struct Method {
    method: String,
    params: String,
    result: Option<String>,
    /// Typed from the unstable schema beside the stable one (`"schema": "unstable"`).
    unstable: bool,
}

fn methods(table: &Value, side: &str, dir: &str) -> Result<Vec<Method>, CodegenError> {
    let list = table.get(side).and_then(Value::as_array).ok_or_else(|| CodegenError::Schema { at: format!("{dir}/methods.json"), reason: format!("no `{side}` list") })?;
    list.iter()
        .map(|m| {
            let field = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
            Ok(Method {
                method: field("method").ok_or_else(|| CodegenError::Schema { at: format!("{dir}/methods.json"), reason: "an entry has no `method`".into() })?,
                params: field("params").ok_or_else(|| CodegenError::Schema { at: format!("{dir}/methods.json"), reason: "an entry has no `params`".into() })?,
                result: field("result"),
                unstable: match field("schema").as_deref() {
                    None | Some("stable") => false,
                    Some("unstable") => true,
                    Some(other) => return Err(CodegenError::Schema { at: format!("{dir}/methods.json"), reason: format!("`{}` names the schema `{other}` (stable or unstable)", field("method").unwrap_or_default()) }),
                },
            })
        })
        .collect()
}

fn refs(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x.as_str()) {
                    ("$ref", Some(r)) => {
                        out.insert(r.trim_start_matches("#/$defs/").to_owned());
                    }
                    _ => refs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

/// The def names reachable from `roots`.
fn reachable(defs: &Map<String, Value>, roots: &[String], dir: &str) -> Result<BTreeSet<String>, CodegenError> {
    let mut keep: BTreeSet<String> = BTreeSet::new();
    let mut todo: Vec<String> = roots.to_vec();
    while let Some(name) = todo.pop() {
        if !keep.insert(name.clone()) {
            continue;
        }
        let def = defs.get(&name).ok_or_else(|| CodegenError::MissingDef { file: format!("{dir}/schema.json"), def: name.clone() })?;
        let mut found = BTreeSet::new();
        refs(def, &mut found);
        todo.extend(found.into_iter().filter(|n| !keep.contains(n)));
    }
    Ok(keep)
}

/// The typify-ready form of a schema node (see the module docs).
fn normalize(v: &mut Value, defs: &Map<String, Value>) {
    match v {
        Value::Array(a) => a.iter_mut().for_each(|x| normalize(x, defs)),
        Value::Object(m) => {
            for x in m.values_mut() {
                normalize(x, defs);
            }
            // An open union's "any other value" member (`title: "other"`, defined by `not` the
            // known ones) is left to validation: typify would turn the union into a struct of
            // flattened options. The known members then form a tagged `oneOf`.
            for keyword in ["anyOf", "oneOf"] {
                let Some(members) = m.get_mut(keyword).and_then(Value::as_array_mut) else { continue };
                let before = members.len();
                members.retain(|b| !(b.get("title").and_then(Value::as_str) == Some("other") && b.get("not").is_some()));
                if members.len() != before && keyword == "anyOf" {
                    let members = m.remove("anyOf").unwrap_or_default();
                    m.insert("oneOf".into(), members);
                }
                break;
            }
            // A date-time stays the string it is on the wire (typify would want chrono).
            if m.get("format").and_then(Value::as_str) == Some("date-time") {
                m.remove("format");
            }
            let any_of_type = |m: &Map<String, Value>, ty: &str| {
                m.get("anyOf").and_then(Value::as_array).is_some_and(|a| !a.is_empty() && a.iter().all(|b| b.get("type").and_then(Value::as_str) == Some(ty)))
            };
            if any_of_type(m, "string") {
                m.remove("anyOf");
                m.insert("type".into(), Value::String("string".into()));
                return;
            }
            if any_of_type(m, "array") {
                let members = m.remove("anyOf").unwrap_or_default();
                m.insert("oneOf".into(), members);
                return;
            }
            let single_ref = m
                .get("allOf")
                .and_then(Value::as_array)
                .filter(|a| a.len() == 1 && a[0].as_object().is_some_and(|o| o.len() == 1))
                .and_then(|a| a[0].get("$ref"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let Some(reference) = single_ref else { return };
            m.remove("allOf");
            let target = defs.get(reference.trim_start_matches("#/$defs/"));
            let mut required: Vec<Value> = m.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
            match (m.get_mut("properties").and_then(Value::as_object_mut), target) {
                (Some(props), Some(target)) => {
                    let mut target = target.clone();
                    normalize(&mut target, defs);
                    if target.get("properties").is_none() && union_members(&target).is_some() {
                        // A union inside a union member (v2's `state_update` holds the
                        // `StateUpdate` union): its members' fields, flattened, with its own
                        // discriminator a plain string; validation checks the combinations.
                        for (k, p) in union_fields(&target) {
                            props.entry(k).or_insert(p);
                        }
                        for tag in union_members(&target).into_iter().flatten().flat_map(|b| b.get("required").and_then(Value::as_array).cloned().unwrap_or_default()) {
                            if !required.contains(&tag) && target.get("oneOf").or_else(|| target.get("anyOf")).and_then(Value::as_array).is_some_and(|all| all.iter().all(|b| b.get("required").and_then(Value::as_array).is_some_and(|r| r.contains(&tag)))) {
                                required.push(tag);
                            }
                        }
                    }
                    if let Some(tp) = target.get("properties").and_then(Value::as_object) {
                        for (k, p) in tp {
                            props.insert(k.clone(), p.clone());
                        }
                        // An object with variants of its own (v2's idle state by stop reason):
                        // the variants' extra fields too.
                        for (k, p) in union_fields(&target) {
                            props.entry(k).or_insert(p);
                        }
                    }
                    for r in target.get("required").and_then(Value::as_array).into_iter().flatten() {
                        if !required.contains(r) {
                            required.push(r.clone());
                        }
                    }
                    m.insert("required".into(), Value::Array(required));
                }
                _ => {
                    m.insert("$ref".into(), Value::String(reference));
                }
            }
        }
        _ => {}
    }
}

/// The members of a union node (`oneOf` or `anyOf`).
fn union_members(node: &Value) -> Option<&Vec<Value>> {
    node.get("oneOf").or_else(|| node.get("anyOf")).and_then(Value::as_array)
}

/// Every field of a (normalized) union's members and of the unions nested in them, each once:
/// a discriminator (`const`) as a plain string, every field optional.
fn union_fields(node: &Value) -> Vec<(String, Value)> {
    let mut fields: Vec<(String, Value)> = Vec::new();
    let mut add = |k: &str, p: &Value| {
        let p = if p.get("const").is_some() { serde_json::json!({"type": "string"}) } else { p.clone() };
        match fields.iter_mut().find(|(name, _)| name == k) {
            // A member's own typing of the field wins over a nested union's tag.
            Some((_, existing)) if existing == &serde_json::json!({"type": "string"}) && p.get("const").is_none() => *existing = p,
            Some(_) => {}
            None => fields.push((k.to_owned(), p)),
        }
    };
    for member in union_members(node).into_iter().flatten() {
        for (k, p) in member.get("properties").and_then(Value::as_object).into_iter().flatten() {
            add(k, p);
        }
        for (k, p) in union_fields(member) {
            add(&k, &p);
        }
    }
    fields
}

/// The defs the types are generated from: the stable schema's, plus, from the unstable schema
/// beside it, the defs of the methods `methods.json` marks `"schema": "unstable"` and the
/// properties its `unstableFields` name (`{"def", "property"}`), each with the defs they reach
/// that the stable schema lacks. A def both schemas have keeps its stable form, so a stable
/// frame reads as before and an unstable addition we do not implement stays unknown. Every
/// unstable method must be named by the unstable schema itself (`x-method`), every field must be
/// new (absent from the stable def, present in the unstable one).
fn overlay(stable: &Map<String, Value>, unstable: Option<&Value>, table: &Value, unstable_methods: &[&Method], dir: &str) -> Result<Map<String, Value>, CodegenError> {
    let fields = table.get("unstableFields").and_then(Value::as_array).cloned().unwrap_or_default();
    if unstable_methods.is_empty() && fields.is_empty() {
        return Ok(stable.clone());
    }
    let udefs = unstable.and_then(|u| u.get("$defs")).and_then(Value::as_object).ok_or_else(|| CodegenError::NoUnstableSchema { dir: dir.to_owned() })?;
    let mut merged = stable.clone();
    // Adds `roots` and what they reach in the unstable schema, stopping at defs the stable one has.
    let add = |merged: &mut Map<String, Value>, roots: Vec<String>| -> Result<(), CodegenError> {
        let mut todo = roots;
        while let Some(name) = todo.pop() {
            if merged.contains_key(&name) {
                continue;
            }
            let def = udefs.get(&name).ok_or_else(|| CodegenError::MissingDef { file: format!("{dir}/schema.unstable.json"), def: name.clone() })?;
            let mut found = BTreeSet::new();
            refs(def, &mut found);
            merged.insert(name, def.clone());
            todo.extend(found);
        }
        Ok(())
    };
    for m in unstable_methods {
        for def in std::iter::once(&m.params).chain(m.result.as_ref()) {
            let named = udefs.get(def).and_then(|d| d.get("x-method")).and_then(Value::as_str);
            if named != Some(m.method.as_str()) {
                return Err(CodegenError::Schema { at: format!("{dir}/methods.json"), reason: format!("`{}` takes `{def}`, which schema.unstable.json gives to {named:?}", m.method) });
            }
            if stable.contains_key(def) {
                return Err(CodegenError::Schema { at: format!("{dir}/methods.json"), reason: format!("`{}` is marked unstable, and its `{def}` is in the stable schema", m.method) });
            }
        }
        add(&mut merged, std::iter::once(m.params.clone()).chain(m.result.clone()).collect())?;
    }
    for f in &fields {
        let (Some(def), Some(prop)) = (f.get("def").and_then(Value::as_str), f.get("property").and_then(Value::as_str)) else {
            return Err(CodegenError::Schema { at: format!("{dir}/methods.json"), reason: format!("an unstableFields entry needs `def` and `property`: {f}") });
        };
        let property = udefs.get(def).and_then(|d| d.pointer(&format!("/properties/{prop}"))).ok_or_else(|| CodegenError::Schema { at: format!("{dir}/methods.json"), reason: format!("schema.unstable.json's `{def}` has no property `{prop}`") })?.clone();
        let target = merged.get_mut(def).and_then(|d| d.get_mut("properties")).and_then(Value::as_object_mut).ok_or_else(|| CodegenError::Schema { at: format!("{dir}/methods.json"), reason: format!("the stable `{def}` has no properties to add `{prop}` to") })?;
        if target.contains_key(prop) {
            return Err(CodegenError::Schema { at: format!("{dir}/methods.json"), reason: format!("`{def}.{prop}` is in the stable schema already; drop it from unstableFields") });
        }
        let mut found = BTreeSet::new();
        refs(&property, &mut found);
        target.insert(prop.to_owned(), property);
        add(&mut merged, found.into_iter().collect())?;
    }
    Ok(merged)
}

/// `session/new` → `session_new`.
fn fn_name(method: &str) -> String {
    method.replace(['/', '$'], "_").trim_start_matches('_').to_snake_case()
}

/// Generates one ACP version's module (`acp.rs` from `schema/acp/`, `acp_v2.rs` from
/// `schema/acp/v2/`; `dir` names the folder in errors): the types, `ACP_AGENT_METHODS` /
/// `ACP_CLIENT_METHODS`, the request enums, the `AcpAgentHandler` / `AcpClientHandler` traits
/// and their dispatch. Every method of `methods.json` must be in the official `meta.json`, and,
/// where the schema names its methods on its defs (`x-method`, v2), its params and result must
/// be the defs the schema names for it.
pub fn generate(schema_text: &str, unstable_text: Option<&str>, meta_text: &str, methods_text: &str, dir: &str) -> Result<String, CodegenError> {
    let schema: Value = serde_json::from_str(schema_text).map_err(|source| CodegenError::Json { file: format!("{dir}/schema.json"), source })?;
    let unstable: Option<Value> = unstable_text.map(serde_json::from_str).transpose().map_err(|source| CodegenError::Json { file: format!("{dir}/schema.unstable.json"), source })?;
    let meta: Value = serde_json::from_str(meta_text).map_err(|source| CodegenError::Json { file: format!("{dir}/meta.json"), source })?;
    let table: Value = serde_json::from_str(methods_text).map_err(|source| CodegenError::Json { file: format!("{dir}/methods.json"), source })?;
    let stable_defs = schema.get("$defs").and_then(Value::as_object).ok_or_else(|| CodegenError::Schema { at: format!("{dir}/schema.json"), reason: "no $defs".into() })?;
    let agent = methods(&table, "agent", dir)?;
    let client = methods(&table, "client", dir)?;
    let unstable_methods: Vec<&Method> = agent.iter().chain(client.iter()).filter(|m| m.unstable).collect();
    let merged = overlay(stable_defs, unstable.as_ref(), &table, &unstable_methods, dir)?;
    let defs = &merged;
    // Every method we implement must be an official one; the protocol's own methods
    // (`$/cancel_request`) are received like the agent's.
    for (list, keys) in [(&agent, ["agentMethods", "protocolMethods"]), (&client, ["clientMethods", "clientMethods"])] {
        let official: Vec<&str> = keys.iter().filter_map(|k| meta.get(*k).and_then(Value::as_object)).flat_map(|m| m.values().filter_map(Value::as_str)).collect();
        // An unstable method is not in the stable method table; `overlay` checked that the
        // unstable schema names it.
        for m in list.iter().filter(|m| !m.unstable) {
            if !official.contains(&m.method.as_str()) {
                return Err(CodegenError::Schema { at: format!("{dir}/methods.json"), reason: format!("`{}` is not in meta.json's {}", m.method, keys[0]) });
            }
            for def in std::iter::once(&m.params).chain(m.result.as_ref()) {
                let named = defs.get(def).and_then(|d| d.get("x-method")).and_then(Value::as_str);
                if named.is_some_and(|named| named != m.method) {
                    return Err(CodegenError::Schema { at: format!("{dir}/methods.json"), reason: format!("`{}` takes `{def}`, which the schema gives to `{}`", m.method, named.unwrap_or_default()) });
                }
            }
        }
    }
    let roots: Vec<String> = agent.iter().chain(client.iter()).flat_map(|m| std::iter::once(m.params.clone()).chain(m.result.clone())).collect();
    let keep = reachable(defs, &roots, dir)?;

    let mut settings = typify::TypeSpaceSettings::default();
    settings.with_derive("PartialEq".to_owned()).with_struct_builder(false);
    let mut type_space = typify::TypeSpace::new(&settings);
    let mut prepared = Vec::new();
    for name in &keep {
        let mut def = defs[name].clone();
        normalize(&mut def, defs);
        let schema: schemars::schema::Schema = serde_json::from_value(def).map_err(|source| CodegenError::NotTypifiable { def: format!("ACP {name}"), source })?;
        prepared.push((name.clone(), schema));
    }
    type_space.add_ref_types(prepared).map_err(|source| CodegenError::Typify { context: "typify (ACP)", source })?;
    let mut file: syn::File = syn::parse2(type_space.to_stream()).map_err(|source| CodegenError::Parse { what: "typify output (ACP)", source })?;
    // `new(required…)` + `with_*` for every struct, as for our own schema's frames.
    let constructors = crate::rust_types::constructors(&file, defs, &Default::default(), true)?;
    let mut constructors: syn::File = syn::parse2(constructors).map_err(|source| CodegenError::Parse { what: "the ACP constructors", source })?;
    // The internally tagged unions read the tag first (no serde `Content` per variant).
    let readers = crate::rust_types::tagged_enums::read_by_tag(&mut file);
    let readers: syn::File = syn::parse2(readers).map_err(|source| CodegenError::Parse { what: "the ACP tagged enum readers", source })?;
    constructors.items.extend(readers.items);
    let mut out = format!("// Generated by build.rs from {dir}/ (src/codegen/acp_types.rs). Do not edit.\n\n");
    // Empty arrays are sent, not omitted: `authMethods: []` says "no authentication" in so
    // many words, and `[]` is always valid where the schema defaults to it.
    let types = prettyplease::unparse(&file).replace(", skip_serializing_if = \"::std::vec::Vec::is_empty\"", "").replace("skip_serializing_if = \"::std::vec::Vec::is_empty\"", "");
    out.push_str(&types);
    out.push_str(&prettyplease::unparse(&constructors));

    let info = |list: &[Method]| {
        let mut s = String::new();
        for m in list {
            let result = m.result.as_ref().map_or("None".to_owned(), |r| format!("Some({r:?})"));
            let _ = writeln!(s, "    AcpMethodInfo {{ method: {:?}, params: {:?}, result: {result} }},", m.method, m.params);
        }
        s
    };
    let _ = write!(
        out,
        "\n/// The ACP methods agentwire answers (requests have a result def, notifications none).\npub const ACP_AGENT_METHODS: &[AcpMethodInfo] = &[\n{}];\n\n/// The ACP methods agentwire sends to the client.\npub const ACP_CLIENT_METHODS: &[AcpMethodInfo] = &[\n{}];\n",
        info(&agent),
        info(&client)
    );
    let unstable_names: String = unstable_methods.iter().map(|m| format!("{:?}, ", m.method)).collect();
    let _ = write!(out, "\n/// The methods typed and validated from the unstable schema beside the stable one.\npub const ACP_UNSTABLE_METHODS: &[&str] = &[{unstable_names}];\n");

    let requests: Vec<&Method> = agent.iter().filter(|m| m.result.is_some()).collect();
    let notifications: Vec<&Method> = agent.iter().filter(|m| m.result.is_none()).collect();
    let enum_of = |name: &str, doc: &str, list: &[&Method]| {
        let mut s = format!("\n/// {doc}\n#[derive(Debug, Clone, PartialEq)]\npub enum {name} {{\n");
        for m in list {
            let _ = writeln!(s, "    /// `{}`\n    {}({}),", m.method, fn_name(&m.method).to_upper_camel_case(), m.params);
        }
        let _ = write!(
            s,
            "}}\n\nimpl {name} {{\n    /// The typed params of `method` (`None`: not a method of this enum).\n    pub fn from_params(method: &str, params: ::serde_json::Value) -> Option<Result<Self, ::serde_json::Error>> {{\n        Some(match method {{\n"
        );
        for m in list {
            let _ = writeln!(s, "            {:?} => crate::protocol::decode::from_value(params).map(Self::{}),", m.method, fn_name(&m.method).to_upper_camel_case());
        }
        s.push_str("            _ => return None,\n        })\n    }\n}\n");
        s
    };
    out.push_str(&enum_of("AcpAgentRequest", "A request agentwire answers, with its typed params.", &requests));
    out.push_str(&enum_of("AcpAgentNotification", "A notification agentwire acts on, with its typed params.", &notifications));

    let handler_methods: Vec<HandlerMethod> = requests
        .iter()
        .map(|m| {
            let (params, result) = (format_ident!("{}", m.params), format_ident!("{}", m.result.as_deref().unwrap_or_default()));
            HandlerMethod { function: fn_name(&m.method), variant: fn_name(&m.method).to_upper_camel_case(), params: quote!(#params), result: quote!(#result), doc: format!("`{}`", m.method), default: None }
        })
        .collect();
    let handler = jsonrpc_handler("AcpAgentHandler", "AcpAgentRequest", "dispatch_acp_request", "The agent side of ACP: one method per request of `ACP_AGENT_METHODS`. Implement with `async fn`.", &handler_methods);
    // The client side: the agent's requests a host answers. Every method has a default, so a
    // host implements only what it offers: a permission is answered `cancelled` (nobody was
    // asked), `fs/*` and `terminal/*` are refused (a client advertises them absent unless it
    // implements them).
    let client_requests: Vec<&Method> = client.iter().filter(|m| m.result.is_some()).collect();
    let client_notifications: Vec<&Method> = client.iter().filter(|m| m.result.is_none()).collect();
    out.push_str(&enum_of("AcpClientRequest", "A request an ACP client answers (the agent asks it), with its typed params.", &client_requests));
    out.push_str(&enum_of("AcpClientNotification", "A notification an ACP client acts on, with its typed params.", &client_notifications));
    let client_methods: Vec<HandlerMethod> = client_requests
        .iter()
        .map(|m| {
            let (params, result) = (format_ident!("{}", m.params), format_ident!("{}", m.result.as_deref().unwrap_or_default()));
            // v1's `cancelled` outcome is a unit variant; v2's carries `_meta`.
            let cancelled = if defs.get("CancelledPermissionOutcome").and_then(|d| d.get("properties")).is_some() {
                quote! { RequestPermissionOutcome::Cancelled { meta: None } }
            } else {
                quote! { RequestPermissionOutcome::Cancelled }
            };
            let default = if m.method == "session/request_permission" {
                quote! { let _ = request; Ok(RequestPermissionResponse::new(#cancelled)) }
            } else {
                let message = format!("{} is not offered by this client (its clientCapabilities leave it out)", m.method);
                quote! { let _ = request; Err(crate::protocol::envelope::Error::method_not_found(#message)) }
            };
            let doc = format!("`{}`; by default {}.", m.method, if m.method == "session/request_permission" { "answered `cancelled`" } else { "refused (-32601)" });
            HandlerMethod { function: fn_name(&m.method), variant: fn_name(&m.method).to_upper_camel_case(), params: quote!(#params), result: quote!(#result), doc, default: Some(default) }
        })
        .collect();
    let client_handler = jsonrpc_handler(
        "AcpClientHandler",
        "AcpClientRequest",
        "dispatch_acp_client_request",
        "The client side of ACP: one method per request of `ACP_CLIENT_METHODS`, each with a default (permissions `cancelled`, `fs/*` and `terminal/*` refused). Implement with `async fn`.",
        &client_methods,
    );
    let types: Vec<(String, String, String, Option<String>)> =
        agent.iter().chain(client.iter()).map(|m| (fn_name(&m.method).to_upper_camel_case(), m.method.clone(), m.params.clone(), m.result.clone())).collect();
    let types = method_types(&types);
    let layer = quote! {
        #handler
        #client_handler
        /// One uninhabited type per ACP method (agent and client side), tying its name to its
        /// params and result (`jsonrpc::Request` / `jsonrpc::Notification`).
        pub mod methods {
            #types
        }
    };
    let layer: syn::File = syn::parse2(layer).map_err(|source| CodegenError::Parse { what: "the ACP handler layer", source })?;
    out.push('\n');
    out.push_str(&prettyplease::unparse(&layer));
    Ok(out)
}
