//! Build-time compiler of the frame validators: each schema (the rpc/wire bundle, and the
//! vendored ACP schemas alike) becomes a `Program` of the run-time half,
//! `crate::protocol::program`, written into `$OUT_DIR` by `build.rs` as static data: every node
//! a run of ops, every string an offset into one text. One interpreter checks every program.
//!
//! Every keyword that constrains a value is compiled: `type`, `const`, `enum`, `minimum`,
//! `maximum`, the integer `format`s (`uint16` … `int64`, as ranges), `minLength`, `pattern`,
//! `minItems`, `items`, `required`, `properties`, `additionalProperties`, `allOf`, `anyOf`,
//! `oneOf`, `not`, `$ref`. Annotations (`description`, `title`, `default`, other `format`s,
//! `discriminator`, `x-…`) are skipped. Any other keyword is a build error: a validator that
//! silently ignored one would be laxer than the schema.
//!
//! A `oneOf`/`anyOf` whose members all require an object with a distinct constant tag (the
//! same property in each) is compiled as a lookup of the tag, which is what the schema means
//! there, and reports the tag (`/type: unknown type "x"`) or the chosen member's own errors
//! instead of "not valid under any of the schemas". Other unions try each member quietly; when
//! they all fail and only one member accepts the value's JSON type, that member's errors are
//! reported.

use std::collections::{BTreeMap, HashMap};
use std::fmt::{self, Write as _};

use serde_json::{Map, Value};

/// Why the generator refused a schema: where, and what it met.
#[derive(Debug)]
pub struct ValidatorGenError {
    /// The def (or root) and the keyword path.
    pub at: String,
    /// What is not supported or not well-formed.
    pub reason: String,
}

impl fmt::Display for ValidatorGenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "validator generator: {}: {}", self.at, self.reason)
    }
}

impl std::error::Error for ValidatorGenError {}

/// Keywords that describe without constraining.
const ANNOTATIONS: &[&str] = &[
    "description", "title", "examples", "default", "discriminator", "$schema", "$id", "$comment", "contentEncoding",
    "contentMediaType", "deprecated", "readOnly", "writeOnly", "$defs",
];

/// JSON type bits, as in `crate::protocol::check::types`.
const NULL: u8 = 1;
const BOOLEAN: u8 = 2;
const INTEGER: u8 = 4;
const NUMBER: u8 = 8;
const STRING: u8 = 16;
const ARRAY: u8 = 32;
const OBJECT: u8 = 64;
const ANY: u8 = 127;

/// Compiles `defs` (every def, by name) and the `extra` roots (named schemas outside `$defs`,
/// such as ACP's top-level message shapes). The output defines `pub static PROGRAM` and
/// `pub fn check_fn(name: &str) -> Option<Check>`.
pub fn generate(defs: &Map<String, Value>, extra: &[(&str, &Value)]) -> Result<String, ValidatorGenError> {
    generate_over(defs, extra, None)
}

/// [`generate`] for a schema that extends `base` (ACP v2's unstable schema over its stable
/// one): a def the two schemas state alike, down to every def it reaches, is checked by
/// `base`'s node, compiled once in the program of the module at `base_module`, not a second
/// time here.
pub fn generate_extending(defs: &Map<String, Value>, extra: &[(&str, &Value)], base: &Map<String, Value>, base_module: &str) -> Result<String, ValidatorGenError> {
    generate_over(defs, extra, Some((base, base_module)))
}

/// A node reference into the base program (`crate::protocol::program::BASE`).
const BASE: u32 = 1 << 31;
/// No node (`crate::protocol::program::NONE`).
const NONE: u32 = u32::MAX;
/// `additionalProperties: false` (`crate::protocol::program::CLOSED`).
const CLOSED: u32 = u32::MAX - 1;

