//! The harness judged on agents whose verdict is known: a canned ACP agent that answers with the
//! right frames and does nothing must fail a MANDATORY requirement (the transcripts' effects catch
//! it); a wire server copying kimi-cli's envelope quirks must fail one; a JSON-RPC-exact wire
//! server must fail none. And the ways a run could pass vacuously (a transcript that checks
//! nothing of what its header names, a corpus directory with one more path, a baseline entry for a
//! skipped transcript) fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> String {
    root().join("tests/fixtures/conformance").join(name).display().to_string()
}

/// An adapter file for a fixture script, in `dir`.
fn adapter(dir: &Path, name: &str, dialect: &str, command: &[&str]) -> PathBuf {
    let path = dir.join(format!("{name}.json"));
    let adapter = json!({"name": name, "command": command, "dialects": [dialect]});
    std::fs::write(&path, adapter.to_string()).unwrap();
    path
}

fn agentwire(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentwire")).current_dir(root()).args(args).output().unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `conformance run --format json` over the corpus: the report's lines.
fn run_corpus(adapter: &Path, filter: Option<&str>) -> (Output, Vec<Value>) {
    let adapter = adapter.display().to_string();
    let mut args = vec!["conformance", "run", "--format", "json", "--frame-timeout", "5", "--adapter", adapter.as_str()];
    if let Some(f) = filter {
        args.extend(["--filter", f]);
    }
    args.push("tests/conformance/");
    let out = agentwire(&args);
    let lines = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (out, lines)
}

/// The MANDATORY requirements the report counts as failed (FAIL, NOT_TESTABLE, UNEXERCISED).
fn failed_mandatory(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["tier"] == "MANDATORY" && ["FAIL", "NOT_TESTABLE", "UNEXERCISED"].contains(&l["status"].as_str().unwrap_or_default()))
        .map(|l| l["requirement"].as_str().unwrap().to_owned())
        .collect()
}

fn transcript<'a>(lines: &'a [Value], name: &str) -> &'a Value {
    lines.iter().find(|l| l["name"] == name).unwrap_or_else(|| panic!("no {name} in {lines:#?}"))
}

