//! `schema/examples/*.jsonl`: every example validates, survives the typed round trip
//! (parse into the generated type → serialize → equal as JSON values), every tag of every
//! frame union has an example, and breaking an example (wrong tag, missing required field)
//! is rejected by both the validator and the typed parser with a message naming the field.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use agentwire::cli::schema::{detect_dialect, detect_direction, FrameChecker};
use agentwire::protocol::validate::{validator, SchemaDialect, Direction};
use agentwire::protocol::{
    normalize_rpc_response_data, normalize_wire_result, RpcInboundFrame, RpcOutboundFrame, UnionInfo, WireAgentMessage,
    WireErrorResponse, WireRequest, WireSuccessResponse,
};
use serde_json::Value;

struct Example {
    file: String,
    line: usize,
    frame: Value,
    dialect: SchemaDialect,
    direction: Direction,
}

fn examples() -> Vec<Example> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/examples");
    let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths.into_iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl")) {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        for (i, line) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
            let frame: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{file}:{}: {e}", i + 1));
            let dialect = detect_dialect(&frame);
            let direction = detect_direction(dialect, &frame);
            out.push(Example { file: file.clone(), line: i + 1, frame, dialect, direction });
        }
    }
    assert!(out.len() > 150, "expected the full example set, found {}", out.len());
    out
}

/// JSON equality where numbers compare by value (typed f64 fields write `1` back as `1.0`).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w))),
        _ => a == b,
    }
}

/// Parses into the generated type for the frame's dialect and direction and writes it back.
fn typed_roundtrip(ex: &Example, method_of: &BTreeMap<String, String>) -> Result<Value, String> {
    let f = ex.frame.clone();
    let e = |e: serde_json::Error| e.to_string();
    let v = match (ex.dialect, ex.direction) {
        (SchemaDialect::Rpc, Direction::Inbound) => serde_json::to_value(RpcInboundFrame::from_value(f).map_err(e)?),
        (SchemaDialect::Rpc, Direction::Outbound) => {
            let mut v = serde_json::to_value(RpcOutboundFrame::from_value(f).map_err(e)?).map_err(e)?;
            if v["type"] == "response" && v.get("data").is_some() {
                let command = v["command"].as_str().unwrap_or_default().to_owned();
                v["data"] = normalize_rpc_response_data(&command, v["data"].take()).map_err(e)?;
            }
            Ok(v)
        }
        (SchemaDialect::Wire, _) if f.get("method").is_some() => match ex.direction {
            Direction::Inbound => serde_json::to_value(WireRequest::from_value(f).map_err(e)?),
            Direction::Outbound => serde_json::to_value(WireAgentMessage::from_value(f).map_err(e)?),
        },
        (SchemaDialect::Wire, _) if f.get("error").is_some() => serde_json::to_value(serde_json::from_value::<WireErrorResponse>(f).map_err(e)?),
        (SchemaDialect::Wire, _) => {
            let mut v = serde_json::to_value(serde_json::from_value::<WireSuccessResponse>(f).map_err(e)?).map_err(e)?;
            if let Some(method) = method_of.get(&v["id"].to_string()) {
                v["result"] = normalize_wire_result(method, v["result"].take()).map_err(e)?;
            }
            Ok(v)
        }
    };
    v.map_err(e)
}

