//! Built-in tools the model can call: read, write, edit, bash, ls, grep, find.
//!
//! A tool never fails the process: bad arguments, missing files and the like come back as a
//! [`ToolOutput`] with `is_error: true` and a message the model can act on.

pub mod files;
/// The host's file and command access, for the built-in tools.
pub mod host {
    pub use crate::core::tools::{HostCommandOutcome, HostError, HostTools};
}
pub mod schema;
pub mod search;
pub mod shell;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use crate::protocol::{AgentToolResult, ToolInfo};

pub use crate::core::tools::{text_content, ToolOutput};


/// What a running tool can use.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Working directory; relative paths resolve against it.
    pub cwd: PathBuf,
    /// Fires on abort.
    pub cancel: CancellationToken,
    /// File and command access the host offers instead of the disk and the local shell.
    pub host: Option<std::sync::Arc<dyn host::HostTools>>,
}

impl ToolContext {
    /// Resolves a path argument against the working directory.
    pub fn resolve(&self, path: &str) -> PathBuf {
        let p = Path::new(path);
        if p.is_absolute() { p.to_path_buf() } else { self.cwd.join(p) }
    }
}

/// The path a built-in file tool works on, as the call names it (`.` for a search tool without
/// one: the working directory); `None` for `bash` (its command can touch anything) and for any
/// other tool.
pub fn target_path(tool: &str, arguments: &Map<String, Value>) -> Option<String> {
    let path = arguments.get("path").and_then(Value::as_str);
    match tool {
        "read" | "write" | "edit" => path.map(str::to_owned),
        "ls" | "grep" | "find" => Some(path.unwrap_or(".").to_owned()),
        _ => None,
    }
}

/// Where `path` (resolved against `cwd`) really is when it lies outside the working directory
/// after every symlink is followed — a link inside the directory that points out of it counts
/// as outside, and so does a dangling one whose target would be created outside. `None`: inside.
pub fn outside_cwd(cwd: &Path, path: &str) -> Option<PathBuf> {
    outside_roots(cwd, &[], path)
}

/// [`outside_cwd`] with more roots the tools may use freely (ACP's `additionalDirectories`):
/// `None` when `path` lies inside the working directory or inside one of `roots`.
pub fn outside_roots(cwd: &Path, roots: &[PathBuf], path: &str) -> Option<PathBuf> {
    let real = real_path(&cwd.join(path), 0);
    let inside = std::iter::once(cwd).chain(roots.iter().map(PathBuf::as_path)).any(|root| real.starts_with(root.canonicalize().unwrap_or_else(|_| root.to_path_buf())));
    (!inside).then_some(real)
}

/// Symlink hops followed before giving up (the kernel's own limit is 40).
const MAX_SYMLINK_HOPS: u8 = 40;

