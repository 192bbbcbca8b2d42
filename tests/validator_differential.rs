//! The generated validators (`src/codegen/validators.rs`) against jsonschema, the oracle, over
//! every schema example, every recorded peer frame under `tests/fixtures/`, the conformance
//! corpus, one synthesized instance of every def, and 100k+ mutated frames (proptest). Both must
//! take the same accept/reject decision, and a rejection must name the same place: the pointer
//! ours reports is one jsonschema reports, or lies below a `oneOf`/`anyOf` jsonschema reports as
//! a whole (ours resolves a union to the member the value is meant for).
//!
//! The integer `format`s (`uint32`, …) are annotations to jsonschema; ours checks them as
//! ranges, so the oracle's copy of the schema spells them as `minimum`/`maximum`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use agentwire::codegen::bundle::reachable;
use agentwire::protocol::acp::acp_validator;
use agentwire::protocol::acp_v2::{acp_v2_unstable_validator, AcpValidator};
use agentwire::protocol::embedded::{acp_schema_json, acp_v2_schema_json, acp_v2_unstable_schema_json, bundle_json};
use agentwire::protocol::doc::Doc;
use agentwire::protocol::validate::{validator, FrameError};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Map, Value};

/// Which schema a def belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Schema {
    Bundle,
    Acp,
    /// ACP v2's stable schema, its checks reached through the process's v2 validator.
    AcpV2,
    /// ACP v2's unstable schema: its checks reuse the stable schema's where a def constrains
    /// alike, so both are compared with the oracle.
    AcpV2Unstable,
}

impl Schema {
    fn acp_validator(self) -> Option<&'static AcpValidator> {
        match self {
            Self::Bundle => None,
            Self::Acp => Some(acp_validator()),
            Self::AcpV2 => Some(agentwire::protocol::acp_v2::acp_v2_validator()),
            Self::AcpV2Unstable => Some(acp_v2_unstable_validator()),
        }
    }
}

/// The roots every corpus frame is checked against.
const FRAME_ROOTS: &[(Schema, &str)] = &[
    (Schema::Bundle, "RpcInboundFrame"),
    (Schema::Bundle, "RpcOutboundFrame"),
    (Schema::Bundle, "WireInboundFrame"),
    (Schema::Bundle, "WireOutboundFrame"),
    (Schema::Acp, "#client-message"),
    (Schema::Acp, "#agent-message"),
    (Schema::AcpV2, "#client-message"),
    (Schema::AcpV2, "#agent-message"),
    (Schema::AcpV2Unstable, "#client-message"),
    (Schema::AcpV2Unstable, "#agent-message"),
];

struct Oracle {
    bundle: Value,
    acp: Value,
    acp_v2: Value,
    acp_v2_unstable: Value,
    compiled: HashMap<(Schema, String), jsonschema::Validator>,
}