#[test]
fn every_example_validates_and_round_trips() {
    let mut failures = Vec::new();
    let mut checker_per_file: BTreeMap<String, FrameChecker> = BTreeMap::new();
    // id → method (client requests) or request type (agent requests), to type responses.
    let mut method_of: BTreeMap<String, String> = BTreeMap::new();
    for ex in examples() {
        let checker = checker_per_file.entry(ex.file.clone()).or_insert_with(|| FrameChecker::new(None));
        if let Err(err) = checker.check(&ex.frame, Some(ex.direction)) {
            failures.push(format!("{}:{}: invalid: {err}", ex.file, ex.line));
            continue;
        }
        if ex.dialect == SchemaDialect::Wire {
            if let (Some(id), Some(m)) = (ex.frame.get("id"), ex.frame.get("method").and_then(Value::as_str)) {
                let name = if m == "request" { ex.frame.pointer("/params/type").and_then(Value::as_str).unwrap_or(m) } else { m };
                method_of.insert(id.to_string(), name.to_owned());
            }
        }
        match typed_roundtrip(&ex, &method_of) {
            Ok(back) if json_eq(&back, &ex.frame) => {}
            Ok(back) => failures.push(format!("{}:{}: round trip changed the frame:\n  in:  {}\n  out: {back}", ex.file, ex.line, ex.frame)),
            Err(err) => failures.push(format!("{}:{}: typed parse failed: {err}", ex.file, ex.line)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The tagged union a frame belongs to (wire responses have none).
fn root_union(ex: &Example) -> Option<&'static str> {
    match (ex.dialect, ex.direction) {
        (SchemaDialect::Rpc, Direction::Inbound) => Some("RpcInboundFrame"),
        (SchemaDialect::Rpc, Direction::Outbound) => Some("RpcOutboundFrame"),
        (SchemaDialect::Wire, Direction::Inbound) if ex.frame.get("method").is_some() => Some("WireRequest"),
        (SchemaDialect::Wire, Direction::Outbound) if ex.frame.get("method").is_some() => Some("WireAgentMessage"),
        _ => None,
    }
}

/// Every tag of `union` (recursively) for which no example exists.
fn missing_tags(union: &str, seen: &BTreeSet<(String, String)>) -> Vec<String> {
    let info = UnionInfo::get(union).unwrap();
    info.members
        .iter()
        .filter(|(tag, member)| UnionInfo::get(member).is_none() && !seen.contains(&(union.to_owned(), (*tag).to_owned())))
        .map(|(tag, _)| format!("{union}:{tag}"))
        .chain(info.members.iter().filter_map(|(_, m)| UnionInfo::get(m)).flat_map(|u| missing_tags(u.name, seen)))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Records (union, tag) for every tagged union value found anywhere inside `v`, walking the
/// schema alongside the value.
fn record_tags(def: &str, v: &Value, seen: &mut BTreeSet<(String, String)>) {
    let schema = validator().def(def).cloned().unwrap_or(Value::Null);
    walk(&schema, v, seen, Some(def));
}

fn walk(schema: &Value, v: &Value, seen: &mut BTreeSet<(String, String)>, def: Option<&str>) {
    if let Some(target) = schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
        return record_tags(target, v, seen);
    }
    if let Some(info) = def.and_then(UnionInfo::get) {
        if let Some(tag) = v.get(info.tag_property).and_then(Value::as_str) {
            seen.insert((info.name.to_owned(), tag.to_owned()));
            if let Some(member) = info.member(tag) {
                record_tags(member, v, seen);
            }
        }
        return;
    }
    if let Some(members) = schema.get("oneOf").and_then(Value::as_array) {
        for m in members {
            walk(m, v, seen, None);
        }
        return;
    }
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if let Some(p) = schema.pointer(&format!("/properties/{k}")) {
                    walk(p, child, seen, None);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                items.iter().for_each(|i| walk(item_schema, i, seen, None));
            }
        }
        _ => {}
    }
}

#[test]
fn every_tag_of_every_union_has_an_example() {
    let mut seen = BTreeSet::new();
    let mut responses: BTreeSet<String> = BTreeSet::new();
    let mut null_data: BTreeSet<String> = BTreeSet::new();
    for ex in examples() {
        let Some(root) = root_union(&ex) else { continue };
        record_tags(root, &ex.frame, &mut seen);
        // A frame both sides send (`rpc_chunk`) is detected as outbound; it is an inbound example too.
        let tag = ex.frame["type"].as_str().unwrap_or_default();
        if root == "RpcOutboundFrame" && UnionInfo::get("RpcInboundFrame").unwrap().member(tag).is_some() {
            validator().validate_frame(SchemaDialect::Rpc, Direction::Inbound, &ex.frame, None).unwrap_or_else(|e| panic!("{}:{}: {e}", ex.file, ex.line));
            record_tags("RpcInboundFrame", &ex.frame, &mut seen);
        }
        if ex.frame["type"] == "response" && ex.frame["success"] == true {
            let command = ex.frame["command"].as_str().unwrap().to_owned();
            let member = UnionInfo::get("RpcCommand").unwrap().member(&command).unwrap();
            if let Some(target) = validator().def(member).unwrap().pointer("/x-response/$ref").and_then(Value::as_str) {
                record_tags(target.trim_start_matches("#/$defs/"), &ex.frame["data"], &mut seen);
            }
            if ex.frame.get("data").is_some_and(Value::is_null) {
                null_data.insert(command.clone());
            }
            responses.insert(command);
        }
    }
    let mut missing: Vec<String> = ["RpcInboundFrame", "RpcOutboundFrame", "AssistantMessageEvent", "AgentMessage", "WireRequest", "WireEvent",
        "WireAgentRequestParams", "WireContentPart", "WireDisplayBlock"]
        .iter()
        .flat_map(|u| missing_tags(u, &seen))
        .collect();
    // A successful response for every command, and a `null` one where data may be null.
    for (tag, member) in UnionInfo::get("RpcCommand").unwrap().members {
        if !responses.contains(*tag) {
            missing.push(format!("response to {tag}"));
        }
        if validator().def(member).unwrap().get("x-response-nullable") == Some(&Value::Bool(true)) && !null_data.contains(*tag) {
            missing.push(format!("null response to {tag}"));
        }
    }
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "no example for:\n{}", missing.join("\n"));
}

