//! The layers know only the layers below them (docs/architecture.md). One crate cannot make the
//! compiler refuse an upward `use`, so this test reads the sources: the agent core names no
//! dialect, no transport and no process code; providers, tools, MCP servers and sessions name
//! no agent; the JSON-RPC runtime names nothing but the transport.

use std::path::Path;

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push((path.display().to_string(), std::fs::read_to_string(&path).unwrap()));
        }
    }
    out
}

fn violations(layer: &str, forbidden: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(layer);
    let mut found = Vec::new();
    for (file, text) in sources(&root) {
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for module in forbidden {
                if code.contains(&format!("crate::{module}")) || code.contains(&format!("agentwire::{module}")) {
                    found.push(format!("{file}:{}: {} uses crate::{module}", n + 1, line.trim()));
                }
            }
        }
    }
    found
}

#[test]
fn the_core_knows_no_dialect_transport_or_process() {
    let found = violations("agent", &["dialect", "transport", "server", "cli", "conformance", "codegen"]);
    assert!(found.is_empty(), "the agent core must stay dialect-neutral:\n{}", found.join("\n"));
}

#[test]
fn providers_tools_and_sessions_know_no_agent() {
    let mut found = Vec::new();
    for layer in ["providers", "tools", "sessions", "mcp"] {
        found.extend(violations(layer, &["agent", "dialect", "transport", "server", "cli"]));
    }
    assert!(found.is_empty(), "lower layers must not reach up:\n{}", found.join("\n"));
}

#[test]
fn the_jsonrpc_runtime_knows_only_the_transport() {
    let found = violations("jsonrpc", &["dialect", "agent", "protocol", "server", "cli", "conformance", "codegen", "providers", "tools", "sessions"]);
    assert!(found.is_empty(), "the JSON-RPC runtime serves every dialect and knows none:\n{}", found.join("\n"));
}

#[test]
fn dialects_do_not_reach_into_each_other_or_the_process() {
    let mut found = violations("dialect/wire", &["server", "cli", "dialect::rpc", "dialect::acp"]);
    found.extend(violations("dialect/rpc", &["server", "cli", "dialect::wire", "dialect::acp"]));
    found.extend(violations("dialect/acp", &["server", "cli", "dialect::rpc", "dialect::wire"]));
    assert!(found.is_empty(), "a dialect is one module of its own:\n{}", found.join("\n"));
}
