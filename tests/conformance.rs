//! The conformance corpus in `tests/conformance/` passes against agentwire, and a transcript
//! that expects something else fails with the line, the path and a readable diff.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentwire::conformance::requirements::Registry;
use agentwire::conformance::runner::{load_adapter, run, AgentUnderTest, RunOptions};
use agentwire::conformance::suite::{collect, run_suite, Baseline};

fn options() -> RunOptions {
    RunOptions { agent: AgentUnderTest::Agentwire(PathBuf::from(env!("CARGO_BIN_EXE_agentwire"))), frame_timeout: Duration::from_secs(10) }
}

fn corpus() -> Vec<PathBuf> {
    let files = collect(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")], None);
    assert!(files.len() >= 5);
    files
}

/// The kimi-cli recordings imported by `agentwire conformance import --from kimi`.
fn kimi_imports() -> Vec<PathBuf> {
    let files = collect(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/kimi")], None);
    assert!(files.len() >= 27, "tests/conformance/kimi holds {} transcripts", files.len());
    files
}

fn adapter(name: &str) -> AgentUnderTest {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/adapters").join(name);
    AgentUnderTest::Adapted { adapter: Box::new(load_adapter(&path).unwrap()), agentwire: PathBuf::from(env!("CARGO_BIN_EXE_agentwire")) }
}

#[test]
fn the_corpus_passes_against_agentwire() {
    let mut report = run_suite(&corpus(), &options(), None, 4);
    // agentwire speaks every dialect, so every MANDATORY requirement must be exercised.
    report.judge_coverage(Registry::embedded().unwrap());
    assert!(report.passed(), "{}", report.text());
}

#[test]
fn the_corpus_passes_against_agentwire_over_http_through_an_adapter() {
    // The same transcripts, the model replies served by the fake OpenAI-compatible server to
    // agentwire's real provider: checks the fake server and the adapter machinery on an agent
    // whose behaviour the transcripts pin down.
    let options = RunOptions { agent: adapter("agentwire-http.json"), frame_timeout: Duration::from_secs(10) };
    let baseline = Baseline::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/baselines/agentwire-http.txt")).unwrap();
    let report = run_suite(&corpus(), &options, Some(&baseline), 4);
    assert!(report.passed(), "{}", report.text());
    assert_eq!(report.agent, "agentwire-http");
}

#[test]
fn the_kimi_recordings_pass_against_agentwire_except_the_listed_differences() {
    let baseline = Baseline::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/baselines/agentwire-kimi.txt")).unwrap();
    let report = run_suite(&kimi_imports(), &options(), Some(&baseline), 4);
    assert!(report.passed(), "{}", report.text());
}

/// Re-imports every recording of one peer and compares with the committed transcripts, so a
/// change to the importer (or to the recordings in tests/fixtures/) shows up here. Update:
/// AGENTWIRE_UPDATE_IMPORTS=1.
fn assert_imports_current(peer: &str, committed: &[PathBuf], import: impl Fn(&Path, &serde_json::Value) -> Result<String, agentwire::conformance::error::InputError>) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reference-transcripts").join(peer);
    let target_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance").join(peer);
    let scripts: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(source.join("scripts.json")).unwrap()).unwrap();
    let mut recordings: Vec<PathBuf> = std::fs::read_dir(&source)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && !p.to_string_lossy().ends_with(".http.jsonl") && !p.to_string_lossy().ends_with(".wire_file.jsonl"))
        .collect();
    recordings.sort();
    assert_eq!(recordings.len(), committed.len(), "one {peer} transcript per recording");
    let update = std::env::var_os("AGENTWIRE_UPDATE_IMPORTS").is_some();
    for recording in recordings {
        let text = import(&recording, &scripts).unwrap();
        let stem = recording.file_stem().unwrap().to_string_lossy().replace(['.', '_'], "-");
        let target = target_dir.join(format!("{peer}-{stem}.jsonl"));
        if update {
            std::fs::write(&target, &text).unwrap();
        } else {
            assert_eq!(std::fs::read_to_string(&target).unwrap_or_default(), text, "{} is stale: AGENTWIRE_UPDATE_IMPORTS=1 cargo test --test conformance", target.display());
        }
    }
}

#[test]
fn the_imported_kimi_recordings_are_current() {
    assert_imports_current("kimi", &kimi_imports(), agentwire::conformance::import::import_kimi);
}

#[test]
fn the_imported_pi_and_omp_recordings_are_current() {
    use agentwire::conformance::import_rpc::{import_rpc, Peer};
    assert_imports_current("pi", &rpc_imports("pi", 30), |path, scripts| import_rpc(Peer::Pi, path, scripts));
    assert_imports_current("omp", &rpc_imports("omp", 30), |path, scripts| import_rpc(Peer::Omp, path, scripts));
}

/// The pi or oh-my-pi recordings imported by `agentwire conformance import --from pi|omp`.
fn rpc_imports(peer: &str, at_least: usize) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance").join(peer);
    let files = if dir.is_dir() { collect(&[dir], None) } else { Vec::new() };
    // Under AGENTWIRE_UPDATE_IMPORTS the directory may still be empty.
    assert!(files.len() >= at_least || std::env::var_os("AGENTWIRE_UPDATE_IMPORTS").is_some(), "tests/conformance/{peer} holds {} transcripts", files.len());
    files
}

/// Runs one peer's imported recordings against agentwire configured as that peer was
/// (`adapters/agentwire-as-<peer>.json`), with `baselines/agentwire-<peer>.txt`.
fn run_rpc_imports(peer: &str) {
    let options = RunOptions { agent: adapter(&format!("agentwire-as-{peer}.json")), frame_timeout: Duration::from_secs(10) };
    let baseline = Baseline::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/conformance/baselines/agentwire-{peer}.txt"))).unwrap();
    let report = run_suite(&rpc_imports(peer, 30), &options, Some(&baseline), 4);
    assert!(report.passed(), "{}", report.text());
}

