//! The conformance corpus in `tests/conformance/` passes against agentwire, and a transcript
//! that expects something else fails with the line, the path and a readable diff.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentwire::conformance::runner::{run, AgentUnderTest, RunOptions};

fn options() -> RunOptions {
    RunOptions { agent: AgentUnderTest::Agentwire(PathBuf::from(env!("CARGO_BIN_EXE_agentwire"))), frame_timeout: Duration::from_secs(10) }
}

#[test]
fn the_corpus_passes_against_agentwire() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "jsonl")).collect();
    files.sort();
    assert!(files.len() >= 5);
    let failures: Vec<String> = files
        .iter()
        .map(|f| run(f, &options()))
        .filter_map(|o| o.failure.map(|e| format!("{} [{}]: {e}", o.name, o.requirements.join(", "))))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
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
