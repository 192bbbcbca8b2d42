//! Schema bundling: many `schema/*.schema.json` files → one self-contained document.
//!
//! The schema is split by domain, with cross-file `$ref`s such as
//! `content.schema.json#/$defs/TextContent`. typify panics on cross-file refs and
//! json-schema-to-typescript would fetch them, so every consumer reads the bundle instead:
//! all `$defs` merged into one map (names are unique across files by convention, and a
//! duplicate is an error here), every ref rewritten to `#/$defs/Name`, dangling refs
//! rejected with the file and pointer that hold them.
//!
//! This file is compiled twice: into the library (for `agentwire schema bundle` and the
//! validators) and into `build.rs` (via `#[path]`), so it depends on `serde_json` only.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

/// `$id` of the bundled document; refs inside it are `#/$defs/Name`.
pub const BUNDLE_ID: &str = "https://agentwire.invalid/schema/bundle.json";

/// A problem found while bundling: readable, with the file and location that hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundleError {
    /// A file is not JSON or has no `$defs` object.
    BadFile { file: String, reason: String },
    /// Two files define the same `$defs` name.
    DuplicateDef { name: String, first: String, second: String },
    /// A `$ref` (or discriminator mapping) points at a def that does not exist.
    DanglingRef { file: String, at: String, target: String },
    /// A `$ref` that is not of the form `[file.schema.json]#/$defs/Name`.
    UnsupportedRef { file: String, at: String, reference: String },
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::BadFile { file, reason } => write!(f, "{file}: {reason}"),
            BundleError::DuplicateDef { name, first, second } => {
                write!(f, "$defs name `{name}` is defined in both {first} and {second}; names must be unique across files")
            }
            BundleError::DanglingRef { file, at, target } => {
                write!(f, "{file}: {at}: reference to `{target}`, which no schema file defines")
            }
            BundleError::UnsupportedRef { file, at, reference } => write!(
                f,
                "{file}: {at}: unsupported $ref `{reference}` (use `#/$defs/Name` or `other.schema.json#/$defs/Name`)"
            ),
        }
    }
}

impl std::error::Error for BundleError {}

/// Each `$defs` name and the file that defines it.
pub type Owners = BTreeMap<String, String>;

/// One schema file: its file name (e.g. `commands.schema.json`) and parsed content.
#[derive(Debug, Clone)]
pub struct SchemaFile {
    /// File name without directory.
    pub name: String,
    /// Parsed JSON document.
    pub doc: Value,
}

/// The set of schema files making up the protocol.
#[derive(Debug, Clone, Default)]
pub struct SchemaSet {
    /// Files in a stable (sorted) order.
    pub files: Vec<SchemaFile>,
}