/// `path` (absolute) with every symlink resolved, also when its tail does not exist yet: the
/// longest existing prefix is canonicalized, a dangling symlink right after it is followed, and
/// the rest (`.`, `..`, names) is applied as written.
fn real_path(path: &Path, hops: u8) -> PathBuf {
    use std::path::Component;
    let parts: Vec<Component> = path.components().collect();
    for existing in (1..=parts.len()).rev() {
        let prefix: PathBuf = parts[..existing].iter().collect();
        let Ok(mut real) = prefix.canonicalize() else { continue };
        let rest = &parts[existing..];
        if let Some(Component::Normal(name)) = rest.first() {
            let next = real.join(name);
            if let (Ok(target), true) = (std::fs::read_link(&next), hops < MAX_SYMLINK_HOPS) {
                // A dangling symlink: where it points is where a write would land.
                let mut followed = real.join(target);
                followed.extend(&rest[1..]);
                return real_path(&followed, hops + 1);
            }
        }
        for part in rest {
            match part {
                Component::ParentDir => {
                    real.pop();
                }
                Component::Normal(name) => real.push(name),
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        return real;
    }
    path.to_path_buf()
}

/// The names of the built-in tools.
pub const BUILTIN_TOOLS: &[&str] = &["read", "write", "edit", "bash", "ls", "grep", "find"];

/// Whether a tool changes the system (asks for approval under `--approval dangerous`).
pub fn is_dangerous(name: &str) -> bool {
    matches!(name, "bash" | "write" | "edit")
}

/// Definitions of the built-in tools as offered to the model (built once).
pub fn builtin_definitions() -> &'static [ToolInfo] {
    static DEFINITIONS: std::sync::OnceLock<Vec<ToolInfo>> = std::sync::OnceLock::new();
    DEFINITIONS.get_or_init(build_definitions)
}

/// The built-in tools as the model is offered them: name, description and parameter schema.
/// Text read once (as JSON, 2 KB): built with `json!` it was 48 KB of code.
const DEFINITIONS: &str = r#"[
    {"name":"read","description":"Read a file. Text comes back with line numbers (use offset/limit for large files); images come back as images.","parameters":{"type":"object","properties":{"path":{"type":"string","description":"File path."},"offset":{"type":"integer","minimum":1,"description":"First line (1-based)."},"limit":{"type":"integer","minimum":1,"description":"Number of lines."}},"required":["path"],"additionalProperties":false}},
    {"name":"write","description":"Write a file, creating parent directories; replaces an existing file.","parameters":{"type":"object","properties":{"path":{"type":"string","description":"File path."},"content":{"type":"string","description":"The whole new content."}},"required":["path","content"],"additionalProperties":false}},
    {"name":"edit","description":"Replace one exact, unique occurrence of oldText with newText in a file.","parameters":{"type":"object","properties":{"path":{"type":"string","description":"File path."},"oldText":{"type":"string","description":"Exact text to replace; must occur exactly once."},"newText":{"type":"string","description":"Replacement text."}},"required":["path","oldText","newText"],"additionalProperties":false}},
    {"name":"bash","description":"Run a shell command in the working directory; stdout and stderr are merged, long output keeps its tail.","parameters":{"type":"object","properties":{"command":{"type":"string","description":"The command line."},"timeout":{"type":"integer","minimum":1,"description":"Seconds before the command is killed."}},"required":["command"],"additionalProperties":false}},
    {"name":"ls","description":"List a directory (directories end with /), respecting .gitignore.","parameters":{"type":"object","properties":{"path":{"type":"string","description":"Directory (default: the working directory)."}},"additionalProperties":false}},
    {"name":"grep","description":"Search file contents with a regular expression, respecting .gitignore. Prints path:line:text.","parameters":{"type":"object","properties":{"pattern":{"type":"string","description":"Regular expression."},"path":{"type":"string","description":"File or directory (default: the working directory)."},"glob":{"type":"string","description":"Only files matching this glob."},"ignoreCase":{"type":"boolean","description":"Case-insensitive."},"limit":{"type":"integer","minimum":1,"description":"Maximum matches (default 200)."}},"required":["pattern"],"additionalProperties":false}},
    {"name":"find","description":"Find files whose path matches a glob, respecting .gitignore.","parameters":{"type":"object","properties":{"pattern":{"type":"string","description":"Glob, e.g. **/*.rs."},"path":{"type":"string","description":"Directory (default: the working directory)."},"limit":{"type":"integer","minimum":1,"description":"Maximum results (default 500)."}},"required":["pattern"],"additionalProperties":false}}
]"#;

fn build_definitions() -> Vec<ToolInfo> {
    crate::protocol::decode::from_str(DEFINITIONS).expect("the built-in tool definitions are tool infos")
}

/// Why a tool call's arguments were refused; the message (its `Display`) is what the model sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentsError {
    /// The tool's own parameter schema does not compile.
    #[error("Tool \"{tool}\" has an invalid parameter schema: {reason}")]
    BadSchema { tool: String, reason: String },
    /// The arguments break the schema: one `  - <pointer>: <what>` line per problem, and the
    /// arguments as received, pretty-printed.
    #[error("Validation failed for tool \"{tool}\":\n{}\n\nReceived arguments:\n{received}", problems.join("\n"))]
    Invalid { tool: String, problems: Vec<String>, received: String },
}

