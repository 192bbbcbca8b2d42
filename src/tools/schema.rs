//! A tool's parameter schema, compiled and checked at run time: the built-in tools', a host's
//! (`set_host_tools`, ACP client tools) and an MCP server's. These are arbitrary JSON Schemas
//! that only arrive while the agent runs, so they go through `boon`, a JSON Schema validator
//! that passes the official test suite (drafts 4 to 2020-12). The protocol's own frames never
//! come here: their validators are generated at build time.
//!
//! Nothing is fetched: a `$ref` to anything outside the schema itself (a file, a URL) makes
//! the schema invalid. A schema without `$schema` is draft 2020-12, and `format` is an
//! annotation there, as the specification has it.
//!
//! One limit, kept on the lax side: `boon` compiles `pattern` and `patternProperties` with
//! Rust's `regex` crate, which has no lookaround and no backreferences. A schema whose only
//! fault is such a pattern (a valid ECMAScript regex, checked with `regress`) is accepted and
//! its arguments are passed to the tool unchecked, rather than refusing a tool the schema
//! allows (docs/reliability.md, "Tool arguments").

use boon::{CompileError, Compiler, Draft, ErrorKind, Schemas, UrlLoader, ValidationError};
use serde_json::{Map, Value};

/// Where the schema is placed for `boon`: a name of its own, never fetched.
const LOCATION: &str = "agentwire:///tool-parameters.json";

/// Why a parameter schema cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(String);

/// A compiled parameter schema.
pub struct ParameterSchema {
    /// `None`: a pattern only ECMAScript engines can run; arguments pass unchecked.
    compiled: Option<(Schemas, boon::SchemaIndex)>,
}

impl std::fmt::Debug for ParameterSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParameterSchema").field("checked", &self.compiled.is_some()).finish()
    }
}

/// Refuses every external reference.
struct NoLoader;

impl UrlLoader for NoLoader {
    fn load(&self, url: &str) -> Result<Value, Box<dyn std::error::Error>> {
        Err(format!("{url} is outside the schema; agentwire does not fetch schemas").into())
    }
}

impl ParameterSchema {
    /// Compiles `parameters` (checked against its draft's meta-schema on the way).
    pub fn compile(parameters: &Map<String, Value>) -> Result<ParameterSchema, SchemaError> {
        let mut compiler = Compiler::new();
        compiler.use_loader(Box::new(NoLoader));
        compiler.set_default_draft(Draft::V2020_12);
        let mut schemas = Schemas::new();
        let compiled = match compiler.add_resource(LOCATION, Value::Object(parameters.clone())) {
            Ok(()) => compiler.compile(LOCATION, &mut schemas),
            Err(e) => Err(e),
        };
        match compiled {
            Ok(index) => Ok(ParameterSchema { compiled: Some((schemas, index)) }),
            Err(CompileError::InvalidRegex { regex, .. }) if regress::Regex::new(&regex).is_ok() => Ok(ParameterSchema::unchecked()),
            Err(CompileError::ValidationError { src, .. }) if only_ecmascript_patterns(&src) => Ok(ParameterSchema::unchecked()),
            Err(e) => Err(SchemaError(describe(&e))),
        }
    }

    fn unchecked() -> ParameterSchema {
        tracing::warn!("a tool's parameter schema has a pattern Rust's regex cannot run (lookaround, backreference); its arguments are not checked");
        ParameterSchema { compiled: None }
    }

    /// Every problem of `args`, one `<pointer>: <what>` each; empty when they fit.
    pub fn problems(&self, args: &Map<String, Value>) -> Vec<String> {
        let Some((schemas, index)) = &self.compiled else { return Vec::new() };
        let args = Value::Object(args.clone());
        let Err(error) = schemas.validate(&args, *index) else { return Vec::new() };
        let mut problems = Vec::new();
        leaves(&error, &mut problems);
        problems
    }
}

/// The failures that say what is wrong: a group (a `$ref`, `allOf`, the root) is the sum of
/// its causes; `anyOf`/`oneOf`/`not` are one problem each, as no single branch is the one the
/// caller meant.
fn leaves(error: &ValidationError<'_, '_>, out: &mut Vec<String>) {
    let grouping = matches!(error.kind, ErrorKind::Group | ErrorKind::Schema { .. } | ErrorKind::Reference { .. } | ErrorKind::AllOf | ErrorKind::PropertyName { .. });
    if grouping && !error.causes.is_empty() {
        for cause in &error.causes {
            leaves(cause, out);
        }
        return;
    }
    let at = error.instance_location.to_string();
    out.push(format!("{}: {}", if at.is_empty() { "/" } else { &at }, error.kind));
}

