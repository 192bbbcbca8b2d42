//! The conformance corpus in `tests/conformance/` passes against agentwire, and a transcript
//! that expects something else fails with the line, the path and a readable diff.

use std::path::{Path, PathBuf};
use std::time::Duration;

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

fn adapter(name: &str) -> AgentUnderTest {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/adapters").join(name);
    AgentUnderTest::Adapted { adapter: Box::new(load_adapter(&path).unwrap()), agentwire: PathBuf::from(env!("CARGO_BIN_EXE_agentwire")) }
}

#[test]
fn the_corpus_passes_against_agentwire() {
    let report = run_suite(&corpus(), &options(), None, 4);
    assert!(report.passed(), "{}", report.text());
}

#[test]
fn the_corpus_passes_against_agentwire_over_http_through_an_adapter() {
    // The same transcripts, the model replies served by the fake OpenAI-compatible server to
    // agentwire's real provider: checks the fake server and the adapter machinery on an agent
    // whose behaviour the transcripts pin down.
    let options = RunOptions { agent: adapter("agentwire-http.json"), frame_timeout: Duration::from_secs(10) };
    let report = run_suite(&corpus(), &options, None, 4);
    assert!(report.passed(), "{}", report.text());
    assert_eq!(report.agent, "agentwire-http");
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

/// Opt-in (`AGENTWIRE_CONFORMANCE_PI=1`; needs npm and the registry): installs pi and runs the
/// rpc corpus against it with its baseline, which must be exact (no stale entry).
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
    let AgentUnderTest::Adapted { mut adapter, agentwire } = adapter("pi.json") else { unreachable!() };
    adapter.command[0] = pi.display().to_string();
    let options = RunOptions { agent: AgentUnderTest::Adapted { adapter, agentwire }, frame_timeout: Duration::from_secs(15) };
    let baseline = Baseline::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/baselines/pi.txt")).unwrap();
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