#[test]
fn the_pi_recordings_pass_against_agentwire_except_the_listed_differences() {
    run_rpc_imports("pi");
}

#[test]
fn the_omp_recordings_pass_against_agentwire_except_the_listed_differences() {
    run_rpc_imports("omp");
}

#[test]
fn every_adapter_file_validates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/adapters");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        load_adapter(&path).unwrap_or_else(|e| panic!("{e}"));
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/baselines");
    for entry in std::fs::read_dir(dir).unwrap() {
        Baseline::load(&entry.unwrap().path()).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The peers of the compatibility matrix: each line of their baselines names one check,
/// `transcript:REQUIREMENT`, a requirement that transcript names, then says why.
#[test]
fn every_peer_baseline_line_names_a_check_of_its_transcript() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let names: std::collections::BTreeMap<String, Vec<String>> = corpus()
        .iter()
        .map(|f| {
            let header: serde_json::Value = serde_json::from_str(std::fs::read_to_string(f).unwrap().lines().next().unwrap()).unwrap();
            let ids = header["requirements"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_owned()).collect();
            (header["name"].as_str().unwrap().to_owned(), ids)
        })
        .collect();
    for peer in ["gemini-cli", "opencode", "codex-acp", "pi", "omp", "kimi-cli"] {
        let text = std::fs::read_to_string(root.join(format!("baselines/{peer}.txt"))).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
            let (check, why) = line.split_once('#').unwrap_or_else(|| panic!("{peer}: {line:?} says no why"));
            let (name, cited) = check.trim().split_once(':').unwrap_or_else(|| panic!("{peer}: {line:?} names no check (`transcript:REQUIREMENT`)"));
            let ids = names.get(name).unwrap_or_else(|| panic!("{peer}: {name:?} is no transcript"));
            assert!(ids.iter().any(|id| id == cited), "{peer}: {line:?} cites {cited}, which {name} does not name ({ids:?})");
            assert!(why.trim().len() > 10, "{peer}: {line:?} does not say why");
        }
    }
}

/// Tool calls in transcripts other agents run are given by role, so adapters can map them.
#[test]
fn portable_transcripts_script_tool_calls_by_role() {
    let registry = Registry::embedded().unwrap();
    for file in corpus() {
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&file).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let ids: Vec<String> = lines[0]["requirements"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_owned()).collect();
        if !registry.agentwire_ids(&ids).is_empty() {
            continue;
        }
        for call in lines.iter().filter(|l| l["kind"] == "model").flat_map(|l| l["reply"]["toolCalls"].as_array().cloned().unwrap_or_default()) {
            let builtin = ["bash", "read", "write", "edit"].contains(&call["name"].as_str().unwrap());
            assert!(!builtin || call.get("role").is_some(), "{}: the {} call has no role", file.display(), call["name"]);
        }
    }
}

/// agentwire's own ACP adapter (offline model), optionally as if it were another agent.
fn acp_adapter(as_agentwire: bool, name: &str) -> AgentUnderTest {
    let AgentUnderTest::Adapted { mut adapter, agentwire } = adapter("agentwire-acp.json") else { unreachable!() };
    adapter.agentwire = Some(as_agentwire);
    adapter.name = name.parse().unwrap();
    AgentUnderTest::Adapted { adapter, agentwire }
}

fn write_transcript(dir: &Path, name: &str, lines: &[serde_json::Value]) -> PathBuf {
    let path = dir.join(format!("{name}.jsonl"));
    std::fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    path
}