impl SchemaSet {
    /// Parses `(file name, text)` pairs, e.g. the texts embedded in the binary.
    pub fn from_texts<'a>(texts: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self, BundleError> {
        let mut files = Vec::new();
        for (name, text) in texts {
            let doc: Value = serde_json::from_str(text).map_err(|e| BundleError::BadFile {
                file: name.to_owned(),
                reason: format!("not valid JSON: {e}"),
            })?;
            if !doc.get("$defs").is_some_and(Value::is_object) {
                return Err(BundleError::BadFile { file: name.to_owned(), reason: "has no `$defs` object".into() });
            }
            files.push(SchemaFile { name: name.to_owned(), doc });
        }
        files.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(SchemaSet { files })
    }

    /// Which file defines each `$defs` name. Fails on duplicates.
    pub fn owners(&self) -> Result<Owners, BundleError> {
        let mut owners = Owners::new();
        for file in &self.files {
            for name in defs_of(&file.doc).keys() {
                if let Some(first) = owners.get(name) {
                    return Err(BundleError::DuplicateDef {
                        name: name.clone(),
                        first: first.clone(),
                        second: file.name.clone(),
                    });
                }
                owners.insert(name.clone(), file.name.clone());
            }
        }
        Ok(owners)
    }

    /// Bundles every def of every file into one document.
    pub fn bundle(&self) -> Result<Value, BundleError> {
        self.bundle_reachable(None)
    }

    /// Bundles only the defs reachable from `roots` (following `$ref`s, including those in
    /// `x-response` / `x-result` links). `None` keeps every def.
    pub fn bundle_reachable(&self, roots: Option<&[&str]>) -> Result<Value, BundleError> {
        let owners = self.owners()?;
        let mut defs: BTreeMap<String, Value> = BTreeMap::new();
        for file in &self.files {
            for (name, def) in defs_of(&file.doc) {
                let mut def = def.clone();
                rewrite_refs(&mut def, &file.name, &format!("/$defs/{name}"), &owners)?;
                defs.insert(name.clone(), def);
            }
        }
        let keep: BTreeSet<String> = match roots {
            None => defs.keys().cloned().collect(),
            Some(roots) => reachable(&defs, roots),
        };
        // Keep the files' order (domain by domain) rather than alphabetical: it reads better.
        let mut ordered = Map::new();
        for file in &self.files {
            for name in defs_of(&file.doc).keys() {
                if keep.contains(name) {
                    ordered.insert(name.clone(), defs[name].clone());
                }
            }
        }
        let mut out = Map::new();
        out.insert("$schema".into(), Value::from("https://json-schema.org/draft/2020-12/schema"));
        out.insert("$id".into(), Value::from(BUNDLE_ID));
        out.insert("title".into(), Value::from("agentwire protocol (bundled)"));
        out.insert(
            "description".into(),
            Value::from("Every definition of the agentwire protocol in one self-contained document, generated from schema/*.schema.json."),
        );
        out.insert("$defs".into(), Value::Object(ordered));
        Ok(Value::Object(out))
    }
}