/// Rewrites integer `format`s as the ranges they mean.
fn formats_as_ranges(v: &mut Value) {
    match v {
        Value::Object(m) => {
            let range = match m.get("format").and_then(Value::as_str) {
                Some("uint8") => Some((json!(0), json!(u8::MAX))),
                Some("uint16") => Some((json!(0), json!(u16::MAX))),
                Some("uint32") => Some((json!(0), json!(u32::MAX))),
                Some("uint64") => Some((json!(0), json!(u64::MAX))),
                Some("int32") => Some((json!(i32::MIN), json!(i32::MAX))),
                Some("int64") => Some((json!(i64::MIN), json!(i64::MAX))),
                _ => None,
            };
            if let Some((lo, hi)) = range {
                let stricter_lo = m.get("minimum").and_then(Value::as_f64).is_some_and(|x| x >= lo.as_f64().unwrap_or(f64::MIN));
                if !stricter_lo {
                    m.insert("minimum".into(), lo);
                }
                let stricter_hi = m.get("maximum").and_then(Value::as_f64).is_some_and(|x| x <= hi.as_f64().unwrap_or(f64::MAX));
                if !stricter_hi {
                    m.insert("maximum".into(), hi);
                }
            }
            for (k, x) in m.iter_mut() {
                match (k.as_str(), x) {
                    // Maps of schemas by name: a property may be called `default` or `enum`.
                    ("properties" | "patternProperties" | "$defs" | "definitions", Value::Object(named)) => named.values_mut().for_each(formats_as_ranges),
                    // Data, not schemas.
                    ("const" | "enum" | "default" | "examples", _) => {}
                    (_, x) => formats_as_ranges(x),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(formats_as_ranges),
        _ => {}
    }
}

impl Oracle {
    fn new() -> Self {
        let mut bundle: Value = serde_json::from_str(bundle_json()).unwrap();
        let mut acp: Value = serde_json::from_str(acp_schema_json()).unwrap();
        formats_as_ranges(&mut bundle);
        formats_as_ranges(&mut acp);
        let mut acp_v2: Value = serde_json::from_str(acp_v2_schema_json()).unwrap();
        let mut acp_v2_unstable: Value = serde_json::from_str(acp_v2_unstable_schema_json()).unwrap();
        formats_as_ranges(&mut acp_v2);
        formats_as_ranges(&mut acp_v2_unstable);
        Self { bundle, acp, acp_v2, acp_v2_unstable, compiled: HashMap::new() }
    }

    fn doc(&self, schema: Schema) -> &Value {
        match schema {
            Schema::Bundle => &self.bundle,
            Schema::Acp => &self.acp,
            Schema::AcpV2 => &self.acp_v2,
            Schema::AcpV2Unstable => &self.acp_v2_unstable,
        }
    }

    fn defs(&self, schema: Schema) -> &Map<String, Value> {
        self.doc(schema)["$defs"].as_object().unwrap()
    }

    /// The schema of a def (or ACP pseudo-root).
    fn schema_of(&self, schema: Schema, key: &str) -> Value {
        match (schema, key) {
            (_, "#agent-message") => self.doc(schema)["anyOf"][0].clone(),
            (_, "#client-message") => self.doc(schema)["anyOf"][1].clone(),
            _ => self.defs(schema)[key].clone(),
        }
    }

    fn validator(&mut self, schema: Schema, key: &str) -> &jsonschema::Validator {
        let slot = (schema, key.to_owned());
        if !self.compiled.contains_key(&slot) {
            let doc = match (schema, key) {
                (_, "#agent-message" | "#client-message") => {
                    let mut root = self.schema_of(schema, key);
                    root["$defs"] = Value::Object(self.defs(schema).clone());
                    root
                }
                _ => {
                    // Only the defs this one reaches: compiling the whole schema for each of
                    // ~500 defs would take most of the test's time.
                    let all: std::collections::BTreeMap<String, Value> = self.defs(schema).clone().into_iter().collect();
                    let subset: Map<String, Value> = reachable(&all, &[key]).into_iter().map(|n| (n.clone(), all[&n].clone())).collect();
                    json!({"$defs": subset, "$ref": format!("#/$defs/{key}")})
                }
            };
            let mut doc = doc;
            doc["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
            let compiled = jsonschema::options().with_draft(jsonschema::Draft::Draft202012).build(&doc).unwrap_or_else(|e| panic!("{key}: {e}"));
            self.compiled.insert(slot.clone(), compiled);
        }
        &self.compiled[&slot]
    }
}

/// Our verdict on `value`, the way the rpc decoder reaches it: the frame's text parsed into a
/// `Doc` and checked. The check of the `Value` itself (`Doc::from_value`, the wire and ACP
/// decoders' path) must say exactly the same.
fn ours(schema: Schema, key: &str, value: &Value) -> Result<(), FrameError> {
    let text = value.to_string();
    let parsed = Doc::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert!(parsed.same_as_value, "{text}");
    let (from_text, from_value) = match schema.acp_validator() {
        None => (validator().validate_def_doc(key, &parsed.doc, ""), validator().validate_def(key, value)),
        Some(acp) => (acp.validate_def_doc(key, &parsed.doc), acp.validate_def(key, value)),
    };
    assert_eq!(from_text, from_value, "{key}: {text}");
    from_text
}

/// Where jsonschema says `value` is wrong: exact pointers, and the pointers of unions that
/// failed as a whole.
fn oracle_pointers(v: &jsonschema::Validator, value: &Value) -> (Vec<String>, Vec<String>) {
    use jsonschema::error::ValidationErrorKind as K;
    let (mut exact, mut unions) = (Vec::new(), Vec::new());
    for e in v.iter_errors(value) {
        let path = e.instance_path().as_str().to_owned();
        match e.kind() {
            K::Required { property } => exact.push(format!("{path}/{}", property.as_str().unwrap_or_default().replace('~', "~0").replace('/', "~1"))),
            K::AdditionalProperties { unexpected } => {
                exact.extend(unexpected.iter().map(|n| format!("{path}/{}", n.replace('~', "~0").replace('/', "~1"))))
            }
            K::OneOfNotValid { .. } | K::AnyOf { .. } | K::OneOfMultipleValid { .. } => unions.push(path),
            _ => exact.push(path),
        }
    }
    (exact, unions)
}

fn below(pointer: &str, prefix: &str) -> bool {
    pointer == prefix || (pointer.starts_with(prefix) && pointer.as_bytes().get(prefix.len()) == Some(&b'/'))
}

/// Compares the two on one value; `Err` says how they differ.
fn compare(oracle: &mut Oracle, schema: Schema, key: &str, value: &Value) -> Result<bool, String> {
    let mine = ours(schema, key, value);
    let theirs = oracle.validator(schema, key);
    let valid = theirs.is_valid(value);
    match (&mine, valid) {
        (Ok(()), true) => Ok(true),
        (Ok(()), false) => {
            let first = theirs.iter_errors(value).next().map(|e| format!("{}: {e}", e.instance_path())).unwrap_or_default();
            Err(format!("{key}: ours accepts, jsonschema rejects ({first}): {value}"))
        }
        (Err(e), true) => Err(format!("{key}: ours rejects ({e}), jsonschema accepts: {value}")),
        (Err(e), false) => {
            let (exact, unions) = oracle_pointers(theirs, value);
            if exact.contains(&e.path) || unions.iter().any(|u| below(&e.path, u)) {
                Ok(false)
            } else {
                Err(format!("{key}: ours names {:?} ({e}); jsonschema names {exact:?}, unions at {unions:?}: {value}", e.path))
            }
        }
    }
}

/// Every distinct JSON line of the `.jsonl` files below `dir` (the `frame` a transcript line
/// wraps instead of the line); the recorded HTTP traffic (`*.http.jsonl`) is not frames.
fn corpus_frames(dir: &Path, seen: &mut HashSet<String>, out: &mut Vec<(String, Value)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            corpus_frames(&path, seen, out);
            continue;
        }
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if !name.ends_with(".jsonl") || name.ends_with(".http.jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
            let frame = match v.get("frame") {
                Some(frame) if frame.is_object() => frame.clone(),
                _ => v,
            };
            if seen.insert(frame.to_string()) {
                out.push((format!("{}:{}", path.display(), i + 1), frame));
            }
        }
    }
}

/// A value for `schema`: required members always, optional ones by `rng`, the first (or a
/// random) union member; often valid, sometimes not (the `not` keywords), both useful.
fn synth(defs: &Map<String, Value>, schema: &Value, rng: &mut u64, depth: usize) -> Value {
    let Some(map) = schema.as_object() else { return Value::Null };
    if depth > 7 {
        return Value::Null;
    }
    if let Some(target) = map.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
        let mut base = synth(defs, &defs[target], rng, depth + 1);
        if let (Some(props), Value::Object(obj)) = (map.get("properties").and_then(Value::as_object), &mut base) {
            for (k, p) in props {
                if let Some(c) = p.get("const") {
                    obj.insert(k.clone(), c.clone());
                }
            }
        }
        return base;
    }
    if let Some(c) = map.get("const") {
        return c.clone();
    }
    if let Some(options) = map.get("enum").and_then(Value::as_array) {
        return options[(next(rng) as usize) % options.len()].clone();
    }
    for keyword in ["oneOf", "anyOf"] {
        if let Some(members) = map.get(keyword).and_then(Value::as_array) {
            let pick = (next(rng) as usize) % members.len();
            let mut merged = map.clone();
            merged.remove(keyword);
            let mut v = synth(defs, &members[pick], rng, depth + 1);
            if let (Value::Object(extra), Value::Object(obj)) = (synth(defs, &Value::Object(merged), rng, depth + 1), &mut v) {
                for (k, x) in extra {
                    obj.entry(k).or_insert(x);
                }
            }
            return v;
        }
    }
    if let Some(all) = map.get("allOf").and_then(Value::as_array) {
        let mut obj = Map::new();
        for member in all {
            if let Value::Object(m) = synth(defs, member, rng, depth + 1) {
                obj.extend(m);
            }
        }
        let mut rest = map.clone();
        rest.remove("allOf");
        if let Value::Object(m) = synth(defs, &Value::Object(rest), rng, depth + 1) {
            obj.extend(m);
        }
        return Value::Object(obj);
    }
    let types: Vec<&str> = match map.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ if map.contains_key("properties") => vec!["object"],
        _ => vec!["string"],
    };
    let t = types[(next(rng) as usize) % types.len()];
    match t {
        "null" => Value::Null,
        "boolean" => Value::Bool(next(rng) % 2 == 0),
        "integer" => json!(map.get("minimum").and_then(Value::as_i64).unwrap_or(0).max(1)),
        "number" => json!(1.5),
        "string" => json!("abc"),
        "array" => {
            let n = map.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize + (next(rng) % 2) as usize;
            Value::Array((0..n).map(|_| synth(defs, map.get("items").unwrap_or(&Value::Bool(true)), rng, depth + 1)).collect())
        }
        _ => {
            let mut obj = Map::new();
            let required: Vec<&str> = map.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
            for (k, p) in map.get("properties").and_then(Value::as_object).into_iter().flatten() {
                if required.contains(&k.as_str()) || next(rng) % 3 == 0 {
                    obj.insert(k.clone(), synth(defs, p, rng, depth + 1));
                }
            }
            Value::Object(obj)
        }
    }
}