#[test]
fn a_capability_the_agent_does_not_advertise_skips_and_one_it_advertises_must_work() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let transcript = |name: &str, requires: &str, expected: serde_json::Value| {
        write_transcript(dir.path(), name, &[
            json!({"kind": "header", "name": name, "dialect": "acp", "description": "gating", "requirements": ["X-1"], "requires": [requires]}),
            json!({"kind": "in", "frame": {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}}),
            json!({"kind": "out", "frame": {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}, "subset": true}),
            json!({"kind": "in", "frame": {"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}}}),
            json!({"kind": "out", "frame": expected, "subset": true}),
        ])
    };
    let options = RunOptions { agent: acp_adapter(true, "agentwire-acp"), frame_timeout: Duration::from_secs(10) };
    // agentwire advertises no audio: whatever follows, the transcript is skipped.
    let outcome = run(&transcript("audio", "promptCapabilities.audio", json!({"id": 1, "result": {"never": true}})), &options);
    assert_eq!((outcome.skipped.as_deref(), outcome.failure.as_deref()), (Some("the agent does not advertise promptCapabilities.audio"), None));
    // It advertises session listing, so a wrong expectation of it fails.
    let outcome = run(&transcript("list", "sessionCapabilities.list", json!({"id": 1, "result": {"never": true}})), &options);
    assert!(outcome.skipped.is_none() && outcome.failure.as_deref().is_some_and(|f| f.contains("/result/never: missing")), "{outcome:?}");
    let outcome = run(&transcript("list-ok", "sessionCapabilities.list", json!({"id": 1, "result": {"sessions": []}})), &options);
    assert!(outcome.skipped.is_none() && outcome.failure.is_none(), "{outcome:?}");
}

#[test]
fn agentwire_tier_transcripts_are_not_asked_of_other_agents() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/acp-initialize.jsonl");
    let other = RunOptions { agent: acp_adapter(false, "someone-else"), frame_timeout: Duration::from_secs(10) };
    let outcome = run(&file, &other);
    assert_eq!(outcome.skipped.as_deref(), Some("AGENTWIRE tier (ACP-AW-INIT-1): agentwire's own choices, not asked of other agents"));
    let portable = run(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/acp-handshake.jsonl"), &other);
    assert!(portable.skipped.is_none() && portable.failure.is_none(), "{portable:?}");
    let own = RunOptions { agent: acp_adapter(true, "agentwire-acp"), frame_timeout: Duration::from_secs(10) };
    let outcome = run(&file, &own);
    assert!(outcome.skipped.is_none() && outcome.failure.is_none(), "{outcome:?}");
}

#[test]
fn scripted_tool_calls_by_role_become_the_adapters_tools() {
    use serde_json::json;
    // agentwire over HTTP, told that its tool for reading is `bash` running `cat`: the model
    // reply the fake server streams names `bash` with the mapped arguments.
    let AgentUnderTest::Adapted { mut adapter, agentwire } = adapter("agentwire-http.json") else { unreachable!() };
    let tools = json!({"read": {"name": "bash", "arguments": {"command": "cat {{arg:path}}"}}});
    adapter.tools = Some(serde_json::from_value(tools).unwrap());
    let options = RunOptions { agent: AgentUnderTest::Adapted { adapter, agentwire }, frame_timeout: Duration::from_secs(10) };
    let dir = tempfile::tempdir().unwrap();
    let path = write_transcript(dir.path(), "role", &[
        json!({"kind": "header", "name": "role", "dialect": "rpc", "description": "roles", "requirements": ["X-1"], "workFiles": {"notes.txt": "remember\n"}}),
        json!({"kind": "model", "reply": {"toolCalls": [{"id": "r1", "role": "read", "name": "read", "arguments": {"path": "notes.txt"}}]}}),
        json!({"kind": "model", "reply": {"text": "read it"}}),
        json!({"kind": "in", "frame": {"id": "p", "type": "prompt", "message": "read notes"}}),
        json!({"kind": "wait", "frame": {"type": "tool_execution_start", "toolCallId": "r1", "toolName": "bash", "args": {"command": "cat notes.txt"}}, "subset": true}),
        json!({"kind": "wait", "frame": {"type": "tool_execution_end", "toolCallId": "r1", "toolName": "bash"}, "subset": true}),
        json!({"kind": "wait", "frame": {"type": "agent_end"}, "subset": true}),
    ]);
    let outcome = run(&path, &options);
    assert!(outcome.failure.is_none() && outcome.skipped.is_none(), "{outcome:?}");
}

#[test]
fn the_json_report_ends_with_each_requirements_tier_and_status() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["conformance", "run", "--format", "json", "--filter", "acp-error-", "tests/conformance/"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let lines: Vec<serde_json::Value> = String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let transcripts = lines.iter().take_while(|l| l.get("transcript").is_some()).count();
    assert_eq!(transcripts, 5, "one object per transcript first");
    let requirements = &lines[transcripts..];
    assert_eq!(requirements.len(), Registry::embedded().unwrap().iter().count(), "then one per requirement");
    let by_id = |id: &str| requirements.iter().find(|r| r["requirement"] == id).unwrap().clone();
    assert_eq!(by_id("ACP-ERR-1"), serde_json::json!({"requirement": "ACP-ERR-1", "tier": "MANDATORY", "status": "PASS", "transcripts": ["acp-error-parse"], "agent": "agentwire"}));
    assert_eq!(by_id("ACP-ERR-5")["tier"], "ADVISORY");
    assert_eq!(by_id("ACP-PROMPT-1")["status"], "NOT_TESTED");
}

#[test]
fn the_requirements_command_lists_every_id_with_its_tier_source_and_transcripts() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["conformance", "requirements", "--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let tiers = ["MANDATORY", "CAPABILITY", "ADVISORY", "INFORMATIONAL", "AGENTWIRE"];
    for l in &lines {
        assert!(tiers.contains(&l["tier"].as_str().unwrap()) && !l["source"].as_str().unwrap().is_empty(), "{l}");
    }
    let load = lines.iter().find(|l| l["requirement"] == "ACP-LOAD-1").unwrap();
    assert_eq!((load["tier"].as_str(), load["capability"].as_str()), (Some("CAPABILITY"), Some("loadSession")));
    assert_eq!(load["transcripts"], serde_json::json!(["acp-session-load"]));
    let pi = lines.iter().find(|l| l["requirement"] == "REF-PI-1").unwrap();
    assert_eq!(pi["transcripts"].as_array().unwrap().len(), 30, "subdirectories' transcripts count too");
}

/// Opt-in (`AGENTWIRE_CONFORMANCE_OMP=1`; needs npm and the registry): installs Bun (the
/// `@oven/bun-linux-x64` package carries the binary) and oh-my-pi 18.2.3, and runs the rpc
/// corpus against omp with its baseline. One transcript at a time: omp needs seconds to start.
#[test]
fn the_corpus_against_omp_matches_its_baseline() {
    if std::env::var_os("AGENTWIRE_CONFORMANCE_OMP").is_none() {
        eprintln!("skipped: set AGENTWIRE_CONFORMANCE_OMP=1 to install Bun and oh-my-pi and run the corpus against it");
        return;
    }
    let peers = Path::new(env!("CARGO_TARGET_TMPDIR")).join("peers-omp");
    std::fs::create_dir_all(&peers).unwrap();
    let omp = peers.join("node_modules/.bin/omp");
    if !omp.exists() {
        let status = std::process::Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "@oven/bun-linux-x64@1.4.5", "@oh-my-pi/pi-coding-agent@18.2.3"])
            .current_dir(&peers)
            .status()
            .expect("npm runs");
        assert!(status.success(), "npm install of bun and omp failed");
    }
    let bun_dir = peers.join("node_modules/@oven/bun-linux-x64/bin");
    let AgentUnderTest::Adapted { mut adapter, agentwire } = adapter("omp.json") else { unreachable!() };
    adapter.command[0] = omp.display().to_string();
    // omp's launcher is `#!/usr/bin/env bun`.
    adapter.env.insert("PATH".into(), format!("{}:{}", bun_dir.display(), std::env::var("PATH").unwrap_or_default()));
    let options = RunOptions { agent: AgentUnderTest::Adapted { adapter, agentwire }, frame_timeout: Duration::from_secs(15) };
    let baseline = Baseline::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/baselines/omp.txt")).unwrap();
    let report = run_suite(&corpus(), &options, Some(&baseline), 1);
    println!("{}", report.text());
    assert!(report.passed(), "{}", report.text());
}

