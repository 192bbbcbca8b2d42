//! `agentwire conformance matrix` runs one corpus against several adapters and writes a table
//! of requirements × agents, in Markdown and JSON.

use std::path::Path;

#[test]
fn the_matrix_has_a_column_per_agent_and_a_row_per_requirement() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir_all(corpus.join("baselines")).unwrap();
    for name in ["acp-handshake", "acp-initialize", "acp-error-session"] {
        std::fs::copy(root.join(format!("tests/conformance/{name}.jsonl")), corpus.join(format!("{name}.jsonl"))).unwrap();
    }
    // agentwire itself, and agentwire posing as another agent: AGENTWIRE-tier transcripts are
    // skipped for it, and its baseline says one portable transcript fails.
    let mut other: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(root.join("tests/conformance/adapters/agentwire-acp.json")).unwrap()).unwrap();
    other["name"] = "other".into();
    other["agentwire"] = false.into();
    other["command"].as_array_mut().unwrap().extend(["--max-line-bytes".into(), "1".into()]);
    let other_path = dir.path().join("other.json");
    std::fs::write(&other_path, other.to_string()).unwrap();
    std::fs::write(corpus.join("baselines/other.txt"), "acp-handshake  # ACP-INIT-1: every line is too long for it\nacp-error-session  # ACP-ERR-5: every line is too long for it\n").unwrap();
    let out = dir.path().join("matrix.md");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .arg("conformance")
        .arg("matrix")
        .arg("--adapter")
        .arg(root.join("tests/conformance/adapters/agentwire-acp.json"))
        .arg("--adapter")
        .arg(&other_path)
        .arg("--out")
        .arg(&out)
        .arg(&corpus)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let md = std::fs::read_to_string(&out).unwrap();
    assert!(md.contains("| requirement | tier | agentwire-acp | other |"), "{md}");
    assert!(md.contains("| ACP-INIT-1 | MANDATORY | pass | **FAIL** |"), "{md}");
    assert!(md.contains("| ACP-AW-INIT-1 | AGENTWIRE | pass | skip |"), "{md}");
    assert!(md.contains("| agentwire-acp | agentwire "), "the version command's answer: {md}");
    assert!(md.contains("- `acp-handshake`: ACP-INIT-1: every line is too long for it"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("matrix.json")).unwrap()).unwrap();
    let row = json["requirements"].as_array().unwrap().iter().find(|r| r["requirement"] == "ACP-ERR-5").unwrap();
    assert_eq!((row["tier"].as_str(), &row["status"]), (Some("ADVISORY"), &serde_json::json!({"agentwire-acp": "PASS", "other": "FAIL"})));
    assert_eq!(json["agents"][1]["asBaselineExpects"], true);
}

/// Over a corpus root (a directory holding the registry), a MANDATORY requirement of a dialect
/// the agent speaks that no transcript exercises fails the agent's column, and so the run.
#[test]
fn a_mandatory_requirement_no_transcript_exercises_fails_the_matrix() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    std::fs::copy(root.join("tests/conformance/requirements.json"), corpus.join("requirements.json")).unwrap();
    std::fs::copy(root.join("tests/conformance/acp-handshake.jsonl"), corpus.join("acp-handshake.jsonl")).unwrap();
    let out = dir.path().join("matrix.md");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["conformance", "matrix", "--adapter"])
        .arg(root.join("tests/conformance/adapters/agentwire-acp.json"))
        .arg("--out")
        .arg(&out)
        .arg(&corpus)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("FAIL ACP-PROMPT-1: MANDATORY, but no transcript of the run exercised it"), "{stderr}");
    let md = std::fs::read_to_string(&out).unwrap();
    assert!(md.contains("| ACP-PROMPT-1 | MANDATORY | **unexercised** |"), "{md}");
    assert!(md.contains("| ACP-INIT-1 | MANDATORY | pass |"), "{md}");
}

/// A v1-only ACP agent (a few lines of Python) that sends an extension notification before it
/// answers `initialize`: the notification validates (ACP reserves `_`-prefixed methods for
/// extensions) and its adapter's `ignore` drops it, so the v1 handshake passes; asked for
/// version 2 it answers 1, so the v2 transcript is skipped and the `acp-v2` MANDATORY
/// requirements are not charged to it, while v1's still are.
#[test]
fn a_v1_agent_with_extension_notifications_passes_v1_and_is_not_judged_in_v2() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    for name in ["acp-handshake", "acp2-initialize"] {
        std::fs::copy(root.join(format!("tests/conformance/{name}.jsonl")), corpus.join(format!("{name}.jsonl"))).unwrap();
    }
    let agent = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "method": "_auth/status_update", "params": {"authStatus": {"kind": "none"}}}), flush=True)
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}}), flush=True)
    elif m.get("method") == "session/new":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "s1"}}), flush=True)
"#;
    let adapter = serde_json::json!({"name": "v1only", "command": ["python3", "-c", agent], "dialects": ["acp"],
                                     "ignore": [{"jsonrpc": "2.0", "method": "_auth/status_update"}]});
    let adapter_path = dir.path().join("v1only.json");
    std::fs::write(&adapter_path, adapter.to_string()).unwrap();
    let out = dir.path().join("matrix.md");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["conformance", "matrix", "--adapter"])
        .arg(&adapter_path)
        .arg("--out")
        .arg(&out)
        .arg(&corpus)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let md = std::fs::read_to_string(&out).unwrap();
    assert!(md.contains("| ACP-INIT-1 | MANDATORY | pass |"), "{md}");
    assert!(md.contains("| ACP2-INIT-1 | MANDATORY | skip |"), "{md}");
    assert!(md.contains("ACP v1: 1 / 1"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("matrix.json")).unwrap()).unwrap();
    assert_eq!(json["agents"][0]["applicable"], 1, "the v2 transcript does not apply: {json}");
}