fn generate_over(defs: &Map<String, Value>, extra: &[(&str, &Value)], base: Option<(&Map<String, Value>, &str)>) -> Result<String, ValidatorGenError> {
    let mut gen = Gen { defs, def_nodes: BTreeMap::new(), text: String::new(), strs: HashMap::new(), ops: Vec::new(), nodes: Vec::new(), dedup: HashMap::new(), entries: Vec::new(), lists: HashMap::new(), patterns: 0 };
    // Node i is def i; a def the base states alike is the base's node of it.
    let shared = base.map(|(base_defs, _)| alike(defs, base_defs)).unwrap_or_default();
    for name in defs.keys() {
        let id = gen.reserve();
        gen.def_nodes.insert(name.clone(), id);
    }
    if let Some((base_defs, _)) = base {
        for (i, name) in base_defs.keys().enumerate() {
            if shared.contains(name) {
                gen.def_nodes.insert(name.clone(), BASE | i as u32);
            }
        }
    }
    let mut roots: BTreeMap<String, u32> = BTreeMap::new();
    for (i, (name, schema)) in defs.iter().enumerate() {
        let mut ops = Vec::new();
        if !shared.contains(name) {
            gen.node(schema, name, &mut ops)?;
        }
        gen.finish(i as u32, ops);
        roots.insert(name.clone(), gen.def_nodes[name]);
    }
    for (name, schema) in extra {
        let id = gen.reserve();
        let mut ops = Vec::new();
        gen.node(schema, name, &mut ops)?;
        gen.finish(id, ops);
        roots.insert((*name).to_owned(), id);
    }
    // Sorted by length, then bytes, as `Program::check` searches them.
    let mut roots: Vec<(String, u32)> = roots.into_iter().collect();
    roots.sort_by(|a, b| by_length_then_bytes(&a.0, &b.0));
    let root_entries: Vec<String> = roots.iter().map(|(name, node)| gen.entry(name, *node, 0)).collect();
    let roots_run = gen.list(root_entries);

    let mut out = String::new();
    out.push_str("// Generated by src/codegen/validators.rs from the schema; never edit by hand.\n");
    out.push_str("use crate::protocol::program::{Check, Entry as E, Op, Program, Run as R, Str as S};\n\n");
    let base_ref = match base {
        Some((_, module)) => format!("Some(&{module}::PROGRAM)"),
        None => "None".to_owned(),
    };
    let _ = writeln!(
        out,
        "/// This schema, compiled.\npub static PROGRAM: Program = Program {{ text: TEXT, ops: &OPS, nodes: &NODES, entries: &ENTRIES, roots: {roots_run}, patterns: &PATTERNS, base: {base_ref} }};\n"
    );
    out.push_str("/// The check of a def (or named root) of this schema.\npub fn check_fn(name: &str) -> Option<Check> {\n    PROGRAM.check(name)\n}\n\n");
    let _ = writeln!(out, "const TEXT: &str = {:?};\n", gen.text);
    let _ = writeln!(out, "static OPS: [Op; {}] = [", gen.ops.len());
    for op in &gen.ops {
        let _ = writeln!(out, "    {op},");
    }
    out.push_str("];\n\n");
    let _ = writeln!(out, "static NODES: [R; {}] = [", gen.nodes.len());
    for (first, count) in &gen.nodes {
        let _ = writeln!(out, "    R({first}, {count}),");
    }
    out.push_str("];\n\n");
    let _ = writeln!(out, "static ENTRIES: [E; {}] = [", gen.entries.len());
    for entry in &gen.entries {
        let _ = writeln!(out, "    {entry},");
    }
    out.push_str("];\n\n");
    let _ = writeln!(out, "static PATTERNS: [std::sync::OnceLock<Option<regex::Regex>>; {0}] = [const {{ std::sync::OnceLock::new() }}; {0}];", gen.patterns);
    Ok(out)
}

/// The defs `defs` states exactly as `base` does, and whose every `$ref`, followed to the end,
/// reaches only such defs: their checks are the same functions.
fn alike(defs: &Map<String, Value>, base: &Map<String, Value>) -> std::collections::BTreeSet<String> {
    let mut same: std::collections::BTreeSet<String> = defs.iter().filter(|(name, def)| base.get(*name).is_some_and(|b| constraints(b) == constraints(def))).map(|(name, _)| name.clone()).collect();
    loop {
        let before = same.len();
        let keep: Vec<String> = same.iter().filter(|name| defs.get(*name).is_some_and(|def| refs_within(def, &same))).cloned().collect();
        same = keep.into_iter().collect();
        if same.len() == before {
            return same;
        }
    }
}