fn defs_of(doc: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    doc.get("$defs").and_then(Value::as_object).unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

/// Rewrites `$ref`s and discriminator mapping values to `#/$defs/Name`, checking each target.
fn rewrite_refs(v: &mut Value, file: &str, at: &str, owners: &BTreeMap<String, String>) -> Result<(), BundleError> {
    match v {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                let here = format!("{at}/{key}");
                if key == "$ref" {
                    if let Value::String(r) = child {
                        *r = local_ref(r, file, &here, owners)?;
                    }
                } else if key == "discriminator" {
                    if let Some(mapping) = child.get_mut("mapping").and_then(Value::as_object_mut) {
                        for (tag, target) in mapping.iter_mut() {
                            if let Value::String(r) = target {
                                *r = local_ref(r, file, &format!("{here}/mapping/{tag}"), owners)?;
                            }
                        }
                    }
                } else {
                    rewrite_refs(child, file, &here, owners)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                rewrite_refs(item, file, &format!("{at}/{i}"), owners)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn local_ref(r: &str, file: &str, at: &str, owners: &BTreeMap<String, String>) -> Result<String, BundleError> {
    let unsupported = || BundleError::UnsupportedRef { file: file.into(), at: at.into(), reference: r.into() };
    let (target_file, pointer) = r.split_once('#').ok_or_else(unsupported)?;
    let name = pointer.strip_prefix("/$defs/").filter(|n| !n.contains('/')).ok_or_else(unsupported)?;
    let expected_file = if target_file.is_empty() { file } else { target_file };
    match owners.get(name) {
        Some(owner) if owner == expected_file => Ok(format!("#/$defs/{name}")),
        Some(owner) => Err(BundleError::DanglingRef {
            file: file.into(),
            at: at.into(),
            target: format!("{r} (`{name}` lives in {owner})"),
        }),
        None => Err(BundleError::DanglingRef { file: file.into(), at: at.into(), target: r.into() }),
    }
}

/// Names of the defs reachable from `roots`.
pub fn reachable(defs: &BTreeMap<String, Value>, roots: &[&str]) -> BTreeSet<String> {
    reachable_by(|name| defs.get(name), roots)
}

/// Names of the defs reachable from `roots`, each def looked up by `def` (so a caller whose
/// defs are parsed on demand walks only the ones reached).
pub fn reachable_by<'a>(def: impl Fn(&str) -> Option<&'a Value>, roots: &[&str]) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<String> = roots.iter().map(|s| (*s).to_owned()).collect();
    while let Some(name) = stack.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(def) = def(&name) {
            collect_refs(def, &mut |target| stack.push(target.to_owned()));
        }
    }
    seen
}

/// Calls `f` with the def name of every local `#/$defs/Name` ref inside `v`.
pub fn collect_refs(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::Object(map) => {
            for (key, child) in map {
                if key == "$ref" {
                    if let Some(name) = child.as_str().and_then(|r| r.strip_prefix("#/$defs/")) {
                        f(name);
                    }
                } else {
                    collect_refs(child, f);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_refs(i, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(files: &[(&str, &str)]) -> Result<Value, BundleError> {
        SchemaSet::from_texts(files.iter().copied())?.bundle()
    }

    #[test]
    fn merges_defs_and_rewrites_cross_file_refs() {
        let b = set(&[
            ("a.schema.json", r##"{"$defs":{"A":{"type":"object","properties":{"b":{"$ref":"b.schema.json#/$defs/B"}}}}}"##),
            ("b.schema.json", r##"{"$defs":{"B":{"type":"string"},"C":{"$ref":"#/$defs/B"}}}"##),
        ])
        .unwrap();
        assert_eq!(b["$defs"]["A"]["properties"]["b"]["$ref"], "#/$defs/B");
        assert_eq!(b["$defs"]["C"]["$ref"], "#/$defs/B");
        assert_eq!(b["$id"], BUNDLE_ID);
    }

    #[test]
    fn duplicate_names_are_rejected_naming_both_files() {
        let err = set(&[("a.schema.json", r#"{"$defs":{"X":{}}}"#), ("b.schema.json", r#"{"$defs":{"X":{}}}"#)]).unwrap_err();
        assert_eq!(err.to_string(), "$defs name `X` is defined in both a.schema.json and b.schema.json; names must be unique across files");
    }

    #[test]
    fn dangling_refs_name_the_file_and_pointer() {
        let err = set(&[("a.schema.json", r##"{"$defs":{"A":{"items":{"$ref":"#/$defs/Nope"}}}}"##)]).unwrap_err();
        assert_eq!(err.to_string(), "a.schema.json: /$defs/A/items/$ref: reference to `#/$defs/Nope`, which no schema file defines");
        let err = set(&[
            ("a.schema.json", r##"{"$defs":{"A":{"$ref":"b.schema.json#/$defs/C"}}}"##),
            ("c.schema.json", r##"{"$defs":{"C":{}}}"##),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("`C` lives in c.schema.json"), "{err}");
    }

    #[test]
    fn unsupported_refs_and_bad_files_are_reported() {
        let err = set(&[("a.schema.json", r#"{"$defs":{"A":{"$ref":"http://x/y.json"}}}"#)]).unwrap_err();
        assert!(matches!(err, BundleError::UnsupportedRef { .. }), "{err}");
        let err = set(&[("a.schema.json", "{nope")]).unwrap_err();
        assert!(err.to_string().starts_with("a.schema.json: not valid JSON"), "{err}");
    }

    #[test]
    fn reachable_subset_follows_refs() {
        let s = SchemaSet::from_texts([(
            "a.schema.json",
            r##"{"$defs":{"Root":{"x-response":{"$ref":"#/$defs/R"}},"R":{"$ref":"#/$defs/S"},"S":{},"Other":{}}}"##,
        )])
        .unwrap();
        let b = s.bundle_reachable(Some(&["Root"])).unwrap();
        let names: Vec<&String> = b["$defs"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["Root", "R", "S"]);
    }
}
