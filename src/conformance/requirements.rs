//! The requirements registry: every requirement a conformance transcript checks, with its
//! dialect, tier and source (`tests/conformance/requirements.json`, schema
//! `ConformanceRequirements` in `schema/transcript.schema.json`). It is built into the binary, so
//! `agentwire conformance run` judges tiers and reports per-requirement status wherever it runs.
//!
//! Tiers decide who a transcript applies to: a transcript naming an `AGENTWIRE` requirement pins
//! one of agentwire's own choices, so it runs against agentwire only; `CAPABILITY` transcripts
//! are gated by the capability their header `requires`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::protocol::validate::validator;
use crate::protocol::{ConformanceRequirement, ConformanceRequirementDocument, ConformanceRequirementTier, ConformanceRequirements};

/// The registry as committed, compiled in.
pub const REGISTRY_JSON: &str = include_str!("../../tests/conformance/requirements.json");

/// A registry that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The file cannot be read.
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// Not JSON, or not a `ConformanceRequirements` object.
    #[error("{origin}: {reason}")]
    Invalid { origin: String, reason: String },
    /// Two entries share an id.
    #[error("{origin}: requirement {id} is listed twice")]
    Duplicate { origin: String, id: String },
    /// A `CAPABILITY` requirement without its capability.
    #[error("{origin}: {id} is CAPABILITY but names no capability")]
    MissingCapability { origin: String, id: String },
    /// A `MANDATORY` requirement that cites no upstream document, or no sentence of it.
    #[error("{origin}: {id} is MANDATORY but cites no upstream document and sentence (`document` and `quote`)")]
    UnsourcedMandatory { origin: String, id: String },
}

/// The requirements, in registry order, by id.
#[derive(Debug, Clone)]
pub struct Registry {
    requirements: Vec<ConformanceRequirement>,
    index: BTreeMap<String, usize>,
}

impl Registry {
    /// Parses and validates a registry; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, RegistryError> {
        let invalid = |reason: String| RegistryError::Invalid { origin: origin.to_owned(), reason };
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
        validator().validate_def("ConformanceRequirements", &value).map_err(|e| invalid(e.to_string()))?;
        let parsed: ConformanceRequirements = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        let mut index = BTreeMap::new();
        for (i, r) in parsed.requirements.iter().enumerate() {
            if index.insert(r.id.to_string(), i).is_some() {
                return Err(RegistryError::Duplicate { origin: origin.to_owned(), id: r.id.to_string() });
            }
            if r.tier == ConformanceRequirementTier::Capability && r.capability.is_none() {
                return Err(RegistryError::MissingCapability { origin: origin.to_owned(), id: r.id.to_string() });
            }
            let upstream = matches!(r.document, Some(d) if d != ConformanceRequirementDocument::Agentwire);
            if r.tier == ConformanceRequirementTier::Mandatory && !(upstream && r.quote.is_some()) {
                return Err(RegistryError::UnsourcedMandatory { origin: origin.to_owned(), id: r.id.to_string() });
            }
        }
        Ok(Self { requirements: parsed.requirements, index })
    }

    /// Reads a registry file.
    pub fn load(path: &Path) -> Result<Self, RegistryError> {
        let text = std::fs::read_to_string(path).map_err(|source| RegistryError::Read { path: path.to_path_buf(), source })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// The registry compiled into this binary.
    pub fn embedded() -> Result<&'static Registry, &'static RegistryError> {
        static REGISTRY: OnceLock<Result<Registry, RegistryError>> = OnceLock::new();
        REGISTRY.get_or_init(|| Registry::parse(REGISTRY_JSON, "tests/conformance/requirements.json")).as_ref()
    }

    /// Every requirement, in registry order.
    pub fn iter(&self) -> impl Iterator<Item = &ConformanceRequirement> {
        self.requirements.iter()
    }

    /// One requirement.
    pub fn get(&self, id: &str) -> Option<&ConformanceRequirement> {
        self.index.get(id).map(|i| &self.requirements[*i])
    }

    /// The `AGENTWIRE`-tier ids among `ids`: a transcript naming any of them pins agentwire's
    /// own choices and is not run against other agents.
    pub fn agentwire_ids<'a>(&self, ids: &'a [String]) -> Vec<&'a str> {
        ids.iter().filter(|id| self.get(id).is_some_and(|r| r.tier == ConformanceRequirementTier::Agentwire)).map(String::as_str).collect()
    }
}

/// A tier's name as reports write it.
pub fn tier_name(tier: ConformanceRequirementTier) -> &'static str {
    match tier {
        ConformanceRequirementTier::Mandatory => "MANDATORY",
        ConformanceRequirementTier::Capability => "CAPABILITY",
        ConformanceRequirementTier::Advisory => "ADVISORY",
        ConformanceRequirementTier::Informational => "INFORMATIONAL",
        ConformanceRequirementTier::Agentwire => "AGENTWIRE",
    }
}

/// Tiers in report order.
pub const TIERS: [ConformanceRequirementTier; 5] = [
    ConformanceRequirementTier::Mandatory,
    ConformanceRequirementTier::Capability,
    ConformanceRequirementTier::Advisory,
    ConformanceRequirementTier::Informational,
    ConformanceRequirementTier::Agentwire,
];

/// Transcript files under `dir` and its immediate subdirectories (the imported recordings),
/// sorted.
pub fn corpus_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = super::suite::collect(&[dir.to_path_buf()], None);
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    subdirs.sort();
    for sub in subdirs {
        files.extend(super::suite::collect(&[sub], None));
    }
    files
}

