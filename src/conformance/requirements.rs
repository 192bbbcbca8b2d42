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

/// Why a quote cannot carry a `MANDATORY` requirement (`tests/conformance.rs` holds the
/// registry to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NormativeProblem {
    /// It only permits or recommends (MAY, SHOULD, RECOMMENDED, OPTIONAL): an implementation
    /// that does otherwise still conforms.
    #[error("only permits or recommends (MAY, SHOULD, OPTIONAL): that is ADVISORY at most")]
    PermissiveOnly,
    /// The document speaks RFC 2119 (JSON-RPC 2.0, ACP) and the quote has none of its words of
    /// obligation.
    #[error("has no MUST, REQUIRED or SHALL, which its document uses for what it requires")]
    NoObligation,
}

/// Whether `word` occurs in `text` as a whole word (an uppercase RFC 2119 keyword).
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// Whether `quote` can carry a MANDATORY requirement citing `document`. The documents written
/// in RFC 2119 terms (JSON-RPC 2.0, the ACP specification) say what they require with MUST,
/// REQUIRED or SHALL; pi's, oh-my-pi's and kimi's documents and the ACP schema's descriptions
/// state the contract as plain facts ("the command returns an error"), which binds as much, but
/// a quote of any document that only says MAY or SHOULD never does.
pub fn normative_problem(document: ConformanceRequirementDocument, quote: &str) -> Option<NormativeProblem> {
    let obliges = ["MUST", "REQUIRED", "SHALL"].iter().any(|w| has_word(quote, w));
    let permits = ["MAY", "SHOULD", "RECOMMENDED", "OPTIONAL"].iter().any(|w| has_word(quote, w));
    let rfc2119 = match document {
        ConformanceRequirementDocument::JsonRpc20 | ConformanceRequirementDocument::AcpSpec => true,
        ConformanceRequirementDocument::PiRpc
        | ConformanceRequirementDocument::OmpRpcReference
        | ConformanceRequirementDocument::OmpRpcTypes
        | ConformanceRequirementDocument::KimiWireTransport
        | ConformanceRequirementDocument::AcpSchema
        | ConformanceRequirementDocument::ProtocolNotes
        | ConformanceRequirementDocument::Agentwire => false,
    };
    match (obliges, permits, rfc2119) {
        (true, _, _) => None,
        (false, true, _) => Some(NormativeProblem::PermissiveOnly),
        (false, false, true) => Some(NormativeProblem::NoObligation),
        (false, false, false) => None,
    }
}

/// Whether `document` is another implementation's or a specification (not our notes or docs).
fn is_upstream(document: ConformanceRequirementDocument) -> bool {
    match document {
        ConformanceRequirementDocument::PiRpc
        | ConformanceRequirementDocument::OmpRpcReference
        | ConformanceRequirementDocument::OmpRpcTypes
        | ConformanceRequirementDocument::KimiWireTransport
        | ConformanceRequirementDocument::JsonRpc20
        | ConformanceRequirementDocument::AcpSpec
        | ConformanceRequirementDocument::AcpSchema => true,
        ConformanceRequirementDocument::ProtocolNotes | ConformanceRequirementDocument::Agentwire => false,
    }
}

/// The passages of a quote: the parts between ` … `, each without a trailing note in
/// parentheses (a translation, or what the passage is), whitespace collapsed. Each is found
/// verbatim in the cited document.
pub fn quote_passages(quote: &str) -> Vec<String> {
    quote.split('…').map(collapse_whitespace).filter(|p| !p.is_empty()).collect()
}

/// `text` with each run of whitespace as one space, trimmed; comment leaders (` * ` of a doc
/// comment) at line starts dropped, so a quote of a TypeScript doc comment reads as prose.
pub fn collapse_whitespace(text: &str) -> String {
    let lines = text.lines().map(|l| {
        let l = l.trim_start();
        l.strip_prefix("* ").or_else(|| l.strip_prefix("/** ")).or_else(|| (l == "*").then_some("")).unwrap_or(l)
    });
    lines.flat_map(str::split_whitespace).collect::<Vec<_>>().join(" ")
}

/// Where the note in parentheses that ends `passage` opens (the parenthesis matching the last
/// one), if it ends with one and something precedes it.
fn trailing_note_start(passage: &str) -> Option<usize> {
    if !passage.ends_with(')') {
        return None;
    }
    let mut depth = 0usize;
    for (at, c) in passage.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return (at > 0).then_some(at);
                }
            }
            _ => {}
        }
    }
    None
}

/// A passage of a quote that its document does not contain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not in the document: \"{passage}\"")]
pub struct QuoteNotFound {
    /// The passage, whitespace collapsed.
    pub passage: String,
}

