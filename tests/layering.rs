//! The layers know only the layers below them (docs/architecture.md). One crate cannot make the
//! compiler refuse an upward `use`, so this test reads the sources: the core interface names no
//! implementation; the built-in agent names no dialect, no transport and no process code;
//! providers, tools, MCP servers and sessions name no agent; the dialects name the core, never
//! the built-in agent; the JSON-RPC runtime names nothing but the transport and the protocol;
//! the transport names no protocol type; the protocol layer, with the generated code it
//! includes, names nothing above it.

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
        found.extend(violations_in(&file, &text, forbidden));
    }
    found
}

fn violations_in(file: &str, text: &str, forbidden: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        for module in forbidden {
            if names(code, &format!("crate::{module}")) || names(code, &format!("agentwire::{module}")) {
                found.push(format!("{file}:{}: {} uses crate::{module}", n + 1, line.trim()));
            }
        }
    }
    found
}

/// The generated files (in `OUT_DIR`) that the sources under `src/<layer>` include, with their
/// text: `include!(concat!(env!("OUT_DIR"), "/name.rs"))`.
fn generated_sources(layer: &str) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(layer);
    let marker = "env!(\"OUT_DIR\"), \"/";
    let mut out = Vec::new();
    for (_, text) in sources(&root) {
        for (at, _) in text.match_indices(marker) {
            let rest = &text[at + marker.len()..];
            let name = &rest[..rest.find('"').unwrap_or(0)];
            if name.ends_with(".rs") {
                let path = Path::new(env!("OUT_DIR")).join(name);
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                out.push((path.display().to_string(), text));
            }
        }
    }
    out
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
fn the_jsonrpc_runtime_knows_only_the_transport_and_the_protocol() {
    // The protocol's types (the envelope, and the generated traits its dispatch binds) are
    // below it; no dialect's code is.
    let forbidden = ["dialect", "agent", "core", "server", "client", "bridge", "cli", "conformance", "codegen", "providers", "tools", "sessions", "mcp", "recording"];
    let mut found = violations("jsonrpc", &forbidden);
    for (file, text) in generated_sources("jsonrpc") {
        found.extend(violations_in(&file, &text, &forbidden));
    }
    assert!(found.is_empty(), "the JSON-RPC runtime serves every dialect and knows none:\n{}", found.join("\n"));
}

/// Everything above the protocol layer.
const ABOVE_PROTOCOL: [&str; 16] =
    ["transport", "jsonrpc", "dialect", "core", "agent", "server", "client", "bridge", "cli", "conformance", "codegen", "providers", "tools", "sessions", "mcp", "recording"];

#[test]
fn the_protocol_names_nothing_above_it() {
    // The generated types are the floor every layer stands on: neither the hand-written
    // protocol code nor the generated code it includes names a runtime (the dispatch that does
    // is included from `jsonrpc::dispatch`).
    let mut found = violations("protocol", &ABOVE_PROTOCOL);
    let generated = generated_sources("protocol");
    assert!(generated.iter().any(|(file, _)| file.ends_with("/acp.rs")), "the protocol layer includes the generated ACP module");
    for (file, text) in &generated {
        found.extend(violations_in(file, text, &ABOVE_PROTOCOL));
    }
    assert!(found.is_empty(), "the protocol layer must not reach up:\n{}", found.join("\n"));
}

#[test]
fn the_transport_names_no_protocol_type() {
    // Bytes, lines and frames: the framing types it needs (`rpc_chunk`) are its own.
    let found = violations("transport", &ABOVE_PROTOCOL[1..].iter().copied().chain(["protocol"]).collect::<Vec<_>>());
    assert!(found.is_empty(), "the transport must stay below the protocol's types:\n{}", found.join("\n"));
}

#[test]
fn dialects_do_not_reach_into_each_other_or_the_process() {
    // A dialect serves the core interface and drives its own dialect's agents: the built-in
    // agent and what it is made of are not its business, nor is another dialect's code —
    // except ACP v2's, which builds on v1's projection and router. Every folder of
    // `src/dialect` is a dialect, so a new one is covered as it is added.
    let built_in = ["agent", "providers", "tools", "sessions", "mcp"];
    let builds_on = [("acp_v2", "acp")];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/dialect");
    let mut dialects: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    dialects.sort();
    assert!(dialects.len() >= 4, "src/dialect holds the dialects: {dialects:?}");
    let mut found = Vec::new();
    for dialect in &dialects {
        let others: Vec<String> = dialects.iter().filter(|d| *d != dialect && !builds_on.contains(&(dialect.as_str(), d.as_str()))).map(|d| format!("dialect::{d}")).collect();
        let forbidden: Vec<&str> = ["server", "cli"].into_iter().chain(built_in).chain(others.iter().map(String::as_str)).collect();
        found.extend(violations(&format!("dialect/{dialect}"), &forbidden));
    }
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