/// The names of the transcripts that name each requirement id (ids no registry entry has
/// included), read from the transcripts' header lines.
pub fn transcripts_by_id(files: &[PathBuf]) -> BTreeMap<String, Vec<String>> {
    let mut by_id: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in files {
        let Some(header) = super::suite::transcript_header(file) else { continue };
        let name = header.get("name").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
        for id in header.get("requirements").and_then(serde_json::Value::as_array).into_iter().flatten().filter_map(serde_json::Value::as_str) {
            by_id.entry(id.to_owned()).or_default().push(name.clone());
        }
    }
    by_id
}

/// `agentwire conformance requirements --format json`: one object per requirement, with the
/// transcripts naming it.
pub fn json_lines(registry: &Registry, by_id: &BTreeMap<String, Vec<String>>) -> String {
    let mut out = String::new();
    for r in registry.iter() {
        let transcripts = by_id.get(r.id.as_str()).cloned().unwrap_or_default();
        let line = serde_json::json!({"requirement": r.id.as_str(), "dialect": r.dialect.to_string(), "tier": tier_name(r.tier),
                                      "capability": r.capability.as_deref(), "source": r.source.as_str(),
                                      "document": r.document.map(|d| d.to_string()), "quote": r.quote.as_deref(), "text": r.text.as_str(),
                                      "transcripts": transcripts, "notTested": r.not_tested.as_deref()});
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// The text form: requirements grouped by tier, each with its transcripts.
pub fn text(registry: &Registry, by_id: &BTreeMap<String, Vec<String>>) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for tier in TIERS {
        let of_tier: Vec<&ConformanceRequirement> = registry.iter().filter(|r| r.tier == tier).collect();
        if of_tier.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{} ({})", tier_name(tier), of_tier.len());
        for r in of_tier {
            let capability = r.capability.as_deref().map(|c| format!(" [needs {c}]")).unwrap_or_default();
            let _ = writeln!(out, "  {:<20} {}{capability}", r.id.as_str(), r.text.as_str());
            let covered = match (by_id.get(r.id.as_str()), r.not_tested.as_deref()) {
                (Some(t), _) => t.join(", "),
                (None, Some(why)) => format!("not tested: {why}"),
                (None, None) => "not tested".to_owned(),
            };
            let _ = writeln!(out, "  {:<20} {} · {covered}", "", r.source.as_str());
            if let Some(quote) = r.quote.as_deref() {
                let _ = writeln!(out, "  {:<20} \"{quote}\"", "");
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_registry_parses_and_tiers_decide_what_is_agentwire_only() {
        let registry = Registry::embedded().unwrap();
        assert_eq!(registry.get("ACP-PROMPT-1").map(|r| r.tier), Some(ConformanceRequirementTier::Mandatory));
        let ids = vec!["ACP-PROMPT-1".to_owned(), "ACP-AW-PROMPT-1".to_owned(), "X-UNKNOWN-1".to_owned()];
        assert_eq!(registry.agentwire_ids(&ids), ["ACP-AW-PROMPT-1"]);
    }

    #[test]
    fn duplicates_and_capabilities_without_a_name_are_refused() {
        let one = r#"{"id": "A-B-1", "dialect": "acp", "tier": "MANDATORY", "source": "s", "document": "json-rpc-2.0", "quote": "q", "text": "t"}"#;
        let e = Registry::parse(&format!(r#"{{"requirements": [{one}, {one}]}}"#), "r.json").unwrap_err();
        assert_eq!(e.to_string(), "r.json: requirement A-B-1 is listed twice");
        let cap = r#"{"requirements": [{"id": "A-B-2", "dialect": "acp", "tier": "CAPABILITY", "source": "s", "text": "t"}]}"#;
        assert!(matches!(Registry::parse(cap, "r.json"), Err(RegistryError::MissingCapability { .. })));
        let bad_tier = r#"{"requirements": [{"id": "A-B-3", "dialect": "acp", "tier": "SOMETIMES", "source": "s", "text": "t"}]}"#;
        assert!(matches!(Registry::parse(bad_tier, "r.json"), Err(RegistryError::Invalid { .. })));
    }

    #[test]
    fn a_mandatory_requirement_must_quote_an_upstream_document() {
        let entry = |extra: &str| format!(r#"{{"requirements": [{{"id": "A-B-4", "dialect": "rpc", "tier": "MANDATORY", "source": "s", "text": "t"{extra}}}]}}"#);
        for unsourced in ["", r#", "document": "pi-rpc""#, r#", "document": "agentwire", "quote": "We: ours""#] {
            let e = Registry::parse(&entry(unsourced), "r.json").unwrap_err();
            assert!(matches!(e, RegistryError::UnsourcedMandatory { .. }), "{unsourced}: {e}");
        }
        Registry::parse(&entry(r#", "document": "pi-rpc", "quote": "If provided, the corresponding response will include the same `id`.""#), "r.json").unwrap();
    }

    #[test]
    fn every_embedded_mandatory_requirement_names_its_document_and_sentence() {
        let registry = Registry::embedded().unwrap();
        let lines = json_lines(registry, &BTreeMap::new());
        for line in lines.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if v["tier"] == "MANDATORY" {
                assert!(v["document"].as_str().is_some_and(|d| d != "agentwire") && v["quote"].as_str().is_some_and(|q| !q.is_empty()), "{line}");
            }
        }
    }
}