/// Whether every passage of `quote` occurs in `source` (both whitespace-collapsed with
/// [`collapse_whitespace`]); the error names the first that does not. A passage may end with a
/// note in parentheses that is not part of the document.
pub fn find_quote(quote: &str, source: &str) -> Result<(), QuoteNotFound> {
    let source = collapse_whitespace(source);
    for passage in quote_passages(quote) {
        let without_note = trailing_note_start(&passage).map(|at| passage[..at].trim_end());
        if !source.contains(&passage) && !without_note.is_some_and(|p| source.contains(p)) {
            return Err(QuoteNotFound { passage });
        }
    }
    Ok(())
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
        let parsed: ConformanceRequirements = crate::protocol::decode::from_value(value).map_err(|e| invalid(e.to_string()))?;
        let mut index = BTreeMap::new();
        for (i, r) in parsed.requirements.iter().enumerate() {
            if index.insert(r.id.to_string(), i).is_some() {
                return Err(RegistryError::Duplicate { origin: origin.to_owned(), id: r.id.to_string() });
            }
            if r.tier == ConformanceRequirementTier::Capability && r.capability.is_none() {
                return Err(RegistryError::MissingCapability { origin: origin.to_owned(), id: r.id.to_string() });
            }
            if r.tier == ConformanceRequirementTier::Mandatory {
                if !r.document.is_some_and(is_upstream) {
                    return Err(RegistryError::UnsourcedMandatory { origin: origin.to_owned(), id: r.id.to_string() });
                }
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
                                      "document": r.document.map(|d| d.to_string()), "quote": r.quote.as_str(), "text": r.text.as_str(),
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
            let _ = writeln!(out, "  {:<20} \"{}\"", "", r.quote.as_str());
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
        let one = r#"{"id": "A-B-1", "dialect": "acp", "tier": "MANDATORY", "source": "s", "document": "pi-rpc", "quote": "q", "text": "t"}"#;
        let e = Registry::parse(&format!(r#"{{"requirements": [{one}, {one}]}}"#), "r.json").unwrap_err();
        assert_eq!(e.to_string(), "r.json: requirement A-B-1 is listed twice");
        let cap = r#"{"requirements": [{"id": "A-B-2", "dialect": "acp", "tier": "CAPABILITY", "source": "s", "quote": "q", "text": "t"}]}"#;
        assert!(matches!(Registry::parse(cap, "r.json"), Err(RegistryError::MissingCapability { .. })));
        let bad_tier = r#"{"requirements": [{"id": "A-B-3", "dialect": "acp", "tier": "SOMETIMES", "source": "s", "quote": "q", "text": "t"}]}"#;
        assert!(matches!(Registry::parse(bad_tier, "r.json"), Err(RegistryError::Invalid { .. })));
        let unquoted = r#"{"requirements": [{"id": "A-B-5", "dialect": "acp", "tier": "AGENTWIRE", "document": "agentwire", "source": "s", "text": "t"}]}"#;
        assert!(matches!(Registry::parse(unquoted, "r.json"), Err(RegistryError::Invalid { .. })), "every requirement quotes its source");
    }

    #[test]
    fn a_mandatory_requirement_must_quote_an_upstream_document() {
        let entry = |extra: &str| format!(r#"{{"requirements": [{{"id": "A-B-4", "dialect": "rpc", "tier": "MANDATORY", "source": "s", "text": "t"{extra}}}]}}"#);
        for unsourced in [r#", "quote": "q""#, r#", "document": "agentwire", "quote": "We: ours""#, r#", "document": "protocol-notes", "quote": "recorded""#] {
            let e = Registry::parse(&entry(unsourced), "r.json").unwrap_err();
            assert!(matches!(e, RegistryError::UnsourcedMandatory { .. }), "{unsourced}: {e}");
        }
        Registry::parse(&entry(r#", "document": "pi-rpc", "quote": "If provided, the corresponding response will include the same `id`.""#), "r.json").unwrap();
    }

    #[test]
    fn a_mandatory_quote_never_rests_on_may_or_should() {
        let refused = |document: ConformanceRequirementDocument, quote: &str| normative_problem(document, quote);
        use ConformanceRequirementDocument::{AcpSchema, AcpSpec, JsonRpc20, PiRpc};
        assert_eq!(refused(AcpSpec, "Before proceeding with execution, the Agent MAY request permission"), Some(NormativeProblem::PermissiveOnly));
        assert_eq!(refused(AcpSchema, "Agents SHOULD include a `stopReason`"), Some(NormativeProblem::PermissiveOnly));
        assert_eq!(refused(PiRpc, "Clients SHOULD correlate by ID"), Some(NormativeProblem::PermissiveOnly));
        assert_eq!(refused(JsonRpc20, "-32601 | Method not found"), Some(NormativeProblem::NoObligation));
        assert_eq!(refused(AcpSpec, "The Agent MUST respond with the chosen protocol version"), None);
        assert_eq!(refused(AcpSpec, "It MUST be the same; the value SHOULD normally not be Null"), None);
        assert_eq!(refused(PiRpc, "If the agent is streaming and no `streamingBehavior` is specified, the command returns an error."), None);
        assert_eq!(refused(AcpSpec, "MUSTARD is not a keyword"), Some(NormativeProblem::NoObligation));
    }

    #[test]
    fn a_quote_is_found_passage_by_passage_whitespace_and_notes_aside() {
        let source = "## abort\n\nAbort the current operation and\nwait for the session to become idle before responding.\n\n/**\n * Terminal frame emitted exactly once per accepted `prompt`,\n * after all work.\n */";
        assert_eq!(find_quote("Abort the current operation and wait for the session", source), Ok(()));
        assert_eq!(find_quote("## abort … Terminal frame emitted exactly once per accepted `prompt`, after all work. (omp's doc comment)", source), Ok(()));
        assert_eq!(find_quote("Abort the current operation … and answer before (it says after)", source).unwrap_err().passage, "and answer before (it says after)");
        assert!(find_quote("wait for the session to become idle after responding", source).is_err());
    }

    #[test]
    fn every_embedded_mandatory_requirement_names_its_document_and_sentence() {
        let registry = Registry::embedded().unwrap();
        let lines = json_lines(registry, &BTreeMap::new());
        for line in lines.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(v["quote"].as_str().is_some_and(|q| !q.is_empty()), "{line}");
            if v["tier"] == "MANDATORY" {
                assert!(v["document"].as_str().is_some_and(|d| d != "agentwire" && d != "protocol-notes"), "{line}");
            }
        }
    }
}
