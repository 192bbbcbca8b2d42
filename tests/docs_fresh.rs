//! `docs/protocol.md` is generated from the schema and its examples; this test regenerates it
//! in memory and fails when the committed file differs. Update with
//! `AGENTWIRE_UPDATE_DOCS=1 cargo test --test docs_fresh`.

use std::path::Path;

#[test]
fn protocol_md_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/protocol.md");
    let fresh = agentwire::codegen::docs::protocol_markdown().unwrap();
    if std::env::var_os("AGENTWIRE_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != fresh {
        let diff = similar::TextDiff::from_lines(&committed, &fresh);
        let shown: String = diff.unified_diff().context_radius(2).to_string().lines().take(60).collect::<Vec<_>>().join("\n");
        panic!("docs/protocol.md is stale; run `AGENTWIRE_UPDATE_DOCS=1 cargo test --test docs_fresh`\n{shown}");
    }
}

#[test]
fn every_command_event_and_method_is_documented_with_an_example() {
    let doc = agentwire::codegen::docs::protocol_markdown().unwrap();
    for union in ["RpcCommand", "RpcEvent", "ExtensionUiRequest", "WireRequest", "WireEvent", "WireAgentRequestParams"] {
        let info = agentwire::protocol::UnionInfo::get(union).unwrap();
        for (tag, member) in info.members {
            let anchor = format!("<a id=\"def-{member}\"></a>");
            let start = doc.find(&anchor).unwrap_or_else(|| panic!("{union} {tag} has no section"));
            let section = &doc[start..];
            let end = section[anchor.len()..].find("<a id=").map_or(section.len(), |e| e + anchor.len());
            assert!(section[..end].contains("```json"), "{union} {tag} has no example");
        }
    }
}

#[test]
fn every_type_link_has_a_section() {
    let doc = agentwire::codegen::docs::protocol_markdown().unwrap();
    let mut broken = Vec::new();
    for prefix in ["def-", "acp-def-"] {
        for part in doc.split(&format!("(#{prefix}")).skip(1) {
            let name = &part[..part.find(')').unwrap()];
            if !doc.contains(&format!("<a id=\"{prefix}{name}\"></a>")) {
                broken.push(format!("{prefix}{name}"));
            }
        }
    }
    broken.dedup();
    assert!(broken.is_empty(), "links without a section: {broken:?}");
}

#[test]
fn every_acp_method_agentwire_answers_or_sends_is_documented_with_its_types() {
    let doc = agentwire::codegen::docs::protocol_markdown().unwrap();
    for m in agentwire::protocol::acp::ACP_AGENT_METHODS.iter().chain(agentwire::protocol::acp::ACP_CLIENT_METHODS) {
        let anchor = format!("<a id=\"acp-method-{}\"></a>", m.method.replace('/', "-"));
        let start = doc.find(&anchor).unwrap_or_else(|| panic!("ACP {} has no section", m.method));
        let section = &doc[start..];
        let end = section[anchor.len()..].find("<a id=").map_or(section.len(), |e| e + anchor.len());
        for def in std::iter::once(m.params).chain(m.result) {
            assert!(section[..end].contains(&format!("(#acp-def-{def})")), "ACP {} does not link {def}", m.method);
            assert!(doc.contains(&format!("<a id=\"acp-def-{def}\"></a>")), "ACP {def} has no section");
        }
    }
}
