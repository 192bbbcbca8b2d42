//! `agentwire schema bundle|validate` through the real binary, and how the agent's binary runs
//! the tools' binary for them.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn agentwire(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or_default().as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn refs_of(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, c)| {
            if k == "$ref" {
                out.push(c.as_str().unwrap().to_owned());
            } else {
                refs_of(c, out);
            }
        }),
        Value::Array(a) => a.iter().for_each(|c| refs_of(c, out)),
        _ => {}
    }
}

#[test]
fn bundle_is_self_contained_and_dialects_are_subsets() {
    let all: Value = serde_json::from_slice(&agentwire(&["schema", "bundle"], None).stdout).unwrap();
    let rpc: Value = serde_json::from_slice(&agentwire(&["schema", "bundle", "--dialect", "rpc"], None).stdout).unwrap();
    let wire: Value = serde_json::from_slice(&agentwire(&["schema", "bundle", "--dialect", "wire"], None).stdout).unwrap();
    for bundle in [&all, &rpc, &wire] {
        let defs = bundle["$defs"].as_object().unwrap();
        let mut refs = Vec::new();
        refs_of(bundle, &mut refs);
        for r in refs {
            let name = r.strip_prefix("#/$defs/").unwrap_or_else(|| panic!("non-local ref {r}"));
            assert!(defs.contains_key(name), "dangling {r}");
        }
    }
    let names = |b: &Value| b["$defs"].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert!(names(&rpc).contains(&"SessionState".to_owned()) && !names(&rpc).iter().any(|n| n.starts_with("Wire")));
    assert!(names(&wire).contains(&"WireInitializeResult".to_owned()) && !names(&wire).contains(&"RpcCommand".to_owned()));
    let formats = agentwire::codegen::bundle::SchemaSet::from_texts(agentwire::protocol::embedded::schema_files().iter().copied())
        .unwrap()
        .bundle_reachable(Some(agentwire::cli::schema::FILE_FORMAT_ROOTS))
        .unwrap();
    let covered: std::collections::BTreeSet<String> = names(&rpc).into_iter().chain(names(&wire)).chain(names(&formats)).collect();
    assert_eq!(covered, names(&all).into_iter().collect(), "every def belongs to a dialect or a file format");
    assert!(!names(&rpc).iter().any(|n| names(&wire).contains(n)), "the dialects share no defs");
}

#[test]
fn validate_reports_file_line_path_and_reason_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("frames.jsonl");
    std::fs::write(
        &path,
        concat!(
            "{\"id\":\"1\",\"type\":\"get_state\"}\n",
            "{\"id\":\"2\",\"type\":\"set_model\",\"provider\":\"openai\"}\n",
            "\n",
            "{\"type\":\"set_thinking_level\",\"level\":\"hgh\"}\r\n",
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"prompt\",\"params\":{}}\n",
            "{not json\n",
        ),
    )
    .unwrap();
    let out = agentwire(&["schema", "validate", path.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let p = path.display();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(lines[0], format!(r#"{p}:2: set_model: /modelId: "modelId" is a required property"#));
    assert!(lines[1].starts_with(&format!(r#"{p}:4: set_thinking_level: /level: "hgh" is not one of"#)), "{}", lines[1]);
    assert_eq!(lines[2], format!(r#"{p}:5: prompt: /params/user_input: "user_input" is a required property"#));
    assert!(lines[3].starts_with(&format!("{p}:6: not valid JSON")), "{}", lines[3]);
}

#[test]
fn validate_reads_stdin_and_transcript_lines_and_exits_0_when_valid() {
    let transcript = concat!(
        "{\"dir\":\"meta\",\"t_ms\":0,\"event\":\"spawn\"}\n",
        "{\"dir\":\"in\",\"t_ms\":1,\"frame\":{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"set_plan_mode\",\"params\":{\"enabled\":true}}}\n",
        "{\"dir\":\"out\",\"t_ms\":2,\"frame\":{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":{\"status\":\"ok\",\"plan_mode\":true}}}\n",
        "{\"dir\":\"out\",\"t_ms\":3,\"eof\":true,\"exit_code\":0}\n",
    );
    let out = agentwire(&["schema", "validate", "-"], Some(transcript));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    // The response is checked against the method it answers (tracked by id).
    let bad = transcript.replace("\"plan_mode\":true}", "\"plan_mode\":\"yes\"}");
    let out = agentwire(&["schema", "validate", "-"], Some(&bad));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), r#"-:3: set_plan_mode: /result/plan_mode: "yes" is not of type "boolean""#);
}

#[test]
fn a_missing_file_is_a_usage_error() {
    let out = agentwire(&["schema", "validate", "/nonexistent/frames.jsonl"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/frames.jsonl"));
}

/// The tools' arguments reach the tools' binary as given (a global flag before the subcommand,
/// `--` and what follows), and without the tools' binary beside it the agent's binary says where
/// it looked and how to get it, instead of a usage error.
#[test]
fn the_agent_binary_runs_the_tools_binary_beside_it() {
    let out = agentwire(&["--log-level", "error", "schema", "validate", "--dialect", "rpc", "-"], Some("{\"type\":\"get_state\"}\n"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let lonely = tempfile::tempdir().unwrap();
    let copy = lonely.path().join("agentwire");
    std::fs::copy(env!("CARGO_BIN_EXE_agentwire"), &copy).unwrap();
    let out = Command::new(&copy).args(["schema", "bundle"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{} not found", lonely.path().join("agentwire-tools").display())), "{stderr}");
    assert!(stderr.contains("cargo build"), "{stderr}");
}
