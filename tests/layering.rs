//! The layers know only the layers below them (docs/architecture.md). One crate cannot make the
//! compiler refuse an upward `use`, so this test reads the sources: the core interface names no
//! implementation; the built-in agent names no dialect, no transport and no process code;
//! providers, tools, MCP servers and sessions name no agent; the dialects name the core, never
//! the built-in agent; the JSON-RPC runtime names nothing but the transport.

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

/// `code` names `path` itself, not a longer name starting with it (`crate::cli` is not
/// `crate::client`).
fn names(code: &str, path: &str) -> bool {
    code.match_indices(path).any(|(at, _)| !code[at + path.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_'))
}

fn violations(layer: &str, forbidden: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(layer);
    let mut found = Vec::new();
    for (file, text) in sources(&root) {
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for module in forbidden {
                if names(code, &format!("crate::{module}")) || names(code, &format!("agentwire::{module}")) {
                    found.push(format!("{file}:{}: {} uses crate::{module}", n + 1, line.trim()));
                }
            }
        }
    }
    found
}

#[test]
fn the_core_interface_names_no_implementation() {
    // A custom agent compiles the core, the transport and the fronts only (no provider, tool,
    // MCP or session crate): the interface names none of them.
    let found = violations("core", &["agent", "dialect", "transport", "jsonrpc", "server", "client", "bridge", "cli", "conformance", "codegen", "providers", "tools", "sessions", "mcp"]);
    assert!(found.is_empty(), "the core interface names an implementation:\n{}", found.join("\n"));
}

#[test]
fn the_built_in_agent_knows_no_dialect_transport_or_process() {
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
    // A dialect serves the core interface and drives its own dialect's agents: the built-in
    // agent and what it is made of are not its business.
    let built_in = ["agent", "providers", "tools", "sessions", "mcp"];
    let mut found = violations("dialect/wire", &[&["server", "cli", "dialect::rpc", "dialect::acp"][..], &built_in].concat());
    found.extend(violations("dialect/rpc", &[&["server", "cli", "dialect::wire", "dialect::acp"][..], &built_in].concat()));
    found.extend(violations("dialect/acp", &[&["server", "cli", "dialect::rpc", "dialect::wire"][..], &built_in].concat()));
    found.extend(violations("dialect/acp_v2", &[&["server", "cli", "dialect::rpc", "dialect::wire"][..], &built_in].concat()));
    assert!(found.is_empty(), "a dialect is one module of its own:\n{}", found.join("\n"));
}

#[test]
fn the_client_knows_no_agent_dialect_or_process_front_end() {
    // The host side stands on the protocol and the transport only: a Rust host (or the bridge)
    // links no built-in agent.
    let found = violations("client", &["agent", "dialect", "server", "cli", "providers", "tools", "sessions", "conformance"]);
    assert!(found.is_empty(), "the client must not reach into the agent side:\n{}", found.join("\n"));
}

#[test]
fn the_bridge_drives_an_agent_through_the_client_only() {
    // The bridge composes a front (server, dialect) with a remote agent (dialect, over the
    // client): it never links the built-in agent's providers, tools, MCP servers or sessions.
    // Nor the harness: it builds with the server and client features alone.
    let found = violations("bridge", &["cli", "providers", "tools", "sessions", "mcp", "agent::Agent,", "agent::run", "conformance"]);
    assert!(found.is_empty(), "the bridge must not reach into the built-in agent or the harness:\n{}", found.join("\n"));
}

#[test]
fn the_recorder_stands_on_the_protocol_and_the_client() {
    // The bridge's `--record` and the harness's `conformance record` share it: it cannot lean
    // on the harness, nor on anything the bridge does not link.
    let found = violations("recording", &["conformance", "agent", "dialect", "server", "bridge", "cli", "providers", "tools", "sessions", "mcp"]);
    assert!(found.is_empty(), "the recorder must stay below the bridge and the harness:\n{}", found.join("\n"));
}