/// `schema` without its annotations (descriptions differ between two versions of a schema that
/// constrain alike), down through every subschema.
fn constraints(schema: &Value) -> Value {
    let Value::Object(map) = schema else { return schema.clone() };
    let mut out = Map::new();
    for (key, value) in map {
        if is_annotation(key) {
            continue;
        }
        let value = match (key.as_str(), value) {
            ("properties", Value::Object(props)) => Value::Object(props.iter().map(|(k, v)| (k.clone(), constraints(v))).collect()),
            ("allOf" | "anyOf" | "oneOf", Value::Array(items)) => Value::Array(items.iter().map(constraints).collect()),
            ("items" | "additionalProperties" | "unevaluatedProperties" | "not", v) => constraints(v),
            (_, v) => v.clone(),
        };
        out.insert(key.clone(), value);
    }
    Value::Object(out)
}

/// Every `$ref` in `schema` names a def in `set`.
fn refs_within(schema: &Value, set: &std::collections::BTreeSet<String>) -> bool {
    match schema {
        Value::Object(map) => map.iter().all(|(key, value)| match (key.as_str(), value) {
            ("$ref", Value::String(r)) => r.strip_prefix("#/$defs/").is_some_and(|name| set.contains(name)),
            _ => refs_within(value, set),
        }),
        Value::Array(items) => items.iter().all(|v| refs_within(v, set)),
        _ => true,
    }
}

struct Gen<'a> {
    defs: &'a Map<String, Value>,
    /// Each def's node (with [`BASE`] for the base program's).
    def_nodes: BTreeMap<String, u32>,
    /// The program's text and where each string already is in it.
    text: String,
    strs: HashMap<String, (u32, u32)>,
    /// Each op as the Rust expression of it.
    ops: Vec<String>,
    /// Each node's run of ops.
    nodes: Vec<(u32, u32)>,
    /// Nodes already compiled, by their ops: a subschema stated twice is one node.
    dedup: HashMap<Vec<String>, u32>,
    /// Each entry as the Rust expression of it, and the lists already written.
    entries: Vec<String>,
    lists: HashMap<Vec<String>, String>,
    patterns: u32,
}

/// One discriminated union: the tag property and, per tag (in schema order), its member's node.
struct Tagged {
    property: String,
    members: Vec<(String, u32)>,
}

