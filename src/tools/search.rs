//! ls, grep and find, walking with the `ignore` crate (so .gitignore is respected) and
//! searching with ripgrep's `grep-regex` / `grep-searcher`.

use std::path::Path;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::WalkBuilder;
use serde_json::json;

use super::{ToolContext, ToolOutput};

fn walker(root: &Path, max_depth: Option<usize>) -> WalkBuilder {
    let mut w = WalkBuilder::new(root);
    // Hidden files are listed (dotfiles matter in repositories); .git itself is skipped below.
    w.hidden(false).git_ignore(true).git_exclude(true).require_git(false).max_depth(max_depth).sort_by_file_name(|a, b| a.cmp(b));
    w
}

fn display(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

fn in_git_dir(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == ".git")
}

/// `ls`: one directory level.
pub fn ls(ctx: &ToolContext, path: Option<&str>) -> ToolOutput {
    let root = ctx.resolve(path.unwrap_or("."));
    if !root.is_dir() {
        return ToolOutput::error(format!("{} is not a directory", path.unwrap_or(".")));
    }
    let mut entries = Vec::new();
    for entry in walker(&root, Some(1)).build().flatten() {
        if entry.depth() == 0 || in_git_dir(entry.path()) {
            continue;
        }
        let name = display(&root, entry.path());
        entries.push(if entry.file_type().is_some_and(|t| t.is_dir()) { format!("{name}/") } else { name });
    }
    let count = entries.len();
    if entries.is_empty() {
        return ToolOutput::text("(empty directory)").with_details(json!({"entries": 0}));
    }
    ToolOutput::text(entries.join("\n") + "\n").with_details(json!({"entries": count}))
}

/// `grep`: regex over files, `path:line:text`.
pub fn grep(ctx: &ToolContext, pattern: &str, path: Option<&str>, glob: Option<&str>, ignore_case: bool, limit: u64) -> ToolOutput {
    let matcher = match RegexMatcherBuilder::new().case_insensitive(ignore_case).build(pattern) {
        Ok(m) => m,
        Err(e) => return ToolOutput::error(format!("Invalid regular expression: {e}")),
    };
    let filter = match glob.map(|g| globset::Glob::new(g).map(|g| g.compile_matcher())) {
        Some(Err(e)) => return ToolOutput::error(format!("Invalid glob: {e}")),
        Some(Ok(m)) => Some(m),
        None => None,
    };
    let root = ctx.resolve(path.unwrap_or("."));
    let mut searcher = SearcherBuilder::new().binary_detection(BinaryDetection::quit(0)).line_number(true).build();
    let mut lines = Vec::new();
    let mut truncated = false;
    let base = if root.is_file() { root.parent().unwrap_or(&root).to_path_buf() } else { root.clone() };
    'files: for entry in walker(&root, None).build().flatten() {
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error("Search aborted");
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) || in_git_dir(entry.path()) {
            continue;
        }
        let rel = display(&base, entry.path());
        if filter.as_ref().is_some_and(|f| !f.is_match(&rel) && !f.is_match(entry.file_name())) {
            continue;
        }
        let mut hits = Vec::new();
        let _ = searcher.search_path(
            &matcher,
            entry.path(),
            UTF8(|line_no, text| {
                hits.push(format!("{rel}:{line_no}:{}", text.trim_end_matches(['\n', '\r'])));
                Ok(true)
            }),
        );
        for hit in hits {
            if lines.len() as u64 >= limit {
                truncated = true;
                break 'files;
            }
            lines.push(hit);
        }
    }
    let count = lines.len();
    let mut text = if lines.is_empty() { "No matches".to_owned() } else { lines.join("\n") + "\n" };
    if truncated {
        text.push_str(&format!("[stopped after {limit} matches]\n"));
    }
    ToolOutput::text(text).with_details(json!({"matches": count, "truncated": truncated}))
}

/// `find`: paths matching a glob.
pub fn find(ctx: &ToolContext, pattern: &str, path: Option<&str>, limit: u64) -> ToolOutput {
    let matcher = match globset::GlobBuilder::new(pattern).literal_separator(false).build() {
        Ok(g) => g.compile_matcher(),
        Err(e) => return ToolOutput::error(format!("Invalid glob: {e}")),
    };
    let root = ctx.resolve(path.unwrap_or("."));
    let mut found = Vec::new();
    let mut truncated = false;
    for entry in walker(&root, None).build().flatten() {
        if entry.depth() == 0 || in_git_dir(entry.path()) {
            continue;
        }
        let rel = display(&root, entry.path());
        if matcher.is_match(&rel) || matcher.is_match(entry.file_name()) {
            if found.len() as u64 >= limit {
                truncated = true;
                break;
            }
            let dir = entry.file_type().is_some_and(|t| t.is_dir());
            found.push(if dir { format!("{rel}/") } else { rel });
        }
    }
    let count = found.len();
    let mut text = if found.is_empty() { "No files found".to_owned() } else { found.join("\n") + "\n" };
    if truncated {
        text.push_str(&format!("[stopped after {limit} results]\n"));
    }
    ToolOutput::text(text).with_details(json!({"results": count, "truncated": truncated}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::TextOrImageContent;
    use tokio_util::sync::CancellationToken;

    fn text(o: &ToolOutput) -> String {
        match &o.content[0] {
            TextOrImageContent::Text(t) => t.text.clone(),
            TextOrImageContent::Image(_) => String::new(),
        }
    }

    #[test]
    fn ls_grep_find_respect_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(p.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::create_dir_all(p.join("src")).unwrap();
        std::fs::create_dir_all(p.join("target")).unwrap();
        std::fs::write(p.join("src/main.rs"), "fn main() {\n    println!(\"Hello\");\n}\n").unwrap();
        std::fs::write(p.join("target/out.rs"), "fn main() {}\n").unwrap();
        std::fs::write(p.join("debug.log"), "fn main\n").unwrap();
        let ctx = ToolContext { cwd: p.to_path_buf(), cancel: CancellationToken::new(), host: None };
        assert_eq!(text(&ls(&ctx, None)), ".gitignore\nsrc/\n");
        assert_eq!(text(&grep(&ctx, r"fn \w+", None, None, false, 10)), "src/main.rs:1:fn main() {\n");
        assert_eq!(text(&grep(&ctx, "HELLO", None, Some("*.rs"), true, 10)), "src/main.rs:2:    println!(\"Hello\");\n");
        assert!(grep(&ctx, "(", None, None, false, 10).is_error);
        assert_eq!(text(&find(&ctx, "*.rs", None, 10)), "src/main.rs\n");
        assert_eq!(text(&find(&ctx, "**/*.zig", None, 10)), "No files found");
    }
}