/// The agent loop hands the message to `ToolOutput::error(impl Into<String>)` as it is.
impl From<ArgumentsError> for String {
    fn from(e: ArgumentsError) -> String {
        e.to_string()
    }
}

/// Validates `args` against the tool's parameter schema.
pub fn check_arguments(parameters: &Map<String, Value>, tool: &str, args: &Map<String, Value>) -> Result<(), ArgumentsError> {
    let schema = schema::ParameterSchema::compile(parameters).map_err(|e| ArgumentsError::BadSchema { tool: tool.to_owned(), reason: e.to_string() })?;
    let problems: Vec<String> = schema.problems(args).into_iter().map(|p| format!("  - {p}")).collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ArgumentsError::Invalid { tool: tool.to_owned(), problems, received: serde_json::to_string_pretty(args).unwrap_or_default() })
    }
}

/// Runs a built-in tool. `on_update` gets partial results of long-running tools (bash).
pub async fn run_builtin(name: &str, args: &Map<String, Value>, ctx: &ToolContext, on_update: impl FnMut(AgentToolResult)) -> ToolOutput {
    let str_arg = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let int_arg = |k: &str| args.get(k).and_then(Value::as_u64);
    match name {
        "read" => files::read(ctx, &str_arg("path"), int_arg("offset"), int_arg("limit")).await,
        "write" => files::write(ctx, &str_arg("path"), &str_arg("content")).await,
        "edit" => files::edit(ctx, &str_arg("path"), &str_arg("oldText"), &str_arg("newText")).await,
        "bash" => bash(ctx, &str_arg("command"), int_arg("timeout"), on_update).await,
        "ls" | "grep" | "find" => off_the_runtime(ctx, name, args).await,
        other => ToolOutput::error(format!("Tool {other} not found")),
    }
}

/// `ls`, `grep` and `find` walk directories with blocking calls (the `ignore` and `grep`
/// crates): they run on the blocking pool, so a search over a big tree holds up neither the
/// other frames nor an `abort` (the call ends as aborted at once; the walk finishes on its own
/// and its result is dropped). rpc and wire run on a single-thread runtime, where an inline
/// walk would stop everything until it is done.
async fn off_the_runtime(ctx: &ToolContext, name: &str, args: &Map<String, Value>) -> ToolOutput {
    let cancel = ctx.cancel.clone();
    let (ctx, name, args) = (ctx.clone(), name.to_owned(), args.clone());
    let search = tokio::task::spawn_blocking(move || {
        let str_arg = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        let int_arg = |k: &str| args.get(k).and_then(Value::as_u64);
        let path = args.get("path").and_then(Value::as_str);
        match name.as_str() {
            "ls" => search::ls(&ctx, path),
            "grep" => search::grep(
                &ctx,
                &str_arg("pattern"),
                path,
                args.get("glob").and_then(Value::as_str),
                args.get("ignoreCase").and_then(Value::as_bool).unwrap_or(false),
                int_arg("limit").unwrap_or(200),
            ),
            "find" => search::find(&ctx, &str_arg("pattern"), path, int_arg("limit").unwrap_or(500)),
            other => ToolOutput::error(format!("Tool {other} not found")),
        }
    });
    tokio::select! {
        out = search => out.unwrap_or_else(|e| ToolOutput::error(format!("The search stopped: {e}"))),
        () = cancel.cancelled() => ToolOutput::error("Search aborted"),
    }
}