/// Opt-in (`AGENTWIRE_CONFORMANCE_PI=1`; needs npm and the registry): installs the legacy pi 0.73.1
/// and runs the rpc corpus against it with its baseline, which must be exact (no stale entry).
/// pi 1.6.0, the reference, needs Node 22: CI's matrix runs it from tests/pi-host.
#[test]
fn the_corpus_against_pi_matches_its_baseline() {
    if std::env::var_os("AGENTWIRE_CONFORMANCE_PI").is_none() {
        eprintln!("skipped: set AGENTWIRE_CONFORMANCE_PI=1 to install pi and run the corpus against it");
        return;
    }
    let peers = Path::new(env!("CARGO_TARGET_TMPDIR")).join("peers");
    std::fs::create_dir_all(&peers).unwrap();
    let pi = peers.join("node_modules/.bin/pi");
    if !pi.exists() {
        let status = std::process::Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "@mariozechner/pi-coding-agent@0.73.1"])
            .current_dir(&peers)
            .status()
            .expect("npm runs");
        assert!(status.success(), "npm install of pi failed");
    }
    let AgentUnderTest::Adapted { mut adapter, agentwire } = adapter("pi-0.73.1.json") else { unreachable!() };
    adapter.command[0] = pi.display().to_string();
    let options = RunOptions { agent: AgentUnderTest::Adapted { adapter, agentwire }, frame_timeout: Duration::from_secs(15) };
    let baseline = Baseline::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/baselines/pi-0.73.1.txt")).unwrap();
    let report = run_suite(&corpus(), &options, Some(&baseline), 2);
    println!("{}", report.text());
    assert!(report.passed(), "{}", report.text());
}

#[test]
fn a_differing_frame_is_reported_with_its_line_path_and_diff() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wrong.jsonl");
    std::fs::write(
        &path,
        concat!(
            r#"{"kind":"header","name":"wrong","dialect":"rpc","description":"expects the wrong answer","requirements":["X-1"]}"#, "\n",
            r#"{"kind":"out","frame":{"type":"ready"},"subset":true,"optional":true}"#, "\n",
            r#"{"kind":"in","frame":{"id":"t","type":"get_last_assistant_text"}}"#, "\n",
            r#"{"kind":"out","frame":{"id":"t","type":"response","command":"get_last_assistant_text","success":true,"data":{"text":"something"}}}"#, "\n",
        ),
    )
    .unwrap();
    let outcome = run(&path, &options());
    let failure = outcome.failure.expect("the transcript fails");
    assert!(failure.starts_with("line 4: frame differs at /data/text: expected \"something\", got null"), "{failure}");
    assert!(failure.contains("-    \"text\": \"something\"") && failure.contains("+    \"text\": null"), "{failure}");
    assert_eq!(outcome.requirements, ["X-1"]);
    assert!(!outcome.last_frames.is_empty());

    std::fs::write(&path, r#"{"kind":"in","frame":{}}"#).unwrap();
    assert!(run(&path, &options()).failure.unwrap().contains("the first line must be the header"));
}