impl Gen<'_> {
    fn err(at: &str, reason: impl Into<String>) -> ValidatorGenError {
        ValidatorGenError { at: at.to_owned(), reason: reason.into() }
    }

    /// `S(offset, len)` of `text` in the program's text.
    fn str(&mut self, text: &str) -> String {
        let (offset, len) = match self.strs.get(text) {
            Some(found) => *found,
            None => {
                let found = (self.text.len() as u32, text.len() as u32);
                self.text.push_str(text);
                self.strs.insert(text.to_owned(), found);
                found
            }
        };
        format!("S({offset}, {len})")
    }

    /// An entry: a string, a node and a type mask.
    fn entry(&mut self, text: &str, node: u32, mask: u8) -> String {
        let s = self.str(text);
        format!("E({s}, {node}, {mask})")
    }

    /// `R(first, count)` of a list of entries (a list written before is reused).
    fn list(&mut self, entries: Vec<String>) -> String {
        if let Some(run) = self.lists.get(&entries) {
            return run.clone();
        }
        let run = format!("R({}, {})", self.entries.len(), entries.len());
        self.entries.extend(entries.iter().cloned());
        self.lists.insert(entries, run.clone());
        run
    }

    /// A list of strings only.
    fn names<'n>(&mut self, names: impl IntoIterator<Item = &'n str>) -> String {
        let entries = names.into_iter().map(|n| self.entry(n, NONE, 0)).collect();
        self.list(entries)
    }

    /// A node whose ops are written later ([`Self::finish`]).
    fn reserve(&mut self) -> u32 {
        self.nodes.push((0, 0));
        (self.nodes.len() - 1) as u32
    }

    fn finish(&mut self, id: u32, ops: Vec<String>) {
        self.nodes[id as usize] = (self.ops.len() as u32, ops.len() as u32);
        self.ops.extend(ops);
    }

    /// The node checking a subschema: its `$ref`'s def when it is only that, the node of the
    /// same ops when one was compiled, else a new one; [`NONE`] when it checks nothing.
    fn node_for(&mut self, schema: &Value, path: &str) -> Result<u32, ValidatorGenError> {
        let mut ops = Vec::new();
        self.node(schema, path, &mut ops)?;
        if ops.is_empty() {
            return Ok(NONE);
        }
        if let [only] = ops.as_slice() {
            if let Some(target) = only.strip_prefix("Op::Node(").and_then(|rest| rest.strip_suffix(')')).and_then(|n| n.parse().ok()) {
                return Ok(target);
            }
        }
        if let Some(id) = self.dedup.get(&ops) {
            return Ok(*id);
        }
        let id = self.reserve();
        self.dedup.insert(ops.clone(), id);
        self.finish(id, ops);
        Ok(id)
    }

    /// [`Self::node_for`], for a place that needs a node even when it checks nothing (the
    /// members of a union).
    fn some_node_for(&mut self, schema: &Value, path: &str) -> Result<u32, ValidatorGenError> {
        match self.node_for(schema, path)? {
            NONE => {
                let id = self.reserve();
                self.finish(id, Vec::new());
                Ok(id)
            }
            id => Ok(id),
        }
    }

    fn ref_node(&self, r: &Value, path: &str) -> Result<u32, ValidatorGenError> {
        let target = r.as_str().and_then(|r| r.strip_prefix("#/$defs/")).ok_or_else(|| Self::err(path, format!("unsupported $ref {r}")))?;
        self.def_nodes.get(target).copied().ok_or_else(|| Self::err(path, format!("$ref to a missing def `{target}`")))
    }

    fn def_of(&self, r: &Value) -> Option<&Value> {
        r.as_str().and_then(|r| r.strip_prefix("#/$defs/")).and_then(|name| self.defs.get(name))
    }

    /// The ops checking a value against `schema`, appended to `out` in the order the keywords
    /// are checked.
    fn node(&mut self, schema: &Value, path: &str, out: &mut Vec<String>) -> Result<(), ValidatorGenError> {
        let map = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => {
                out.push("Op::Never".to_owned());
                return Ok(());
            }
            Value::Object(map) => map,
            _ => return Err(Self::err(path, "a schema is an object or a boolean")),
        };
        for key in map.keys() {
            let known = is_annotation(key)
                || matches!(
                    key.as_str(),
                    "$ref" | "type" | "const" | "enum" | "minimum" | "maximum" | "format" | "minLength" | "pattern" | "minItems"
                        | "items" | "required" | "properties" | "additionalProperties" | "allOf" | "anyOf" | "oneOf" | "not"
                        | "unevaluatedProperties"
                );
            if !known {
                return Err(Self::err(path, format!("keyword `{key}` is not supported; teach src/codegen/validators.rs")));
            }
        }
        if let Some(r) = map.get("$ref") {
            let node = self.ref_node(r, path)?;
            out.push(format!("Op::Node({node})"));
        }
        if let Some(t) = map.get("type") {
            let names: Vec<&str> = match t {
                Value::String(one) => vec![one.as_str()],
                Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
                _ => return Err(Self::err(path, "`type` is a string or a list of strings")),
            };
            let mut mask = 0u8;
            for name in &names {
                mask |= type_bit(name).ok_or_else(|| Self::err(path, format!("unknown type `{name}`")))?;
            }
            let list = self.names(names.iter().copied());
            out.push(format!("Op::Type({mask}, {list})"));
        }
        if let Some(constant) = map.get("const") {
            let op = match constant {
                Value::String(s) => {
                    let (value, text) = (self.str(s), self.str(&constant.to_string()));
                    format!("Op::ConstStr({value}, {text})")
                }
                Value::Bool(b) => format!("Op::ConstBool({b})"),
                Value::Null => "Op::ConstNull".to_owned(),
                Value::Number(n) if n.as_i64().is_some() => format!("Op::ConstInt({})", n.as_i64().unwrap_or_default()),
                _ => return Err(Self::err(path, format!("const {constant} is not supported"))),
            };
            out.push(op);
        }
        if let Some(options) = map.get("enum") {
            let strings: Vec<&str> = options.as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
            if strings.len() != options.as_array().map_or(0, Vec::len) || strings.is_empty() {
                return Err(Self::err(path, "only enums of strings are supported"));
            }
            let list = self.names(strings.iter().copied());
            let candidates = self.str(&enum_candidates(&strings));
            out.push(format!("Op::Enum({list}, {candidates})"));
        }
        for (keyword, op) in [("minimum", "Minimum"), ("maximum", "Maximum")] {
            if let Some(limit) = map.get(keyword) {
                let f = limit.as_f64().ok_or_else(|| Self::err(path, format!("`{keyword}` is a number")))?;
                let text = self.str(&limit.to_string());
                out.push(format!("Op::{op}({f:?}, {text})"));
            }
        }
        if let Some(format) = map.get("format").and_then(Value::as_str) {
            // Other formats (`double`, `uri`, …) are annotations in draft 2020-12.
            if let Some(index) = INT_FORMATS.iter().position(|f| *f == format) {
                out.push(format!("Op::Format({index})"));
            }
        }
        if let Some(min) = map.get("minLength") {
            let n = min.as_u64().filter(|n| *n <= u64::from(u32::MAX / 4)).ok_or_else(|| Self::err(path, "`minLength` is a count"))?;
            out.push(format!("Op::MinLength({n})"));
        }
        if let Some(pattern) = map.get("pattern") {
            let pattern = pattern.as_str().ok_or_else(|| Self::err(path, "`pattern` is a string"))?;
            portable(pattern).map_err(|reason| Self::err(path, format!("pattern {pattern:?}: {reason}; teach src/codegen/validators.rs")))?;
            let text = self.str(pattern);
            out.push(format!("Op::Pattern({}, {text})", self.patterns));
            self.patterns += 1;
        }
        if let Some(min) = map.get("minItems") {
            let n = min.as_u64().filter(|n| *n <= u64::from(u32::MAX)).ok_or_else(|| Self::err(path, "`minItems` is a count"))?;
            out.push(format!("Op::MinItems({n})"));
        }
        if let Some(items) = map.get("items") {
            if !items.is_object() && !items.is_boolean() {
                return Err(Self::err(path, "`items` is one schema (tuple forms are not supported)"));
            }
            let node = self.node_for(items, &format!("{path}/items"))?;
            if node != NONE {
                out.push(format!("Op::Items({node})"));
            }
        }
        self.object(map, path, out)?;
        if let Some(all) = map.get("allOf") {
            let all = all.as_array().ok_or_else(|| Self::err(path, "`allOf` is a list"))?;
            for (i, member) in all.iter().enumerate() {
                self.node(member, &format!("{path}/allOf/{i}"), out)?;
            }
        }
        for (keyword, one) in [("anyOf", false), ("oneOf", true)] {
            if let Some(members) = map.get(keyword) {
                let members = members.as_array().ok_or_else(|| Self::err(path, format!("`{keyword}` is a list")))?;
                let op = self.union(members, one, &format!("{path}/{keyword}"))?;
                out.push(op);
            }
        }
        if let Some(not) = map.get("not") {
            let node = self.some_node_for(not, &format!("{path}/not"))?;
            let text = self.str(&not.to_string());
            out.push(format!("Op::Not({node}, {text})"));
        }
        match map.get("unevaluatedProperties") {
            None | Some(Value::Bool(true)) => {}
            Some(_) => return Err(Self::err(path, "only `unevaluatedProperties: true` is supported")),
        }
        Ok(())
    }

    fn object(&mut self, map: &Map<String, Value>, path: &str, out: &mut Vec<String>) -> Result<(), ValidatorGenError> {
        let required: Vec<&str> = map.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let empty = Map::new();
        let properties = match map.get("properties") {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => return Err(Self::err(path, "`properties` is an object")),
        };
        let additional = map.get("additionalProperties").filter(|a| **a != Value::Bool(true) && !a.as_object().is_some_and(Map::is_empty));
        if required.is_empty() && properties.is_empty() && additional.is_none() {
            return Ok(());
        }
        let required = self.names(required.iter().copied());
        let mut declared = Vec::new();
        for (name, schema) in properties {
            let node = self.node_for(schema, &format!("{path}/properties/{name}"))?;
            declared.push(self.entry(name, node, 0));
        }
        let declared = self.list(declared);
        let additional = match additional {
            None => NONE,
            Some(Value::Bool(false)) => CLOSED,
            Some(schema) => self.node_for(schema, &format!("{path}/additionalProperties"))?,
        };
        out.push(format!("Op::Object({required}, {declared}, {additional})"));
        Ok(())
    }

    fn union(&mut self, members: &[Value], one: bool, path: &str) -> Result<String, ValidatorGenError> {
        if let Some(tagged) = self.tagged(members, path)? {
            let property = self.str(&tagged.property);
            // Sorted by length then bytes, for a binary search that mostly compares lengths;
            // each entry keeps its place in the schema (in the mask's byte) for the message that
            // lists the tags.
            let mut members: Vec<(usize, &(String, u32))> = tagged.members.iter().enumerate().collect();
            if members.len() > usize::from(u8::MAX) + 1 {
                return Err(Self::err(path, "a tagged union of more than 256 members"));
            }
            members.sort_by(|a, b| by_length_then_bytes(&a.1 .0, &b.1 .0));
            let entries = members.iter().map(|(place, (tag, node))| self.entry(tag, *node, *place as u8)).collect();
            let list = self.list(entries);
            return Ok(format!("Op::Tagged({property}, {list})"));
        }
        let mut entries = Vec::new();
        for (i, member) in members.iter().enumerate() {
            let node = self.some_node_for(member, &format!("{path}/{i}"))?;
            let mask = self.mask(member, 0);
            entries.push(self.entry("", node, mask));
        }
        let list = self.list(entries);
        Ok(format!("Op::Union({one}, {list})"))
    }

    /// The JSON types a schema can accept at most (its `type`, through `$ref`s and `allOf`).
    fn mask(&self, schema: &Value, depth: usize) -> u8 {
        let Some(map) = schema.as_object() else { return if *schema == Value::Bool(false) { 0 } else { ANY } };
        if depth > 16 {
            return ANY;
        }
        let mut mask = ANY;
        if let Some(t) = map.get("type") {
            let names: Vec<&str> = match t {
                Value::String(s) => vec![s.as_str()],
                Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let mut bits = names.iter().filter_map(|n| type_bit(n)).fold(0, |a, b| a | b);
            if bits & NUMBER != 0 {
                bits |= INTEGER;
            }
            mask &= bits;
        }
        match map.get("const") {
            Some(Value::String(_)) => mask &= STRING,
            Some(Value::Number(_)) => mask &= INTEGER | NUMBER,
            _ => {}
        }
        if map.get("enum").is_some() {
            mask &= STRING;
        }
        if let Some(target) = map.get("$ref").and_then(|r| self.def_of(r)) {
            mask &= self.mask(target, depth + 1);
        }
        for member in map.get("allOf").and_then(Value::as_array).into_iter().flatten() {
            mask &= self.mask(member, depth + 1);
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(members) = map.get(keyword).and_then(Value::as_array) {
                mask &= members.iter().fold(0, |a, m| a | self.mask(m, depth + 1));
            }
        }
        mask
    }

    /// The union as a `match` on a tag, when every member requires an object with a distinct
    /// constant value of the same property. A member that is itself such a union counts with
    /// all its tags, or as one member when all its members share the tag (an
    /// `extension_ui_request` union discriminated further by `method`).
    fn tagged(&mut self, members: &[Value], path: &str) -> Result<Option<Tagged>, ValidatorGenError> {
        let Some(first) = members.first() else { return Ok(None) };
        for property in self.const_props(first, 0) {
            let mut found: Vec<(String, Value, String)> = Vec::new();
            let all = members.iter().enumerate().all(|(i, m)| self.tag_leaves(m, &property, &format!("{path}/{i}"), &mut found, 0));
            let distinct = found.iter().enumerate().all(|(i, (t, _, _))| found[..i].iter().all(|(u, _, _)| u != t));
            if !all || !distinct {
                continue;
            }
            let mut out = Vec::new();
            for (tag, leaf, leaf_path) in found {
                out.push((tag, self.some_node_for(&leaf, &leaf_path)?));
            }
            return Ok(Some(Tagged { property, members: out }));
        }
        Ok(None)
    }

    /// The properties a member requires to be a constant string (following `$ref`s and into
    /// the first member of a union): the candidates for the discriminator.
    fn const_props(&self, schema: &Value, depth: usize) -> Vec<String> {
        let Some(map) = schema.as_object() else { return Vec::new() };
        if depth > 8 {
            return Vec::new();
        }
        if let Some(target) = map.get("$ref").and_then(|r| self.def_of(r)) {
            return self.const_props(target, depth + 1);
        }
        if let Some(first) = map.get("oneOf").or_else(|| map.get("anyOf")).and_then(Value::as_array).and_then(|m| m.first()) {
            return self.const_props(first, depth + 1);
        }
        let required = map.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
        required.filter(|r| map.get("properties").and_then(|p| p.get(*r)).and_then(|p| p.get("const")).is_some_and(Value::is_string)).map(str::to_owned).collect()
    }

    /// Collects `(tag, member schema, path)` for a union member tagged by `property`; `false`
    /// when the member is not a tagged object (or a union of them).
    fn tag_leaves(&self, member: &Value, property: &str, path: &str, out: &mut Vec<(String, Value, String)>, depth: usize) -> bool {
        let Some(map) = member.as_object() else { return false };
        if depth > 8 {
            return false;
        }
        if let (Some(r), true) = (map.get("$ref"), map.keys().all(|k| k == "$ref" || is_annotation(k))) {
            let Some(target) = self.def_of(r) else { return false };
            let Some(tmap) = target.as_object() else { return false };
            if let Some(members) = tmap.get("oneOf").or_else(|| tmap.get("anyOf")).and_then(Value::as_array) {
                // Only a def that is nothing but the union can be replaced by its members.
                let only_union = tmap.keys().filter(|k| !is_annotation(k)).count() == 1;
                if !only_union {
                    return false;
                }
                let name = r.as_str().unwrap_or_default();
                let mut inner = Vec::new();
                if !members.iter().enumerate().all(|(i, m)| self.tag_leaves(m, property, &format!("{name}/{i}"), &mut inner, depth + 1)) {
                    return false;
                }
                let shared = inner.first().map(|(t, _, _)| t.clone()).filter(|t| inner.len() > 1 && inner.iter().all(|(u, _, _)| u == t));
                match shared {
                    Some(tag) => out.push((tag, member.clone(), path.to_owned())),
                    None => out.extend(inner),
                }
                return true;
            }
            return match self.tag_of(target, property) {
                Some(tag) => {
                    out.push((tag, member.clone(), path.to_owned()));
                    true
                }
                None => false,
            };
        }
        match self.tag_of(member, property) {
            Some(tag) => {
                out.push((tag, member.clone(), path.to_owned()));
                true
            }
            None => false,
        }
    }

    /// The tag when `schema` requires an object whose `property` is a constant string.
    fn tag_of(&self, schema: &Value, property: &str) -> Option<String> {
        let map = schema.as_object()?;
        if self.mask(schema, 0) != OBJECT {
            return None;
        }
        map.get("required")?.as_array()?.iter().find(|r| r.as_str() == Some(property))?;
        map.get("properties")?.get(property)?.get("const")?.as_str().map(str::to_owned)
    }
}