/// Whether the meta-schema's only objections are `format: regex` failures on patterns that are
/// valid ECMAScript (what the specification means by a regex) but that Rust's `regex` refuses.
fn only_ecmascript_patterns(error: &ValidationError<'_, '_>) -> bool {
    if error.causes.is_empty() {
        return matches!(&error.kind, ErrorKind::Format { want: "regex", got, .. } if got.as_str().is_some_and(|p| regress::Regex::new(p).is_ok()));
    }
    error.causes.iter().all(only_ecmascript_patterns)
}

/// A compile error with its cause (boon's alternate form), in words that do not mention our
/// internal location.
fn describe(error: &CompileError) -> String {
    format!("{error:#}").replace(&format!("{LOCATION}#"), "the schema").replace(LOCATION, "the schema")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> Result<ParameterSchema, SchemaError> {
        ParameterSchema::compile(v.as_object().unwrap())
    }

    fn problems(s: &Value, args: Value) -> Vec<String> {
        schema(s.clone()).unwrap().problems(args.as_object().unwrap())
    }

    #[test]
    fn each_problem_names_its_pointer() {
        let s = json!({"type":"object","properties":{"path":{"type":"string"},"n":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false});
        assert!(problems(&s, json!({"path": "a", "n": 2})).is_empty());
        let found = problems(&s, json!({"path": 3, "n": 0, "x": true}));
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found.iter().any(|p| p.starts_with("/path: ")), "{found:?}");
        assert!(found.iter().any(|p| p.starts_with("/n: ")), "{found:?}");
        assert!(found.iter().any(|p| p.starts_with("/: ") && p.contains('x')), "{found:?}");
        let missing = problems(&s, json!({}));
        assert!(missing.len() == 1 && missing[0].starts_with("/: ") && missing[0].contains("path"), "{missing:?}");
    }

    #[test]
    fn refs_inside_the_schema_resolve_and_outside_ones_are_refused() {
        let s = json!({"type":"object","$defs":{"p":{"type":"string"}},"properties":{"path":{"$ref":"#/$defs/p"}}});
        assert_eq!(problems(&s, json!({"path": 1})).len(), 1);
        for outside in ["file:///etc/passwd", "https://example.com/s.json", "other.json"] {
            let err = schema(json!({"type":"object","properties":{"a":{"$ref": outside}}})).unwrap_err();
            assert!(err.to_string().contains("does not fetch"), "{outside}: {err}");
            assert!(!err.to_string().contains(LOCATION), "{err}");
        }
    }

    #[test]
    fn a_schema_that_breaks_its_meta_schema_is_refused() {
        let err = schema(json!({"type": 12})).unwrap_err().to_string();
        assert!(err.starts_with("the schema is not valid against metaschema") && err.contains("/type"), "{err}");
        assert!(schema(json!({"type":"object","properties":{"a":{"minLength":-1}}})).is_err());
        assert!(schema(json!({"type":"object","properties":{"a":{"type":"string","pattern":"("}}})).is_err());
    }

    /// A lookahead is valid ECMAScript that Rust's regex cannot run: the tool is kept and its
    /// arguments pass unchecked (never refused against the schema).
    #[test]
    fn an_ecmascript_only_pattern_leaves_the_arguments_unchecked() {
        let s = json!({"type":"object","properties":{"a":{"type":"string","pattern":"^(?!x)"}}});
        assert!(problems(&s, json!({"a": 5})).is_empty());
        let keys = json!({"type":"object","patternProperties":{"^(?=a)":{"type":"string"}},"additionalProperties":false});
        assert!(problems(&keys, json!({"b": 1})).is_empty());
        // Another fault beside it still makes the schema invalid.
        assert!(schema(json!({"type":"object","properties":{"a":{"type":"string","pattern":"^(?!x)"},"b":{"type":7}}})).is_err());
        assert!(schema(json!({"type":"object","properties":{"a":{"type":"string","pattern":"(?<!"}}})).is_err());
        assert!(!problems(&json!({"type":"object","properties":{"a":{"type":"string","pattern":"^y"}}}), json!({"a": "x"})).is_empty());
    }

    #[test]
    fn formats_are_annotations_in_2020_12_and_assertions_in_draft_7() {
        let s = json!({"type":"object","properties":{"d":{"type":"string","format":"date"}}});
        assert!(problems(&s, json!({"d": "nope"})).is_empty());
        let mut seven = s.clone();
        seven["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        assert_eq!(problems(&seven, json!({"d": "nope"})).len(), 1);
    }
}