#[test]
fn a_recorded_session_replays_as_a_passing_transcript() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.jsonl");
    std::fs::write(&script, concat!(
        r#"{"toolCalls":[{"id":"c1","name":"write","arguments":{"path":"a.txt","content":"hi\n"}}]}"#, "\n",
        r#"{"text":"Wrote it."}"#, "\n",
    ))
    .unwrap();
    let out = dir.path().join("recorded.jsonl");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["conformance", "record", "--settle-ms", "100", "--requirement", "REC-1", "--out"])
        .arg(&out)
        .arg("--")
        .arg("--model-script")
        .arg(&script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(concat!(
            r#"{"id":"p1","type":"prompt","message":"write a file"}"#, "\n",
            r#"{"id":"s","type":"get_session_stats"}"#, "\n",
            "{not json\n",
        ).as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let echoed = String::from_utf8(output.stdout).unwrap();
    assert!(echoed.contains(r#""type":"prompt_result""#), "frames are echoed to stdout");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.lines().next().unwrap().contains(r#""requirements":["REC-1"]"#));
    assert_eq!(text.matches(r#""kind":"model""#).count(), 2, "the script became model lines");
    assert!(text.contains(r#"{"kind":"in","raw":"{not json"}"#));
    assert!(text.contains(r#""timestamp":"{{timestamp}}""#) && text.contains(r#""path":"{{path}}""#));
    assert!(!text.contains(&dir.path().display().to_string()), "no path of the recording machine is left");
    let outcome = run(&out, &options());
    assert!(outcome.failure.is_none(), "{:?}", outcome.failure);
}

#[test]
fn the_corpus_covers_every_command_ui_method_and_wire_and_acp_method_and_the_registry_lists_its_requirements() {
    use std::collections::BTreeSet;
    let (mut commands, mut ui_methods, mut wire_methods, mut requirements) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    // ACP methods sent, and client methods the agent is expected to call, by `acp` transcripts.
    let (mut acp_methods, mut acp_client_methods) = (BTreeSet::new(), BTreeSet::new());
    fn ui(v: &serde_json::Value, out: &mut BTreeSet<String>) {
        match v {
            serde_json::Value::Object(o) => {
                if o.get("type").and_then(|t| t.as_str()) == Some("extension_ui_request") {
                    if let Some(m) = o.get("method").and_then(|m| m.as_str()) {
                        out.insert(m.to_owned());
                    }
                }
                o.values().for_each(|c| ui(c, out));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|c| ui(c, out)),
            _ => {}
        }
    }
    for file in corpus().into_iter().chain(kimi_imports()).chain(rpc_imports("pi", 30)).chain(rpc_imports("omp", 30)) {
        let mut acp = false;
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if acp {
                let method = v["frame"]["method"].as_str().map(str::to_owned);
                if v["kind"] == "in" { &mut acp_methods } else { &mut acp_client_methods }.extend(method);
            }
            match v["kind"].as_str().unwrap() {
                "header" => {
                    acp = v["dialect"] == "acp";
                    requirements.extend(v["requirements"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_owned()));
                }
                "in" => {
                    if let Some(t) = v["frame"]["type"].as_str() {
                        commands.insert(t.to_owned());
                    }
                    if let Some(m) = v["frame"]["method"].as_str() {
                        wire_methods.insert(m.to_owned());
                    }
                }
                _ => ui(&v, &mut ui_methods),
            }
        }
    }
    let missing: Vec<_> = agentwire::protocol::generated::RPC_COMMANDS.iter().map(|c| c.command).filter(|c| !commands.contains(*c)).collect();
    assert!(missing.is_empty(), "commands no transcript sends: {missing:?}");
    let all_ui = agentwire::protocol::UnionInfo::get("ExtensionUiRequest").unwrap();
    let missing: Vec<_> = all_ui.members.iter().map(|(tag, _)| *tag).filter(|m| !ui_methods.contains(*m)).collect();
    assert!(missing.is_empty(), "UI methods no transcript expects: {missing:?}");
    let missing: Vec<_> = agentwire::protocol::generated::WIRE_METHODS.iter().map(|m| m.name).filter(|m| !wire_methods.contains(*m)).collect();
    assert!(missing.is_empty(), "wire methods no transcript sends: {missing:?}");
    let missing: Vec<_> = agentwire::protocol::acp::ACP_AGENT_METHODS.iter().map(|m| m.method).filter(|m| !acp_methods.contains(*m)).collect();
    assert!(missing.is_empty(), "ACP methods agentwire implements that no acp transcript sends: {missing:?}");
    let missing: Vec<_> = agentwire::protocol::acp::ACP_CLIENT_METHODS.iter().map(|m| m.method).filter(|m| !acp_client_methods.contains(*m)).collect();
    assert!(missing.is_empty(), "ACP client methods agentwire calls that no acp transcript expects: {missing:?}");

    // The registry (tests/conformance/requirements.json) names every id a transcript names, and
    // every id it has is named by a transcript or says why not.
    let registry = Registry::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/requirements.json")).unwrap();
    let unregistered: Vec<_> = requirements.iter().filter(|id| registry.get(id).is_none()).collect();
    assert!(unregistered.is_empty(), "requirement ids missing from tests/conformance/requirements.json: {unregistered:?}");
    let uncovered: Vec<_> = registry.iter().filter(|r| !requirements.contains(r.id.as_str()) && r.not_tested.is_none()).map(|r| r.id.to_string()).collect();
    assert!(uncovered.is_empty(), "registry ids no transcript names (name one, or say why in notTested): {uncovered:?}");
}

#[test]
fn a_directory_run_picks_up_its_baseline_for_the_agent() {
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_agentwire"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["conformance", "run", "--filter", "kimi-compaction"])
            .args(extra)
            .arg("tests/conformance/kimi")
            .output()
            .unwrap()
    };
    let with = run(&[]);
    let stderr = String::from_utf8_lossy(&with.stderr);
    assert!(with.status.success(), "a listed difference is an expected failure: {stderr}");
    assert!(stderr.contains("baselines/agentwire-kimi.txt"), "the run says which baseline it used: {stderr}");
    assert!(String::from_utf8_lossy(&with.stdout).contains("expected failures (baseline)"), "a summary table closes the report");
    let without = run(&["--no-baseline"]);
    assert_eq!(without.status.code(), Some(1), "without the baseline the known difference fails");
}

/// Imports one of the hand-made kimi recordings (`tests/fixtures/kimi-recordings/<scenario>.jsonl`):
/// the transcript's text and its lines.
fn import_hand_made_kimi(scenario: &str) -> (String, Vec<serde_json::Value>) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kimi-recordings");
    let scripts: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixtures.join("scripts.json")).unwrap()).unwrap();
    let text = agentwire::conformance::import::import_kimi(&fixtures.join(format!("{scenario}.jsonl")), &scripts).unwrap();
    let lines = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (text, lines)
}

/// The one interleaved line of an imported parallel step: its stream (`Type:id` per frame) and
/// the tool call ids of its results.
fn interleaved_step(lines: &[serde_json::Value]) -> (Vec<String>, Vec<String>) {
    let groups: Vec<&serde_json::Value> = lines.iter().filter(|l| l["kind"] == "unordered" && l["interleaved"] == true).collect();
    assert_eq!(groups.len(), 1, "one interleaved step in {lines:?}");
    let sequences = groups[0]["frames"].as_array().unwrap();
    let name = |f: &serde_json::Value| format!("{}:{}", f["params"]["type"].as_str().unwrap(), f["params"]["payload"]["id"].as_str().unwrap_or(""));
    let stream = sequences[0].as_array().unwrap().iter().map(name).collect();
    let results = sequences[1..].iter().map(|s| s[0]["params"]["payload"]["tool_call_id"].as_str().unwrap().to_owned()).collect();
    (stream, results)
}

/// Runs an imported transcript against agentwire; it must pass.
fn assert_replays(name: &str, text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join(format!("{name}.jsonl"));
    std::fs::write(&transcript, text).unwrap();
    let outcome = run(&transcript, &options());
    assert!(outcome.failure.is_none() && outcome.skipped.is_none(), "{outcome:?}");
}

#[test]
fn an_imported_kimi_recording_honours_yolo_and_matches_parallel_results_by_id() {
    let (text, lines) = import_hand_made_kimi("parallel_yolo");
    assert_eq!(lines[0]["args"], serde_json::json!([]), "--yolo asks for nothing: no --approval");
    let unordered: Vec<&serde_json::Value> = lines.iter().filter(|l| l["kind"] == "unordered").collect();
    assert_eq!(unordered.len(), 1, "{text}");
    // The step's stream first, then each result as a sequence of its own, free to fall anywhere.
    assert_eq!(unordered[0]["interleaved"], true, "{text}");
    let ids: Vec<&str> = unordered[0]["frames"].as_array().unwrap()[1..].iter().map(|s| s[0]["params"]["payload"]["tool_call_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["call_sh_1", "call_sh_2"]);
    // agentwire finishes the fast call first, kimi's recording has the slow one first: still a pass.
    assert_replays("kimi-parallel-yolo", &text);
}

#[test]
fn thinking_starts_at_the_level_given_by_the_thinking_flag() {
    // pi's `--thinking`, which imported recordings made with `defaultThinkingLevel` pass on; the
    // offline model reasons, so `high` holds (a model without reasoning would clamp it to off).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("thinking.jsonl");
    std::fs::write(
        &path,
        concat!(
            r#"{"kind":"header","name":"thinking-flag","dialect":"rpc","description":"--thinking high","requirements":["X-1"],"args":["--thinking","high"]}"#, "\n",
            r#"{"kind":"out","frame":{"type":"ready"},"subset":true,"optional":true}"#, "\n",
            r#"{"kind":"in","frame":{"id":"s","type":"get_state"}}"#, "\n",
            r#"{"kind":"out","frame":{"id":"s","type":"response","command":"get_state","success":true,"data":{"thinkingLevel":"high"}},"subset":true}"#, "\n",
        ),
    )
    .unwrap();
    let outcome = run(&path, &options());
    assert!(outcome.failure.is_none(), "{:?}", outcome.failure);
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire")).args(["--thinking", "bogus"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "an unknown level is a usage error");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("unknown thinking level \"bogus\""));
}

#[test]
fn an_imported_kimi_recording_with_a_result_between_the_next_calls_argument_parts_replays() {
    // kimi starts a call once its arguments are complete: the first Shell's ToolResult arrives
    // while the second call's arguments still stream (issue 25). How the recording was made:
    // tests/fixtures/kimi-recordings/README.md.
    let (text, lines) = import_hand_made_kimi("parallel_eager");
    let reply = &lines.iter().find(|l| l["kind"] == "model").unwrap()["reply"];
    assert_eq!((&reply["delayMs"], &reply["toolCalls"][1]["argumentChunks"]), (&serde_json::json!(800), &serde_json::json!(["{\"command\": \"", "echo second\"}"])));
    // The step's stream keeps its order; each result may fall anywhere in it, so the recorded
    // order (a result between the next call's parts) and agentwire's both replay.
    let (stream, results) = interleaved_step(&lines);
    assert_eq!(stream, ["ToolCall:call_sh_1", "ToolCallPart:", "ToolCallPart:", "ToolCall:call_sh_2", "ToolCallPart:", "ToolCallPart:", "StatusUpdate:"], "{text}");
    assert_eq!(results, ["call_sh_1", "call_sh_2"]);
    assert_replays("kimi-parallel-eager", &text);
}

#[test]
fn real_kimi_recordings_of_two_parallel_calls_replay_with_and_without_approvals() {
    // Recorded from kimi-cli itself (tests/fixtures/kimi-recordings/README.md): with --yolo the
    // first call's ToolResult sits between the second call's ToolCallParts and the step's
    // StatusUpdate follows the second result; with approvals the first is asked while the second
    // call streams.
    let (text, lines) = import_hand_made_kimi("parallel_eager_recorded");
    let (stream, results) = interleaved_step(&lines);
    assert_eq!((stream.iter().filter(|e| e.starts_with("ToolCall:")).count(), results.len()), (2, 2), "{text}");
    assert_replays("kimi-parallel-eager-recorded", &text);
    let (text, lines) = import_hand_made_kimi("parallel_eager_approvals");
    assert_eq!(lines.iter().filter(|l| l["frame"]["params"]["type"] == "ApprovalRequest").count(), 2);
    assert_replays("kimi-parallel-eager-approvals", &text);
}

/// Every frame the harness sends is validated first: one that does not validate is the
/// harness's fault, charged to no requirement of the agent, unless the line marks it `invalid`.
#[test]
fn a_frame_the_transcript_sent_invalid_is_blamed_on_the_harness() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, marked: bool| {
        let path = dir.path().join(format!("{name}.jsonl"));
        let invalid = if marked { r#","invalid":true"# } else { "" };
        let lines = [
            r#"{"kind":"header","name":"bad-mode","dialect":"rpc","description":"a steering mode no schema allows","requirements":["RPC-CMD-3"]}"#.to_owned(),
            r#"{"kind":"out","frame":{"type":"ready"},"subset":true,"optional":true}"#.to_owned(),
            format!(r#"{{"kind":"in","frame":{{"id":"m","type":"set_steering_mode","mode":"sometimes"}}{invalid}}}"#),
            r#"{"kind":"out","frame":{"id":"m","type":"response","command":"set_steering_mode","success":false,"error":"{{string}}"},"subset":true}"#.to_owned(),
        ];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    };
    let outcome = run(&write("unmarked", false), &options());
    let failure = outcome.failure.clone().unwrap_or_default();
    assert!(failure.contains("harness error: the transcript's own frame does not validate"), "{outcome:?}");
    assert!(outcome.charged.is_empty(), "charged to the agent: {outcome:?}");
    let outcome = run(&write("marked", true), &options());
    assert!(outcome.failure.is_none(), "{outcome:?}");
}

/// The text of a cited document as the repository keeps it, or `None` for the two documents it
/// does not hold (the JSON-RPC 2.0 specification and the ACP specification pages, both on the
/// web): `tests/conformance/sources/` (pi's and oh-my-pi's documents from their npm packages,
/// the seeds, shared/protocol-notes.md), the vendored ACP schemas (their descriptions) and our
/// own docs.
fn document_text(document: &str) -> Option<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources = root.join("tests/conformance/sources");
    let files_in = |dir: &Path, ext: &str| -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == ext)).collect();
        files.sort();
        files
    };
    let files: Vec<PathBuf> = match document {
        "pi-rpc" => [files_in(&sources.join("pi-1.6.0"), "md"), vec![sources.join("seeds/pi-rpc-mode.en.md")]].concat(),
        "omp-rpc-reference" => vec![sources.join("seeds/omp-rpc-reference.zh.txt")],
        "omp-rpc-types" => files_in(&sources.join("omp-18.3.4"), "ts"),
        "kimi-wire-transport" => vec![sources.join("seeds/kimi-cli-jsonrpc-transport.zh.txt")],
        "protocol-notes" => vec![sources.join("protocol-notes.md")],
        "agentwire" => [files_in(&root.join("docs"), "md"), vec![sources.join("protocol-notes.md")]].concat(),
        "acp-schema" => {
            // The descriptions, as text: the quotes are sentences of them.
            fn strings(v: &serde_json::Value, out: &mut String) {
                match v {
                    serde_json::Value::String(s) => {
                        out.push_str(s);
                        out.push('\n');
                    }
                    serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
                    serde_json::Value::Object(o) => o.values().for_each(|x| strings(x, out)),
                    serde_json::Value::Null | serde_json::Value::Bool(_) | serde_json::Value::Number(_) => {}
                }
            }
            let mut text = String::new();
            for schema in ["schema/acp/schema.json", "schema/acp/v2/schema.json"] {
                strings(&serde_json::from_str(&std::fs::read_to_string(root.join(schema)).unwrap()).unwrap(), &mut text);
            }
            return Some(text);
        }
        "json-rpc-2.0" | "acp-spec" => return None,
        other => panic!("a document the registry schema does not list: {other}"),
    };
    Some(files.iter().map(|f| std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()))).collect::<Vec<_>>().join("\n"))
}

