//! Drives typify 0.8 for the leaf types (structs, string enums, constrained newtypes): one
//! marker type per string `const`, the tagged unions replaced by ours, and const properties
//! made defaults so a member reached through its union still parses. Part of the build-time
//! generator (`rust_types.rs`).

use super::*;

/// Every string `const` in the schema → the name of its marker type.
pub(super) fn collect_lits(defs: &Map<String, Value>) -> BTreeMap<String, String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(c)) = m.get("const") {
                    out.insert(c.clone());
                }
                m.values().for_each(|c| walk(c, out));
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, out)),
            _ => {}
        }
    }
    let mut values = BTreeSet::new();
    defs.values().for_each(|d| walk(d, &mut values));
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    for v in values {
        let base = format!("Lit{}", v.replace('.', "_").to_upper_camel_case());
        let mut name = base.clone();
        let mut n = 2;
        while !taken.insert(name.clone()) {
            name = format!("{base}{n}");
            n += 1;
        }
        names.insert(v, name);
    }
    names
}

pub(super) fn typify_leaf_types(
    defs: &Map<String, Value>,
    unions: &[Union],
    lits: &BTreeMap<String, String>,
) -> Result<TokenStream, CodegenError> {
    let mut settings = typify::TypeSpaceSettings::default();
    settings.with_derive("PartialEq".to_owned()).with_struct_builder(false);
    for u in unions {
        settings.with_replacement(&u.name, format!("{MODULE}::{}", u.name), std::iter::empty());
    }
    for (value, name) in lits {
        let schema = schemars::schema::SchemaObject { const_value: Some(Value::from(value.clone())), ..Default::default() };
        settings.with_conversion(schema, format!("{MODULE}::lit::{name}"), [typify::TypeSpaceImpl::Default].into_iter());
    }
    let mut type_space = typify::TypeSpace::new(&settings);
    let mut prepared = Vec::new();
    for (name, def) in defs {
        let mut def = def.clone();
        tags_default_not_required(&mut def);
        let schema: schemars::schema::Schema =
            serde_json::from_value(def).map_err(|source| CodegenError::NotTypifiable { def: name.clone(), source })?;
        prepared.push((name.clone(), schema));
    }
    type_space.add_ref_types(prepared).map_err(|source| CodegenError::Typify { context: "typify", source })?;
    Ok(type_space.to_stream())
}

/// For typify only: a `const` property gets `default` = its value and stops being required,
/// so a struct reached through its union (where serde already consumed the tag) still
/// deserializes. Validation uses the real schema, where tags stay required.
pub(super) fn tags_default_not_required(def: &mut Value) {
    let Some(props) = def.get_mut("properties").and_then(Value::as_object_mut) else { return };
    let mut consts = Vec::new();
    for (key, p) in props.iter_mut() {
        if let Some(c) = p.get("const").cloned() {
            p["default"] = c;
            consts.push(key.clone());
        }
    }
    if let Some(req) = def.get_mut("required").and_then(Value::as_array_mut) {
        req.retain(|r| !consts.iter().any(|c| r == c));
    }
}