async fn bash(ctx: &ToolContext, command: &str, timeout_s: Option<u64>, mut on_update: impl FnMut(AgentToolResult)) -> ToolOutput {
    let timeout = timeout_s.map(Duration::from_secs);
    if let Some(run) = ctx.host.as_ref().and_then(|h| h.run_command(command, &ctx.cwd, timeout, ctx.cancel.clone())) {
        return host_bash(run.await, timeout_s);
    }
    let outcome = shell::run_shell(command, &ctx.cwd, timeout, ctx.cancel.clone(), |progress| {
        if let Some(tail) = progress.tail {
            on_update(AgentToolResult { content: vec![text_content(tail)], details: None, structured_content: None });
        }
    })
    .await;
    let o = match outcome {
        Ok(o) => o,
        Err(e) => return ToolOutput::error(format!("Could not run the command: {e}")),
    };
    let mut text = o.output.clone();
    if o.truncated {
        if let Some(p) = &o.full_output_path {
            text = format!("[output truncated: showing the last lines of {} lines; full output in {}]\n{text}", o.total_lines, p.display());
        }
    }
    let details = json!({
        "exitCode": o.exit_code, "truncated": o.truncated, "totalLines": o.total_lines, "totalBytes": o.total_bytes,
        "fullOutputPath": o.full_output_path.as_ref().map(|p| p.display().to_string()),
    });
    if o.cancelled {
        return ToolOutput::error(format!("{text}\n\nCommand aborted")).with_details(details);
    }
    if o.timed_out {
        return ToolOutput::error(format!("{text}\n\nCommand timed out after {} seconds", timeout_s.unwrap_or_default())).with_details(details);
    }
    match o.exit_code {
        Some(0) => ToolOutput::text(if text.is_empty() { "(no output)".to_owned() } else { text }).with_details(details),
        Some(code) => ToolOutput::error(format!("{text}\n\nCommand exited with code {code}")).with_details(details),
        None => ToolOutput::error(format!("{text}\n\nCommand was killed by a signal")).with_details(details),
    }
}

/// `bash` run by the host: the same texts and details as a local run (no full-output file:
/// the host keeps the output).
fn host_bash(outcome: Result<host::HostCommandOutcome, host::HostError>, timeout_s: Option<u64>) -> ToolOutput {
    let o = match outcome {
        Ok(o) => o,
        Err(e) => return ToolOutput::error(format!("Could not run the command: {e}")),
    };
    let text = if o.truncated { format!("[output truncated: showing the last part]\n{}", o.output) } else { o.output.clone() };
    let details = json!({"exitCode": o.exit_code, "truncated": o.truncated, "signal": o.signal, "ranIn": "host terminal"});
    if o.cancelled {
        return ToolOutput::error(format!("{text}\n\nCommand aborted")).with_details(details);
    }
    if o.timed_out {
        return ToolOutput::error(format!("{text}\n\nCommand timed out after {} seconds", timeout_s.unwrap_or_default())).with_details(details);
    }
    match (o.exit_code, &o.signal) {
        (Some(0), _) => ToolOutput::text(if text.is_empty() { "(no output)".to_owned() } else { text }).with_details(details),
        (Some(code), _) => ToolOutput::error(format!("{text}\n\nCommand exited with code {code}")).with_details(details),
        (None, Some(signal)) => ToolOutput::error(format!("{text}\n\nCommand was killed by {signal}")).with_details(details),
        (None, None) => ToolOutput::error(format!("{text}\n\nCommand was killed by a signal")).with_details(details),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn argument_errors_list_each_problem_and_what_was_received() {
        let params = json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false});
        let args = json!({"path": 3});
        let err = check_arguments(params.as_object().unwrap(), "read", args.as_object().unwrap()).unwrap_err();
        let ArgumentsError::Invalid { tool, problems, received } = &err else { panic!("{err:?}") };
        assert_eq!((tool.as_str(), problems.len()), ("read", 1));
        assert!(problems[0].starts_with("  - /path: "), "{problems:?}");
        assert_eq!(received, "{\n  \"path\": 3\n}");
        assert_eq!(String::from(err.clone()), format!("Validation failed for tool \"read\":\n{}\n\nReceived arguments:\n{received}", problems[0]));
        let bad = json!({"type": 12});
        let err = check_arguments(bad.as_object().unwrap(), "odd", &Map::new()).unwrap_err();
        assert!(matches!(&err, ArgumentsError::BadSchema { tool, .. } if tool == "odd"), "{err:?}");
        assert!(check_arguments(params.as_object().unwrap(), "read", json!({"path": "a"}).as_object().unwrap()).is_ok());
    }
}