#[test]
fn every_requirement_quotes_its_document_verbatim_and_mandatory_ones_oblige() {
    use agentwire::conformance::requirements::{find_quote, normative_problem};
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire")).args(["conformance", "requirements", "--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut problems = Vec::new();
    let mut checked = 0;
    let registry = Registry::embedded().unwrap();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        // The client requirements follow the agent ones; they are judged elsewhere.
        let Some(requirement) = v["requirement"].as_str().and_then(|id| registry.get(id)) else { continue };
        let id = requirement.id.as_str();
        let quote = v["quote"].as_str().unwrap_or_default();
        if quote.is_empty() {
            problems.push(format!("{id}: no quote"));
            continue;
        }
        let Some(document) = requirement.document else {
            problems.push(format!("{id}: no document"));
            continue;
        };
        if v["tier"] == "MANDATORY" {
            if let Some(problem) = normative_problem(document, quote) {
                problems.push(format!("{id}: MANDATORY, but its quote {problem}"));
            }
        }
        if let Some(text) = document_text(&document.to_string()) {
            checked += 1;
            if let Err(e) = find_quote(quote, &text) {
                problems.push(format!("{id} ({document}): {e}"));
            }
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
    assert!(checked >= 110, "only {checked} quotes were checked against a document in the repository");
}

/// An "agent" that writes `frames` (rpc JSONL), then waits for its input to close: the order of
/// what it writes is fixed, so a test can hold the runner's matching to each order.
fn canned_rpc_agent(frames: &[serde_json::Value]) -> RunOptions {
    let text: String = frames.iter().map(|f| format!("{f}\n")).collect();
    let script = format!("printf '%s' '{}'; cat > /dev/null", text.replace('\'', r"'\''"));
    let agent = AgentUnderTest::command(vec!["sh".into(), "-c".into(), script], PathBuf::from(env!("CARGO_BIN_EXE_agentwire"))).unwrap();
    RunOptions { agent, frame_timeout: Duration::from_secs(10) }
}

fn transcript_file(dir: &Path, name: &str, body: &[serde_json::Value]) -> PathBuf {
    let mut lines = vec![serde_json::json!({"kind": "header", "name": name, "dialect": "rpc", "description": "d", "requirements": ["X-TEST-1"]})];
    lines.extend(body.iter().cloned());
    write_transcript(dir, name, &lines)
}

#[test]
fn an_interleaved_line_accepts_every_interleaving_and_keeps_each_sequences_order() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let (start, turn, answer) = (json!({"type": "agent_start"}), json!({"type": "turn_start"}), json!({"id": "a", "type": "response", "command": "abort", "success": true}));
    let line = json!({"kind": "unordered", "interleaved": true, "frames": [[start, turn], [answer]]});
    let path = transcript_file(dir.path(), "interleaved", &[line]);
    for order in [[&start, &turn, &answer], [&start, &answer, &turn], [&answer, &start, &turn]] {
        let outcome = run(&path, &canned_rpc_agent(&order.map(Clone::clone)));
        assert!(outcome.failure.is_none(), "{order:?}: {outcome:?}");
    }
    // A sequence's own order is fixed.
    let outcome = run(&path, &canned_rpc_agent(&[turn.clone(), start.clone(), answer.clone()]));
    assert!(outcome.failure.as_deref().is_some_and(|f| f.contains("none of the interleaved sequences")), "{outcome:?}");
    // What `skip` names is passed over, anything else fails.
    let skipping = json!({"kind": "unordered", "interleaved": true, "subset": true, "skip": [{"type": "agent_start"}], "frames": [[turn], [answer]]});
    let path = transcript_file(dir.path(), "skipping", &[skipping]);
    let outcome = run(&path, &canned_rpc_agent(&[turn.clone(), start.clone(), answer.clone()]));
    assert!(outcome.failure.is_none(), "{outcome:?}");
    let outcome = run(&path, &canned_rpc_agent(&[answer.clone(), answer.clone(), turn.clone()]));
    assert!(outcome.failure.as_deref().is_some_and(|f| f.contains("none of the interleaved sequences")), "{outcome:?}");
}

