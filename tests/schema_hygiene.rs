//! The schema conventions that keep the generated Rust, TypeScript and Python clean (see
//! `../shared/codegen-notes.md`), checked on every file of `schema/`.

use std::path::Path;

use serde_json::Value;

fn schema_files() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema");
    let mut files: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".schema.json"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()))
        .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(files.len() >= 10);
    files
}

/// Every def of every file, by name.
fn all_defs() -> serde_json::Map<String, Value> {
    schema_files().iter().flat_map(|(_, d)| d["$defs"].as_object().unwrap().clone()).collect()
}

/// Keywords outside the draft-07-compatible subset typify understands, or that the notes rule out.
const FORBIDDEN: &[&str] = &["prefixItems", "if", "then", "else", "patternProperties", "unevaluatedProperties", "unevaluatedItems", "dependentSchemas", "$dynamicRef"];

fn walk(v: &Value, at: &str, problems: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for key in FORBIDDEN {
                if map.contains_key(*key) && !at.ends_with("/properties") {
                    problems.push(format!("{at}: uses `{key}`"));
                }
            }
            if map.get("type") == Some(&Value::from("integer")) && !map.contains_key("format") {
                problems.push(format!("{at}: integer without an explicit `format`"));
            }
            if let Some(props) = map.get("properties").and_then(Value::as_object) {
                for (name, p) in props {
                    if p.get("description").and_then(Value::as_str).is_none_or(str::is_empty) {
                        problems.push(format!("{at}/properties/{name}: no description"));
                    }
                }
                let open = map.get("x-open") == Some(&Value::Bool(true));
                match map.get("additionalProperties") {
                    Some(Value::Bool(false)) => {}
                    Some(_) if open => {}
                    _ => problems.push(format!("{at}: objects are closed (`additionalProperties: false`) unless marked `x-open`")),
                }
            }
            for (k, child) in map {
                walk(child, &format!("{at}/{k}"), problems);
            }
        }
        Value::Array(items) => items.iter().enumerate().for_each(|(i, c)| walk(c, &format!("{at}/{i}"), problems)),
        _ => {}
    }
}

#[test]
fn files_use_2020_12_with_ids_titles_and_descriptions() {
    let mut problems = Vec::new();
    for (name, doc) in schema_files() {
        if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
            problems.push(format!("{name}: `$schema` must be 2020-12"));
        }
        if doc["$id"] != format!("https://agentwire.invalid/schema/{name}") {
            problems.push(format!("{name}: `$id` must be https://agentwire.invalid/schema/{name}"));
        }
        for (def_name, def) in doc["$defs"].as_object().unwrap() {
            for key in ["title", "description"] {
                if def.get(key).and_then(Value::as_str).is_none_or(str::is_empty) {
                    problems.push(format!("{name}: {def_name}: no `{key}`"));
                }
            }
        }
        walk(&doc["$defs"], &format!("{name}#/$defs"), &mut problems);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn tagged_unions_have_discriminators_and_named_closed_members() {
    let all = all_defs();
    let mut problems = Vec::new();
    for (name, def) in &all {
        let Some(one_of) = def.get("oneOf").and_then(Value::as_array) else { continue };
        if def.get("x-untagged") == Some(&Value::Bool(true)) {
            // Members of distinct JSON types (string | array, …): no tag needed.
            continue;
        }
        let Some(prop) = def.pointer("/discriminator/propertyName").and_then(Value::as_str) else {
            problems.push(format!("{name}: `oneOf` without a `discriminator` (or `x-untagged`)"));
            continue;
        };
        let mapping = def.pointer("/discriminator/mapping").and_then(Value::as_object).cloned().unwrap_or_default();
        for m in one_of {
            let Some(target) = m.get("$ref").and_then(Value::as_str) else {
                problems.push(format!("{name}: union members must be `$ref`s to named defs"));
                continue;
            };
            let member = target.rsplit('/').next().unwrap();
            let mdef = &all[member];
            if mdef.get("oneOf").is_some() {
                continue; // a nested union: its own members are checked where it is defined
            }
            match mdef.pointer(&format!("/properties/{prop}/const")).and_then(Value::as_str) {
                None => problems.push(format!("{name}: member {member} has no `{prop}` const")),
                Some(tag) => {
                    if !mdef["required"].as_array().is_some_and(|r| r.iter().any(|k| k == prop)) {
                        problems.push(format!("{name}: member {member} must require `{prop}`"));
                    }
                    if mapping.get(tag).and_then(Value::as_str).is_none_or(|r| !r.ends_with(&format!("/$defs/{member}"))) {
                        problems.push(format!("{name}: discriminator mapping for `{tag}` must point at {member}"));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_command_and_wire_method_links_its_result() {
    let all = all_defs();
    let members = |union: &str| -> Vec<String> {
        all[union]["oneOf"].as_array().unwrap().iter().map(|m| m["$ref"].as_str().unwrap().rsplit('/').next().unwrap().to_owned()).collect()
    };
    let mut problems = Vec::new();
    for m in members("WireRequest").into_iter().chain(members("WireAgentRequestParams")) {
        if all[&m].pointer("/x-result/$ref").is_none() {
            problems.push(format!("{m}: no `x-result`"));
        }
    }
    // The seed protocol's commands, plus pi's names for the same operations.
    let commands: Vec<String> = members("RpcCommand").iter().map(|m| all[m]["properties"]["type"]["const"].as_str().unwrap().to_owned()).collect();
    for required in [
        "prompt", "steer", "follow_up", "abort", "abort_and_prompt", "new_session", "get_state", "set_todos", "set_host_tools", "set_model",
        "cycle_model", "get_available_models", "set_thinking_level", "cycle_thinking_level", "set_steering_mode", "set_follow_up_mode",
        "set_interrupt_mode", "compact", "set_auto_compaction", "set_auto_retry", "abort_retry", "bash", "abort_bash", "get_session_stats",
        "export_html", "switch_session", "branch", "get_branch_messages", "get_last_assistant_text", "set_session_name", "get_messages",
        "fork", "get_fork_messages", "clone", "get_commands", "get_available_thinking_levels",
    ] {
        if !commands.iter().any(|c| c == required) {
            problems.push(format!("command `{required}` is missing from RpcCommand"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
