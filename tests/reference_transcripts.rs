//! Every frame recorded from pi, omp and kimi (`tests/fixtures/reference-transcripts/`, copied from the team's shared folder) validates
//! against our schema, except the lines listed in `tests/fixtures/reference_allowlist.txt`
//! (each with a reason). An allowlist entry that starts validating fails the test too, so the
//! list never goes stale.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentwire::cli::schema::check_lines;

fn transcripts_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reference-transcripts");
    assert!(dir.is_dir(), "{} is missing: the reference transcripts are copied into tests/fixtures/ (see its README)", dir.display());
    dir
}

/// `<peer>/<file>:<line>` → reason.
fn allowlist() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reference_allowlist.txt")).unwrap();
    let mut entries = BTreeMap::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (key, reason) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        assert!(!reason.trim().is_empty(), "allowlist entry `{key}` needs a reason");
        assert!(entries.insert(key.to_owned(), reason.trim().to_owned()).is_none(), "duplicate allowlist entry `{key}`");
    }
    entries
}

#[test]
fn reference_frames_validate_except_the_allowlist() {
    let dir = transcripts_dir();
    let mut failures: BTreeMap<String, String> = BTreeMap::new();
    let mut files = 0;
    for peer in ["pi", "omp", "kimi"] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir.join(peer)).unwrap().map(|e| e.unwrap().path()).collect();
        paths.sort();
        for path in paths {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            // Frames only: HTTP logs and kimi's persisted wire files have other formats.
            if !name.ends_with(".jsonl") || name.ends_with(".http.jsonl") || name.ends_with(".wire_file.jsonl") {
                continue;
            }
            files += 1;
            let reader = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
            for (line, problem) in check_lines(reader, None).unwrap() {
                failures.insert(format!("{peer}/{name}:{line}"), problem);
            }
        }
    }
    assert!(files >= 80, "expected the shared transcript set (found {files} files)");
    let allowed = allowlist();
    let unexpected: Vec<String> =
        failures.iter().filter(|(k, _)| !allowed.contains_key(*k)).map(|(k, p)| format!("{k}: {p}")).collect();
    let stale: Vec<&String> = allowed.keys().filter(|k| !failures.contains_key(*k)).collect();
    assert!(unexpected.is_empty(), "frames that do not validate and are not allowlisted:\n{}", unexpected.join("\n"));
    assert!(stale.is_empty(), "allowlist entries that now validate (remove them):\n{stale:#?}");
}