#[test]
fn an_answer_after_the_last_line_fails_unless_an_optional_line_allows_it() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let answer = json!({"id": "a", "type": "response", "command": "abort", "success": true});
    let path = transcript_file(dir.path(), "trailing", &[json!({"kind": "out", "frame": answer})]);
    assert!(run(&path, &canned_rpc_agent(&[answer.clone()])).failure.is_none());
    // A second response to the same request, after everything the transcript expects.
    let outcome = run(&path, &canned_rpc_agent(&[answer.clone(), answer.clone()]));
    let failure = outcome.failure.clone().unwrap_or_default();
    assert!(failure.contains("after the last line"), "{outcome:?}");
    assert_eq!(outcome.charged, ["X-TEST-1"]);
    // What the agent sends on its own after the end (an event) is not the transcript's subject.
    assert!(run(&path, &canned_rpc_agent(&[answer.clone(), json!({"type": "agent_start"})])).failure.is_none());
    // An optional line still waiting accepts the frame it describes, and only that one.
    let settled = json!({"type": "agent_settled", "aborted": false});
    let path = transcript_file(dir.path(), "trailing-optional", &[json!({"kind": "out", "frame": answer}), json!({"kind": "out", "frame": settled, "optional": true})]);
    assert!(run(&path, &canned_rpc_agent(&[answer.clone(), settled.clone()])).failure.is_none());
    assert!(run(&path, &canned_rpc_agent(&[answer.clone(), settled.clone(), answer.clone()])).failure.is_some());
}