/// jsonschema's candidate list of an `enum` message, at most three shown (`"off", "minimal"
/// or 6 other candidates`); `tests/errors.rs` checks the whole message.
fn enum_candidates(options: &[&str]) -> String {
    let quoted: Vec<String> = options.iter().map(|o| Value::from(*o).to_string()).collect();
    match quoted.len() {
        0 => String::new(),
        1..=3 => match quoted.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        },
        n => format!("{} or {} other candidates", quoted[..2].join(", "), n - 2),
    }
}

fn is_annotation(key: &str) -> bool {
    ANNOTATIONS.contains(&key) || key.starts_with("x-")
}

fn type_bit(name: &str) -> Option<u8> {
    Some(match name {
        "null" => NULL,
        "boolean" => BOOLEAN,
        "integer" => INTEGER,
        "number" => NUMBER,
        "string" => STRING,
        "array" => ARRAY,
        "object" => OBJECT,
        _ => return None,
    })
}

/// Whether `pattern` means the same in ECMA-262 (what JSON Schema specifies) and in the regex
/// crate the validator matches with: literals, `[…]` classes and ranges, anchors, groups,
/// alternation and quantifiers, escapes only of punctuation. Refused: `.` (ECMA-262 excludes
/// four line terminators, the regex crate one), the class escapes (`\d`, `\w`, `\s`, `\b` are
/// Unicode-aware in the regex crate, ASCII in ECMA-262), backreferences, lookaround and flags.
fn portable(pattern: &str) -> Result<(), String> {
    let mut chars = pattern.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e) if e.is_ascii_punctuation() => {}
                Some(e) => return Err(format!("the escape \\{e} means something else in ECMA-262 and in the regex crate")),
                None => return Err("a trailing backslash".to_owned()),
            },
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '.' if !in_class => return Err("`.` matches different line terminators in ECMA-262 and in the regex crate".to_owned()),
            '(' if !in_class && chars.clone().next() == Some('?') => return Err("groups with `(?` (lookaround, flags, names) are not portable".to_owned()),
            _ => {}
        }
    }
    Ok(())
}

