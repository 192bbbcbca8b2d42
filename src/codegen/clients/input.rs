//! The clients' input for their type generators: the bundle adapted for json-schema-to-typescript
//! and datamodel-code-generator, which emit the type declarations the layers in this folder refer
//! to.

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