#[test]
fn both_recorded_orders_of_kimis_parallel_tool_calls_import_and_pass() {
    // kimi-cli 1.50.0 wrote the first call's ToolResult between the second call's ToolCallParts
    // in one run and after the whole stream in another (tests/fixtures/kimi-parallel-order);
    // which one a run writes is timing, so both must pass whatever order agentwire writes.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kimi-parallel-order");
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/kimi-parallel-order");
    let scripts: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixtures.join("scripts.json")).unwrap()).unwrap();
    let update = std::env::var_os("AGENTWIRE_UPDATE_IMPORTS").is_some();
    for order in ["interleaved", "sequential"] {
        let text = agentwire::conformance::import::import_kimi(&fixtures.join(format!("parallel_{order}.jsonl")), &scripts).unwrap();
        let committed = target.join(format!("kimi-parallel-{order}.jsonl"));
        if update {
            std::fs::write(&committed, &text).unwrap();
        }
        assert_eq!(std::fs::read_to_string(&committed).unwrap_or_default(), text, "{} is stale: AGENTWIRE_UPDATE_IMPORTS=1 cargo test --test conformance", committed.display());
        assert!(text.contains(r#""interleaved":true"#), "the step's stream and its results become one interleaved line: {text}");
    }
    // As a user runs them: the directory, through the command line.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire")).args(["conformance", "run"]).arg(&target).output().unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 passed"), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_reader_that_goes_away_ends_every_printing_subcommand_quietly() {
    // `agentwire conformance run … | head`: the reader closes its end early; the command must not
    // panic ("failed printing to stdout") but end with the status it would have had.
    use std::process::{Command, Stdio};
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let runs: [Vec<String>; 4] = [
        vec!["conformance".into(), "requirements".into()],
        vec!["conformance".into(), "run".into(), root.join("tests/conformance/rpc-framing.jsonl").display().to_string()],
        vec!["schema".into(), "bundle".into()],
        vec!["schema".into(), "docs".into()],
    ];
    for args in runs {
        // A pipe whose reading end is closed before the command writes anything.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_agentwire")).args(&args).stdout(Stdio::from(writer)).stderr(Stdio::piped()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{args:?}: {stderr}");
        assert!(matches!(out.status.code(), Some(0 | 1)), "{args:?} ended {:?}: {stderr}", out.status);
    }
}