/// xorshift64: the synthesized instances are the same on every run.
fn next(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

/// Every JSON pointer of `v`'s nodes.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                pointers(x, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                pointers(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// One mutation of `v`: the node at a chosen pointer is removed, replaced or given a member.
fn mutate(v: &mut Value, at: Index, op: u8, pick: Index, pool: &[Value]) {
    let mut all = Vec::new();
    pointers(v, String::new(), &mut all);
    let pointer = all[at.index(all.len())].clone();
    let replacement = pool[pick.index(pool.len())].clone();
    let (parent, last) = match pointer.rfind('/') {
        Some(i) => (pointer[..i].to_owned(), pointer[i + 1..].replace("~1", "/").replace("~0", "~")),
        None => (String::new(), String::new()),
    };
    match op % 5 {
        // Remove the node from its object or array.
        0 => match v.pointer_mut(&parent) {
            Some(Value::Object(m)) => {
                m.shift_remove(&last);
            }
            Some(Value::Array(a)) => {
                if let Ok(i) = last.parse::<usize>() {
                    if i < a.len() {
                        a.remove(i);
                    }
                }
            }
            _ => {}
        },
        // Replace it with a value from the pool (scalars of every type, tags, nodes of other frames).
        1 | 2 => {
            if let Some(node) = v.pointer_mut(&pointer) {
                *node = replacement;
            }
        }
        // Add a member: an unknown name, or a near miss of a known one.
        3 => {
            if let Some(Value::Object(m)) = v.pointer_mut(&pointer) {
                let name = match m.keys().nth(pick.index(m.len().max(1))) {
                    Some(k) if op % 2 == 0 => format!("{k}s"),
                    _ => "zzUnknown".to_owned(),
                };
                m.insert(name, replacement);
            } else if let Some(Value::Array(a)) = v.pointer_mut(&pointer) {
                a.push(replacement);
            }
        }
        // Empty a container or a string.
        _ => {
            if let Some(node) = v.pointer_mut(&pointer) {
                match node {
                    Value::Object(m) => m.clear(),
                    Value::Array(a) => a.clear(),
                    Value::String(s) => s.clear(),
                    other => *other = json!(-1),
                }
            }
        }
    }
}

/// Scalars of every type and edge, and every string constant of both schemas (so a tag can
/// become another member's tag or an enum a wrong one).
fn value_pool(oracle: &Oracle, seeds: &[(Schema, String, Value)]) -> Vec<Value> {
    let mut pool = vec![
        Value::Null,
        json!(true),
        json!(0),
        json!(1),
        json!(-1),
        json!(1.5),
        json!(2.0),
        json!(4_294_967_296u64),
        json!(65_536),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(""),
        json!("x"),
        json!("hgh"),
        json!("/abs/path"),
        json!("2.0"),
        json!([]),
        json!({}),
        json!([{"type": "text"}]),
        json!({"type": "text", "text": "t"}),
    ];
    fn consts(v: &Value, out: &mut Vec<Value>) {
        match v {
            Value::Object(m) => {
                if let Some(c @ Value::String(_)) = m.get("const") {
                    out.push(c.clone());
                }
                if let Some(Value::Array(e)) = m.get("enum") {
                    out.extend(e.iter().cloned());
                }
                m.values().for_each(|x| consts(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| consts(x, out)),
            _ => {}
        }
    }
    consts(&oracle.bundle, &mut pool);
    consts(&oracle.acp, &mut pool);
    // Whole nodes of other frames, so a member can be swapped for another shape.
    for (_, _, v) in seeds.iter().step_by(7) {
        if let Value::Object(m) = v {
            pool.extend(m.values().filter(|x| x.is_object() || x.is_array()).take(2).cloned());
        }
    }
    pool.sort_by_key(|v| v.to_string());
    pool.dedup();
    pool
}

#[test]
fn generated_validators_agree_with_jsonschema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut oracle = Oracle::new();
    let mut failures: Vec<String> = Vec::new();
    let mut seeds: Vec<(Schema, String, Value)> = Vec::new();

    // A property named like a keyword keeps its format's range in the oracle (a mutation found
    // `{"default": u64::MAX}` accepted by the oracle while `default` is an int64).
    for (value, valid) in [(json!({"default": u64::MAX}), false), (json!({"default": i64::MAX}), true)] {
        assert_eq!(compare(&mut oracle, Schema::Acp, "IntegerPropertySchema", &value), Ok(valid), "{value}");
    }

    // The corpus: schema examples, recorded peer frames, the conformance transcripts, the fuzz
    // seeds; every line (and the frame it wraps) against every frame root of both schemas.
    let (mut corpus, mut seen) = (Vec::new(), HashSet::new());
    for dir in ["schema/examples", "tests/fixtures", "tests/conformance", "fuzz/seeds"] {
        corpus_frames(&root.join(dir), &mut seen, &mut corpus);
    }
    assert!(corpus.len() > 3000, "expected the whole corpus, found {} frames", corpus.len());
    let (mut accepted, mut checked) = (0usize, 0usize);
    for (name, frame) in &corpus {
        // JSON-RPC frames (wire, ACP) against those roots, the others against the JSONL ones.
        let json_rpc = frame.get("jsonrpc").is_some();
        for (schema, key) in FRAME_ROOTS.iter().filter(|(_, key)| key.starts_with("Rpc") != json_rpc) {
            checked += 1;
            match compare(&mut oracle, *schema, key, frame) {
                Ok(true) => {
                    accepted += 1;
                    // Mutations of small frames land on meaningful spots more often (and are cheap).
                    if frame.to_string().len() <= 4096 {
                        seeds.push((*schema, (*key).to_owned(), frame.clone()));
                    }
                }
                Ok(false) => {}
                Err(e) => failures.push(format!("{name}: {e}")),
            }
        }
    }
    assert!(accepted > 2000, "only {accepted} of {checked} corpus checks were valid frames");

    // One synthesized instance per def of both schemas (three for unions).
    for schema in [Schema::Bundle, Schema::Acp, Schema::AcpV2, Schema::AcpV2Unstable] {
        let defs = oracle.defs(schema).clone();
        for (i, (name, def)) in defs.iter().enumerate() {
            for round in 0..3u64 {
                let mut rng = 0x9E37_79B9_7F4A_7C15 ^ (i as u64 * 31 + round + 1);
                let value = synth(&defs, def, &mut rng, 0);
                match compare(&mut oracle, schema, name, &value) {
                    Ok(true) => seeds.push((schema, name.clone(), value)),
                    Ok(false) => {}
                    Err(e) => failures.push(format!("synth: {e}")),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} disagreements, first ones:\n{}", failures.len(), failures.iter().take(15).cloned().collect::<Vec<_>>().join("\n"));

    // Mutated frames: 1 to 3 mutations of a valid seed, against the seed's def. They are most of
    // this test's time, so they run on every core, each runner with its own oracle.
    let pool = value_pool(&oracle, &seeds);
    let cases: u32 = std::env::var("DIFFERENTIAL_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(100_000);
    let runners = u32::try_from(std::thread::available_parallelism().map_or(1, std::num::NonZero::get).min(4)).unwrap_or(1);
    let (seeds, pool) = (&seeds, &pool);
    let mut oracles = vec![oracle];
    oracles.extend((1..runners).map(|_| Oracle::new()));
    let rejected: u64 = std::thread::scope(|scope| {
        let runs: Vec<_> = oracles
            .into_iter()
            .zip(0..)
            .map(|(oracle, i)| scope.spawn(move || mutations_agree(oracle, seeds, pool, cases / runners + u32::from(i < cases % runners))))
            .collect();
        runs.into_iter().map(|run| run.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).sum()
    });
    // The mutations must mostly break frames, or the comparison of pointers is not exercised.
    assert!(rejected * 2 > u64::from(cases), "only {rejected} of {cases} mutated frames were invalid");
}

/// Runs `cases` mutated frames through both validators; panics at the first disagreement, and
/// returns how many of the frames were invalid.
fn mutations_agree(oracle: Oracle, seeds: &[(Schema, String, Value)], pool: &[Value], cases: u32) -> u64 {
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let rejected = std::cell::Cell::new(0u64);
    let strategy = (any::<Index>(), prop::collection::vec((any::<Index>(), any::<u8>(), any::<Index>()), 1..4));
    let oracle = std::cell::RefCell::new(oracle);
    let result = runner.run(&strategy, |(seed, mutations)| {
        let (schema, key, base) = &seeds[seed.index(seeds.len())];
        let mut value = base.clone();
        for (at, op, pick) in mutations {
            mutate(&mut value, at, op, pick, pool);
        }
        match compare(&mut oracle.borrow_mut(), *schema, key, &value) {
            Ok(valid) => {
                if !valid {
                    rejected.set(rejected.get() + 1);
                }
                Ok(())
            }
            Err(e) => Err(TestCaseError::fail(e)),
        }
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    rejected.get()
}