/// The innermost (union, tag property, leaf def) for a frame.
fn leaf_of(root: &str, frame: &Value) -> Option<(String, String)> {
    let mut union = UnionInfo::get(root)?;
    loop {
        let tag = frame.get(union.tag_property)?.as_str()?;
        let member = union.member(tag)?;
        match UnionInfo::get(member) {
            Some(inner) => union = inner,
            None => return Some((union.tag_property.to_owned(), member.to_owned())),
        }
    }
}

fn typed_parse(root: &str, v: Value) -> Result<(), String> {
    let r = match root {
        "RpcInboundFrame" => RpcInboundFrame::from_value(v).map(drop),
        "RpcOutboundFrame" => RpcOutboundFrame::from_value(v).map(drop),
        "WireRequest" => WireRequest::from_value(v).map(drop),
        _ => WireAgentMessage::from_value(v).map(drop),
    };
    r.map_err(|e| e.to_string())
}

#[test]
fn wrong_tags_and_missing_fields_are_rejected_naming_the_field() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for ex in examples() {
        let Some(root) = root_union(&ex) else { continue };
        let Some((tag_prop, leaf)) = leaf_of(root, &ex.frame) else {
            failures.push(format!("{}:{}: no union member found", ex.file, ex.line));
            continue;
        };
        let validate = |v: &Value| validator().validate_frame(ex.dialect, ex.direction, v, None).map_err(|e| e.to_string());
        let at = format!("{}:{}", ex.file, ex.line);

        let mut wrong = ex.frame.clone();
        wrong[&tag_prop] = Value::from("no_such_tag");
        match (validate(&wrong), typed_parse(root, wrong)) {
            (Err(v), Err(t)) if v.contains(&format!("/{tag_prop}: unknown {tag_prop} \"no_such_tag\"")) && t.contains("no_such_tag") => {}
            other => failures.push(format!("{at}: wrong {tag_prop} not rejected clearly: {other:?}")),
        }

        let def = validator().def(&leaf).unwrap();
        let required: Vec<&str> =
            def["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).filter(|k| *k != tag_prop).collect()).unwrap_or_default();
        if let Some(field) = required.first() {
            let mut missing = ex.frame.clone();
            missing.as_object_mut().unwrap().remove(*field);
            match (validate(&missing), typed_parse(root, missing)) {
                (Err(v), Err(t)) if v.contains(&format!("/{field}: \"{field}\" is a required property")) && t.contains(field) => {}
                other => failures.push(format!("{at}: missing `{field}` not rejected clearly: {other:?}")),
            }
        }
        checked += 1;
    }
    assert!(checked > 150, "only {checked} examples were mutated");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
