//! read, write and edit.

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::host::HostError;
use super::{ToolContext, ToolOutput};
use crate::core::port::FileChange;
use crate::protocol::{ImageContent, TextOrImageContent};

/// Lines returned by `read` when no limit is given.
const DEFAULT_READ_LINES: u64 = 2000;
/// Longest line `read` returns whole.
const MAX_LINE_CHARS: usize = 2000;

fn image_mime(path: &str) -> Option<&'static str> {
    let lower = path.to_ascii_lowercase();
    [(".png", "image/png"), (".jpg", "image/jpeg"), (".jpeg", "image/jpeg"), (".gif", "image/gif"), (".webp", "image/webp")]
        .iter()
        .find(|(ext, _)| lower.ends_with(ext))
        .map(|(_, m)| *m)
}

/// `read`: line-numbered text, or an image block.
pub async fn read(ctx: &ToolContext, path: &str, offset: Option<u64>, limit: Option<u64>) -> ToolOutput {
    let full = ctx.resolve(path);
    // Text through the host when it offers it (an editor's buffer); images from the disk.
    let from_host = if image_mime(path).is_none() { ctx.host.as_ref().and_then(|h| h.read_text_file(&full, &ctx.cancel)) } else { None };
    let bytes = match from_host {
        Some(read) => match read.await {
            Ok(text) => text.into_bytes(),
            Err(e) => return ToolOutput::error(format!("Could not read {path}: {e}")),
        },
        None => match tokio::fs::read(&full).await {
            Ok(b) => b,
            Err(e) => return ToolOutput::error(format!("Could not read {path}: {e}")),
        },
    };
    if let Some(mime) = image_mime(path) {
        let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let image = TextOrImageContent::Image(ImageContent::new(data, mime.parse().expect("non-empty")));
        return ToolOutput { content: vec![super::text_content(format!("Read image {path} ({} bytes)", bytes.len())), image], details: None, is_error: false, change: None };
    }
    let text = String::from_utf8_lossy(&bytes);
    let total = text.lines().count() as u64;
    let start = offset.unwrap_or(1).max(1);
    if start > total.max(1) {
        return ToolOutput::error(format!("Offset {start} is beyond the end of {path} ({total} lines)"));
    }
    let limit = limit.unwrap_or(DEFAULT_READ_LINES);
    let mut out = String::new();
    let mut shown = 0;
    for (i, line) in text.lines().enumerate().skip(usize::try_from(start - 1).unwrap_or(usize::MAX)).take(usize::try_from(limit).unwrap_or(usize::MAX)) {
        let line = if line.chars().count() > MAX_LINE_CHARS {
            format!("{}… [line truncated]", line.chars().take(MAX_LINE_CHARS).collect::<String>())
        } else {
            line.to_owned()
        };
        out.push_str(&format!("{:>6}\t{line}\n", i + 1));
        shown += 1;
    }
    let last = start + shown - 1;
    if last < total {
        out.push_str(&format!("\n[{} more lines; continue with offset {}]\n", total - last, last + 1));
    }
    ToolOutput::text(out).with_details(json!({"path": full.display().to_string(), "totalLines": total, "firstLine": start, "lastLine": last}))
}