/// The order `crate::protocol::program` searches names and tags in: by length, then by bytes.
fn by_length_then_bytes(a: &str, b: &str) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// The integer `format`s, in the order of `crate::protocol::program`'s table of them.
const INT_FORMATS: [&str; 8] = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64"];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn defs(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_def_is_shared_only_when_it_and_all_it_reaches_constrain_alike() {
        let base = defs(json!({
            "Same": {"description": "old words", "type": "object", "properties": {"a": {"$ref": "#/$defs/Leaf"}}},
            "Leaf": {"type": "string"},
            "Grown": {"type": "object", "properties": {"b": {"type": "string"}}},
            "UsesGrown": {"type": "object", "properties": {"g": {"$ref": "#/$defs/Grown"}}},
            "Renamed": {"type": "object", "properties": {"description": {"type": "string"}}}
        }));
        let next = defs(json!({
            "Same": {"description": "new words", "type": "object", "properties": {"a": {"$ref": "#/$defs/Leaf", "title": "A"}}},
            "Leaf": {"type": "string"},
            "Grown": {"type": "object", "properties": {"b": {"type": "string"}, "usage": {"type": "integer"}}},
            "UsesGrown": {"type": "object", "properties": {"g": {"$ref": "#/$defs/Grown"}}},
            "Renamed": {"type": "object", "properties": {"description": {"type": "integer"}}},
            "New": {"type": "null"}
        }));
        let shared: Vec<String> = alike(&next, &base).into_iter().collect();
        // A property named like an annotation is a constraint, not an annotation.
        assert_eq!(shared, ["Leaf", "Same"]);
    }

    #[test]
    fn shared_defs_are_the_base_programs_nodes_and_not_compiled_again() {
        let base = defs(json!({"Leaf": {"type": "string"}, "Grown": {"type": "object"}}));
        let next = defs(json!({"Leaf": {"type": "string"}, "Grown": {"type": "object", "required": ["x"]}, "Pair": {"type": "array", "items": {"$ref": "#/$defs/Leaf"}}}));
        let code = generate_extending(&next, &[], &base, "crate::base").unwrap();
        assert!(code.contains("base: Some(&crate::base::PROGRAM)"), "{code}");
        // Leaf is the base's node 0; its items reference it there, and its own node is empty.
        assert!(code.contains(&format!("Op::Items({})", BASE)), "{code}");
        assert!(code.contains(&format!("E(S(0, 4), {}, 0)", BASE)) || code.contains(&format!(", {}, 0)", BASE)), "{code}");
        assert!(!code.contains("Op::Type(16"), "{code}");
        assert!(code.contains("Op::Object("), "{code}");
    }

    #[test]
    fn only_patterns_both_regex_dialects_read_alike_compile() {
        for ok in ["^[A-Z][A-Z0-9]*(-[A-Z0-9]+)+$", "^[A-Za-z_][A-Za-z0-9_-]{0,63}$", "a\\.b|c[.]"] {
            assert_eq!(portable(ok), Ok(()), "{ok}");
        }
        for bad in ["^\\d+$", "a.b", "(?i)x", "(?=a)", "\\w", "x\\"] {
            assert!(portable(bad).is_err(), "{bad}");
            let schema = defs(json!({"A": {"type": "string", "pattern": bad}}));
            assert!(generate(&schema, &[]).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_subschema_stated_twice_is_one_node_and_a_lone_ref_is_its_def() {
        let schema = defs(json!({
            "A": {"type": "object", "properties": {"x": {"type": "string", "minLength": 1}, "y": {"type": "string", "minLength": 1}, "z": {"$ref": "#/$defs/B"}}},
            "B": {"type": "integer"}
        }));
        let code = generate(&schema, &[]).unwrap();
        assert_eq!(code.matches("Op::MinLength(1)").count(), 1, "{code}");
        // z leads straight to B's node (1), not to a node that only calls it.
        assert!(!code.contains("Op::Node(1)"), "{code}");
    }
}