#[test]
fn a_canned_acp_agent_that_does_nothing_fails_on_the_effects() {
    let dir = tempfile::tempdir().unwrap();
    let canned = adapter(dir.path(), "canned-acp", "acp", &["python3", &fixture("canned_acp_agent.py")]);
    let (out, lines) = run_corpus(&canned, None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // Its frames pass what frames can show; the model it never asked and the file it never wrote
    // do not.
    let prompt = transcript(&lines, "acp-prompt-text");
    assert_eq!(prompt["verdict"], "failed", "{prompt}");
    assert!(prompt["failure"].as_str().unwrap().contains("the model received 0 request(s), none holding \"say hello\""), "{prompt}");
    let allow = transcript(&lines, "acp-tool-allow");
    assert!(allow["failure"].as_str().unwrap().contains("yes.txt: expected content \"allowed\\n\", found no such file"), "{allow}");
    assert_eq!(allow["charged"], json!(["ACP-TOOL-1"]));
    let failed = failed_mandatory(&lines);
    assert!(failed.contains(&"ACP-PROMPT-1".to_owned()), "{failed:?}");
    // A denied write leaves no file, which it satisfies without trying.
    assert_eq!(transcript(&lines, "acp-tool-reject")["verdict"], "passed");
}

#[test]
fn a_wire_server_with_kimis_quirks_fails_mandatory_requirements_and_an_exact_one_none() {
    let dir = tempfile::tempdir().unwrap();
    let server = fixture("wire_server.py");
    let kimi = adapter(dir.path(), "kimi-quirks", "wire", &["python3", &server, "--kimi-quirks"]);
    let (out, lines) = run_corpus(&kimi, None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let failed = failed_mandatory(&lines);
    // An integer id refused with id null; a request whose content part it cannot read never answered.
    assert!(failed.contains(&"WIRE-ID-1".to_owned()) && failed.contains(&"WIRE-ERR-3".to_owned()), "{failed:?}\n{}", text(&out));
    // `data: null` on every error is allowed, as is its absence: not what fails it.
    for passes in ["WIRE-ERR-1", "WIRE-ERR-2", "WIRE-NOTIFY-1"] {
        assert!(!failed.contains(&passes.to_owned()), "{passes}: {failed:?}");
    }

    let exact = adapter(dir.path(), "jsonrpc-exact", "wire", &["python3", &server]);
    let (out, lines) = run_corpus(&exact, None);
    assert_eq!(failed_mandatory(&lines), Vec::<String>::new(), "{}", text(&out));
    assert!(out.status.success(), "{}", text(&out));
    let passed: Vec<&str> = lines.iter().filter(|l| l["status"] == "PASS").filter_map(|l| l["requirement"].as_str()).collect();
    for id in ["WIRE-ERR-1", "WIRE-ERR-2", "WIRE-ERR-3", "WIRE-NOTIFY-1", "WIRE-ID-1", "WIRE-END-1"] {
        assert!(passed.contains(&id), "{id} is exercised and passes: {passed:?}");
    }
}

/// Writes a transcript of `lines` (JSON values, one a line) into `dir`.
fn write_transcript(dir: &Path, name: &str, lines: &[Value]) -> PathBuf {
    let path = dir.join(format!("{name}.jsonl"));
    std::fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    path
}

fn header(name: &str, requirements: &[&str]) -> Value {
    json!({"kind": "header", "name": name, "dialect": "acp", "description": "d", "requirements": requirements})
}

fn initialize() -> Value {
    json!({"kind": "in", "frame": {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}})
}

fn initialized(extra: Value) -> Value {
    let mut line = json!({"kind": "out", "frame": {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}, "subset": true});
    line.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    line
}

#[test]
fn a_transcript_that_checks_nothing_of_what_its_header_names_fails() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let vacuous = [
        ("header-only", vec![header("header-only", &["ACP-TOOL-1"])]),
        // A notification, which is answered by nothing: an answer after the last line would
        // fail the transcript for that instead.
        ("in-only", vec![header("in-only", &["ACP-TOOL-1"]), json!({"kind": "in", "frame": {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "none"}}})]),
        ("optional-only", vec![header("optional-only", &["ACP-TOOL-1"]), initialize(), initialized(json!({"optional": true}))]),
        ("setup-only", vec![header("setup-only", &["ACP-TOOL-1"]), initialize(), initialized(json!({"setup": true}))]),
        ("charged-elsewhere", vec![header("charged-elsewhere", &["ACP-TOOL-1", "ACP-INIT-1"]), initialize(), initialized(json!({"requirements": ["ACP-INIT-1"]}))]),
    ];
    for (name, lines) in vacuous {
        let path = write_transcript(d, name, &lines);
        let out = agentwire(&["conformance", "run", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out));
        assert!(text(&out).contains("the header names ACP-TOOL-1 but no checking line charged to it held"), "{name}: {}", text(&out));
    }
    // A line charged to a requirement its header does not name is refused as written.
    let path = write_transcript(d, "not-named", &[header("not-named", &["ACP-TOOL-1"]), initialize(), initialized(json!({"requirements": ["ACP-INIT-1"]}))]);
    let out = agentwire(&["conformance", "run", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("ACP-INIT-1 is not among the header's requirements"), "{}", text(&out));
    // An effect line is checked as written: a file outside the work directory, or a check with
    // nothing to look for, is refused before the agent starts.
    for (effect, why) in [
        (json!({"kind": "effect", "effect": "file", "path": "../x", "absent": true}), "must be a relative path inside the work directory"),
        (json!({"kind": "effect", "effect": "file", "path": "x"}), "needs `content` or `absent: true`"),
        (json!({"kind": "effect", "effect": "model_received"}), "needs a non-empty `contains`"),
    ] {
        let path = write_transcript(d, "malformed-effect", &[header("malformed-effect", &["ACP-INIT-1"]), initialize(), initialized(json!({})), effect]);
        let out = agentwire(&["conformance", "run", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(text(&out).contains(why), "{why}: {}", text(&out));
    }
    // The same transcript whose line earns what the header names passes.
    let path = write_transcript(d, "earned", &[header("earned", &["ACP-INIT-1"]), initialize(), initialized(json!({}))]);
    let out = agentwire(&["conformance", "run", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("coverage not judged: no corpus directory"), "{}", text(&out));
}

#[test]
fn a_corpus_directory_with_one_more_path_still_judges_coverage() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    // A corpus (it holds a registry) of one ACP transcript: every other MANDATORY ACP requirement
    // goes unexercised.
    std::fs::write(corpus.join("requirements.json"), "{\"requirements\": []}\n").unwrap();
    std::fs::copy(root().join("tests/conformance/acp-handshake.jsonl"), corpus.join("acp-handshake.jsonl")).unwrap();
    let extra = write_transcript(dir.path(), "earned", &[header("earned", &["ACP-INIT-1"]), initialize(), initialized(json!({}))]);
    for paths in [vec![corpus.clone()], vec![corpus.clone(), extra.clone()], vec![extra.clone(), corpus.clone()]] {
        let mut args = vec!["conformance".to_owned(), "run".to_owned()];
        args.extend(paths.iter().map(|p| p.display().to_string()));
        let out = Command::new(env!("CARGO_BIN_EXE_agentwire")).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{paths:?}: {}", text(&out));
        assert!(text(&out).contains("FAIL ACP-PROMPT-1: MANDATORY, but no transcript of the run exercised it"), "{paths:?}: {}", text(&out));
    }
}

#[test]
fn a_baseline_entry_for_a_transcript_skipped_for_that_agent_is_stale() {
    let dir = tempfile::tempdir().unwrap();
    let canned = adapter(dir.path(), "canned-acp", "acp", &["python3", &fixture("canned_acp_agent.py")]);
    // acp-permission pins agentwire's own choices (AGENTWIRE tier): skipped for any other agent.
    let baseline = dir.path().join("baseline.txt");
    std::fs::write(&baseline, "acp-permission  # agentwire's four options\n").unwrap();
    let (canned, baseline) = (canned.display().to_string(), baseline.display().to_string());
    let args = ["conformance", "run", "--adapter", &canned, "--baseline", &baseline, "--filter", "/acp-permission.jsonl", "tests/conformance/"];
    let out = agentwire(&args);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("FAIL acp-permission (tests/conformance/acp-permission.jsonl): skipped (AGENTWIRE tier"), "{}", text(&out));
    assert!(text(&out).contains("but the baseline lists it; remove the entry"), "{}", text(&out));
    let out = agentwire(&["conformance", "run", "--adapter", &canned, "--filter", "/acp-permission.jsonl", "tests/conformance/"]);
    assert!(out.status.success(), "unlisted, the skip is no failure: {}", text(&out));
}