/// Why a file could not be read or written, through the host or on the disk.
#[derive(Debug, thiserror::Error)]
enum FileError {
    /// The host refused or failed.
    #[error("{0}")]
    Host(#[from] HostError),
    /// The disk did.
    #[error("{0}")]
    Disk(#[from] std::io::Error),
}

/// Writes `content` through the host when it offers it, else to the disk.
async fn save(ctx: &ToolContext, full: &std::path::Path, content: &str) -> Result<(), FileError> {
    match ctx.host.as_ref().and_then(|h| h.write_text_file(full, content, &ctx.cancel)) {
        Some(write) => Ok(write.await?),
        None => Ok(tokio::fs::write(full, content).await?),
    }
}

/// Reads a text file through the host when it offers it, else from the disk.
async fn load(ctx: &ToolContext, full: &std::path::Path) -> Result<String, FileError> {
    match ctx.host.as_ref().and_then(|h| h.read_text_file(full, &ctx.cancel)) {
        Some(read) => Ok(read.await?),
        None => Ok(tokio::fs::read_to_string(full).await?),
    }
}

/// `write`: the whole file, creating directories.
pub async fn write(ctx: &ToolContext, path: &str, content: &str) -> ToolOutput {
    let full = ctx.resolve(path);
    if let Some(parent) = full.parent() {
        if let Err(e) = tokio::fs::create_dir_all(parent).await {
            return ToolOutput::error(format!("Could not create {}: {e}", parent.display()));
        }
    }
    let existed = full.exists();
    // Written to the disk, the file's text before is read first (up to the size a question
    // shows whole), for the change the call reports. Through the host it is not: that would
    // be one more request to the editor for every write.
    let (saved, change) = match ctx.host.as_ref().and_then(|h| h.write_text_file(&full, content, &ctx.cancel)) {
        Some(write) => (write.await.map_err(FileError::from), None),
        None => {
            let small = !tokio::fs::metadata(&full).await.is_ok_and(|m| m.len() > MAX_PLANNED_BYTES);
            let old_text = if existed && small { tokio::fs::read_to_string(&full).await.ok() } else { None };
            let change = (small && (old_text.is_some() || !existed)).then(|| FileChange { path: full.clone(), old_text, new_text: content.to_owned() });
            (tokio::fs::write(&full, content).await.map_err(FileError::from), change)
        }
    };
    match saved {
        Ok(()) => {
            let output = ToolOutput::text(format!("Wrote {} bytes to {path}", content.len())).with_details(json!({"path": full.display().to_string(), "bytes": content.len(), "created": !existed}));
            match change {
                Some(change) => output.with_change(change),
                None => output,
            }
        }
        Err(e) => ToolOutput::error(format!("Could not write {path}: {e}")),
    }
}

/// Why `edit` cannot replace `oldText` (the message is for the model and names the file).
#[derive(Debug, thiserror::Error)]
enum ReplaceError {
    #[error("oldText is empty; give the exact text to replace")]
    Empty,
    #[error("Could not find the text to replace in {0}; oldText must match the file exactly, whitespace included")]
    NotFound(String),
    #[error("The text to replace occurs {count} times in {path}; include more surrounding lines to make it unique")]
    Ambiguous { path: String, count: usize },
}

/// `before` with `old` replaced by `new`, once: `old` must occur exactly once. `Err` says why
/// not (it names `path`).
fn replaced(before: &str, path: &str, old: &str, new: &str) -> Result<String, ReplaceError> {
    if old.is_empty() {
        return Err(ReplaceError::Empty);
    }
    match before.matches(old).count() {
        0 => Err(ReplaceError::NotFound(path.to_owned())),
        1 => Ok(before.replacen(old, new, 1)),
        count => Err(ReplaceError::Ambiguous { path: path.to_owned(), count }),
    }
}

/// The largest file [`planned_change`] reads to show its whole text: a question about a bigger
/// one goes without the change (a log of gigabytes is not read into memory to ask about it).
const MAX_PLANNED_BYTES: u64 = 1 << 20;

/// What `write` or `edit` with `args` would change, worked out without changing anything: the
/// file's text now (through the host when it offers it, as the tool reads it) and after.
/// `write` of a file that cannot be read is a new file (`old_text` `None`). An edit that would
/// not apply (the file unreadable, the text not found once) shows the replacement it asks for,
/// the texts of its arguments; it fails with the reason when it runs. `None` for other tools and
/// for a file over [`MAX_PLANNED_BYTES`] on the disk.
pub async fn planned_change(ctx: &ToolContext, tool: &str, args: &Map<String, Value>) -> Option<FileChange> {
    let arg = |k: &str| args.get(k).and_then(Value::as_str);
    let path = arg("path")?;
    let full = ctx.resolve(path);
    if tokio::fs::metadata(&full).await.is_ok_and(|m| m.len() > MAX_PLANNED_BYTES) {
        return None;
    }
    match tool {
        "write" => {
            let new_text = arg("content")?.to_owned();
            let old_text = load(ctx, &full).await.ok();
            Some(FileChange { path: full, old_text, new_text })
        }
        "edit" => {
            let (old, new) = (arg("oldText")?, arg("newText")?);
            let whole = match load(ctx, &full).await {
                Ok(before) => replaced(&before, path, old, new).ok().map(|after| (before, after)),
                Err(_) => None,
            };
            let (old_text, new_text) = whole.unwrap_or_else(|| (old.to_owned(), new.to_owned()));
            Some(FileChange { path: full, old_text: Some(old_text), new_text })
        }
        _ => None,
    }
}

/// `edit`: one exact, unique replacement, with a unified diff in the details.
pub async fn edit(ctx: &ToolContext, path: &str, old: &str, new: &str) -> ToolOutput {
    let full = ctx.resolve(path);
    let before = match load(ctx, &full).await {
        Ok(t) => t,
        Err(e) => return ToolOutput::error(format!("Could not read {path}: {e}")),
    };
    let after = match replaced(&before, path, old, new) {
        Ok(after) => after,
        Err(e) => return ToolOutput::error(e.to_string()),
    };
    if let Err(e) = save(ctx, &full, &after).await {
        return ToolOutput::error(format!("Could not write {path}: {e}"));
    }
    // A diff can take time quadratic in the changed lines. rpc and wire serve on one thread, so it
    // runs on the blocking pool (frames and `abort` are answered meanwhile), and past a second
    // `similar` stops looking for the smallest diff and returns a coarser one (still exact).
    let label = path.to_owned();
    let change = FileChange { path: full.clone(), old_text: Some(before), new_text: after };
    let (diff, change) = tokio::task::spawn_blocking(move || {
        let mut config = similar::TextDiff::configure();
        config.timeout(std::time::Duration::from_secs(1));
        let diff = config.diff_lines(change.old_text.as_deref().unwrap_or_default(), &change.new_text).unified_diff().context_radius(3).header(&label, &label).to_string();
        (diff, Some(change))
    })
    .await
    .unwrap_or_else(|e| (format!("(no diff: {e})"), None));
    let output = ToolOutput::text(format!("Edited {path}")).with_details(json!({"path": full.display().to_string(), "diff": diff}));
    match change {
        Some(change) => output.with_change(change),
        None => output,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::TextOrImageContent;
    use tokio_util::sync::CancellationToken;

    fn ctx(dir: &std::path::Path) -> ToolContext {
        ToolContext { cwd: dir.to_path_buf(), cancel: CancellationToken::new(), host: None }
    }

    fn text(o: &ToolOutput) -> &str {
        match &o.content[0] {
            TextOrImageContent::Text(t) => &t.text,
            TextOrImageContent::Image(_) => "",
        }
    }

    #[tokio::test]
    async fn read_numbers_lines_and_pages() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let o = read(&ctx(dir.path()), "a.txt", None, None).await;
        assert_eq!(text(&o), "     1\tone\n     2\ttwo\n     3\tthree\n");
        let o = read(&ctx(dir.path()), "a.txt", Some(2), Some(1)).await;
        assert_eq!(text(&o), "     2\ttwo\n\n[1 more lines; continue with offset 3]\n");
        assert!(read(&ctx(dir.path()), "missing.txt", None, None).await.is_error);
        std::fs::write(dir.path().join("p.png"), [0x89, b'P', b'N', b'G']).unwrap();
        let o = read(&ctx(dir.path()), "p.png", None, None).await;
        assert!(matches!(&o.content[1], TextOrImageContent::Image(i) if i.data == "iVBORw==" && i.mime_type.as_str() == "image/png"));
    }

    #[tokio::test]
    async fn write_and_edit() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        assert!(!write(&c, "sub/f.txt", "a\nb\nb\n").await.is_error);
        let o = edit(&c, "sub/f.txt", "b\n", "c\n").await;
        assert!(o.is_error && text(&o).contains("occurs 2 times"), "{o:?}");
        let o = edit(&c, "sub/f.txt", "zzz", "c").await;
        assert!(o.is_error && text(&o).starts_with("Could not find the text to replace"));
        let o = edit(&c, "sub/f.txt", "a\n", "A\n").await;
        assert!(!o.is_error);
        assert_eq!(std::fs::read_to_string(dir.path().join("sub/f.txt")).unwrap(), "A\nb\nb\n");
        assert!(o.details.unwrap()["diff"].as_str().unwrap().contains("-a\n+A\n"));
    }

    #[tokio::test]
    async fn a_planned_change_leaves_the_file_alone() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        let args = |v: Value| v.as_object().unwrap().clone();
        std::fs::write(dir.path().join("f.txt"), "one\ntwo\n").unwrap();
        let full = dir.path().join("f.txt");
        let edit = planned_change(&c, "edit", &args(json!({"path": "f.txt", "oldText": "two", "newText": "2"}))).await.unwrap();
        assert_eq!(edit, FileChange { path: full.clone(), old_text: Some("one\ntwo\n".into()), new_text: "one\n2\n".into() });
        let missing = planned_change(&c, "edit", &args(json!({"path": "f.txt", "oldText": "three", "newText": "3"}))).await.unwrap();
        assert_eq!((missing.old_text.as_deref(), missing.new_text.as_str()), (Some("three"), "3"), "an edit that would not apply shows its arguments");
        let overwrite = planned_change(&c, "write", &args(json!({"path": "f.txt", "content": "new\n"}))).await.unwrap();
        assert_eq!(overwrite, FileChange { path: full, old_text: Some("one\ntwo\n".into()), new_text: "new\n".into() });
        let created = planned_change(&c, "write", &args(json!({"path": "sub/g.txt", "content": "g\n"}))).await.unwrap();
        assert_eq!((created.old_text, created.path), (None, dir.path().join("sub/g.txt")));
        assert_eq!(std::fs::read_to_string(dir.path().join("f.txt")).unwrap(), "one\ntwo\n");
        assert!(!dir.path().join("sub").exists());
        assert_eq!(planned_change(&c, "read", &args(json!({"path": "f.txt"}))).await, None);
        let big = "x".repeat(usize::try_from(MAX_PLANNED_BYTES).unwrap() + 1);
        std::fs::write(dir.path().join("big.txt"), &big).unwrap();
        assert_eq!(planned_change(&c, "write", &args(json!({"path": "big.txt", "content": "small"}))).await, None, "not read whole to ask");
    }
}
