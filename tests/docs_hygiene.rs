//! The docs and comments describe the system as it is, self-contained:
//! - no heading in `docs/*.md` names an issue (`Issue 24: …`) or a date (`2026-11-27`): how a
//!   figure or a design was reached belongs in git history, and a heading is what other files
//!   link to, so it must stay true;
//! - no cell of a table in README.md is longer than 300 characters: the README is an overview,
//!   the detail lives in the linked docs;
//! - no comment in `src/` points to notes outside the repository (`notes §1.6`) or to an issue
//!   number (`issue 24`): a comment says why, in its own words.
//!
//! Plain string scanning, no dependencies, so the check costs nothing to build.

use std::path::{Path, PathBuf};

const MAX_README_CELL: usize = 300;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Whether `text` contains `issue` (any case), a run of spaces, and a digit, with no letter,
/// digit or `_` right before `issue` (`\bissue\s+\d` in a regex).
fn names_an_issue(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    lower.match_indices("issue").any(|(at, _)| {
        let word_start = at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        let rest = &lower[at + "issue".len()..];
        let digits = rest.trim_start_matches([' ', '\t']);
        word_start && digits.len() < rest.len() && digits.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Whether `text` contains a date written `dddd-dd-dd`.
fn names_a_date(text: &str) -> bool {
    let shape = b"dddd-dd-dd";
    text.as_bytes().windows(shape.len()).any(|w| {
        w.iter().zip(shape).all(|(&b, &s)| if s == b'd' { b.is_ascii_digit() } else { b == s })
    })
}

/// The headings of a markdown text, with their line numbers (fenced code blocks skipped).
fn headings(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            found.push((i + 1, line));
        }
    }
    found
}

/// The cells of a markdown table row (`| a | b \| c |`), split on the bars that are not escaped.
fn cells(row: &str) -> Vec<String> {
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = row.trim().trim_start_matches('|').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('\\');
                cell.push(chars.next().unwrap_or('|'));
            }
            '|' => cells.push(std::mem::take(&mut cell)),
            _ => cell.push(c),
        }
    }
    if !cell.trim().is_empty() {
        cells.push(cell);
    }
    cells.into_iter().map(|c| c.trim().to_owned()).collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_doc_heading_names_an_issue_or_a_date() {
    let mut bad = Vec::new();
    let mut docs: Vec<_> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    assert!(!docs.is_empty(), "no docs/*.md found");
    for path in docs {
        let text = read(&path);
        for (line, heading) in headings(&text) {
            if names_an_issue(heading) || names_a_date(heading) {
                bad.push(format!("docs/{}:{line}: {heading}", path.file_name().unwrap_or_default().to_string_lossy()));
            }
        }
    }
    assert!(bad.is_empty(), "headings that name an issue or a date (say what the section describes instead):\n{}", bad.join("\n"));
}

#[test]
fn readme_table_cells_are_short() {
    let text = read(&root().join("README.md"));
    let mut bad = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.trim_start().starts_with('|') {
            continue;
        }
        for cell in cells(line) {
            let len = cell.chars().count();
            if len > MAX_README_CELL {
                let start: String = cell.chars().take(60).collect();
                bad.push(format!("README.md:{}: a cell of {len} characters: {start}…", i + 1));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "README table cells longer than {MAX_README_CELL} characters (move the detail into the linked doc):\n{}",
        bad.join("\n")
    );
}

#[test]
fn src_points_to_no_notes_and_no_issue() {
    let root = root();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    assert!(!files.is_empty(), "no src/**/*.rs found");
    let mut bad = Vec::new();
    for path in files {
        let relative = path.strip_prefix(&root).expect("under the root").to_string_lossy().replace('\\', "/");
        for (i, line) in read(&path).lines().enumerate() {
            if !(line.contains("notes §") || names_an_issue(line)) {
                continue;
            }
            bad.push(format!("{relative}:{}: {}", i + 1, line.trim()));
        }
    }
    assert!(
        bad.is_empty(),
        "comments that point to notes outside the repository or to an issue number (say why, in their own words):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_matchers_match_what_they_should() {
    assert!(names_an_issue("## Issue 24: size"));
    assert!(names_an_issue("(issue 25: 1.5 s)"));
    assert!(names_an_issue("the goals of issue  17"));
    assert!(!names_an_issue("an issue with 24 frames"));
    assert!(!names_an_issue("tissue 3"));
    assert!(!names_an_issue("issues 4"));
    assert!(names_a_date("(2026-11-27, 18:43 UTC)"));
    assert!(!names_a_date("v0.73.1 and 18:43"));
    assert_eq!(cells("| a | `x\\|y` | c |"), ["a", "`x\\|y`", "c"]);
    assert_eq!(headings("# A\n```sh\n# not a heading\n```\n## B\n").len(), 2);
}
