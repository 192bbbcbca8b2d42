//! `agentwire conformance requirements | serve-model | matrix`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{fail, RequirementsFormat};
use crate::conformance::fake_llm::FakeLlm;
use crate::conformance::matrix::{json_path, markdown, run_matrix, MatrixOptions};
use crate::conformance::requirements::{corpus_files, json_lines, text, transcripts_by_id, Registry};
use crate::providers::offline::ScriptError;

/// Prints the built-in registry with the transcripts under `dir` that name each id.
pub fn requirements(format: RequirementsFormat, dir: &Path) -> ExitCode {
    let registry = match Registry::embedded() {
        Ok(r) => r,
        Err(e) => return fail(&e.to_string()),
    };
    let by_id = transcripts_by_id(&corpus_files(dir));
    match format {
        RequirementsFormat::Text => print!("{}", text(registry, &by_id)),
        RequirementsFormat::Json => print!("{}", json_lines(registry, &by_id)),
    }
    ExitCode::SUCCESS
}

/// The model replies of a script file: a model-script JSONL, or a transcript's `model` lines.
fn script_entries(path: &Path) -> Result<Vec<serde_json::Value>, ScriptError> {
    let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read { path: path.to_path_buf(), source })?;
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = |reason: String| ScriptError::Line { path: path.to_path_buf(), line: i + 1, reason };
        let value: serde_json::Value = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
        let entry = match value.get("kind").and_then(serde_json::Value::as_str) {
            Some("model") => value.get("reply").cloned().unwrap_or_default(),
            Some(_) => continue,
            None => value,
        };
        crate::protocol::validate::validator().validate_def("ModelScriptEntry", &entry).map_err(|e| at(e.to_string()))?;
        entries.push(entry);
    }
    Ok(entries)
}

/// Serves `script` on `listen` until the process is stopped, saying where on stdout and
/// logging each request (JSON, one per line) on stderr.
pub fn serve_model(listen: &str, script: &Path) -> ExitCode {
    let entries = match script_entries(script) {
        Ok(e) => e,
        Err(e) => return fail(&e.to_string()),
    };
    let count = entries.len();
    let llm = match FakeLlm::start_on(listen, Vec::new()) {
        Ok(llm) => llm,
        Err(e) => return fail(&format!("cannot listen on {listen}: {e}")),
    };
    llm.push_script(entries);
    let origin = llm.origin();
    println!("serving {count} scripted replies on {origin}");
    println!("  OpenAI Chat Completions: POST {origin}/v1/chat/completions");
    println!("  OpenAI Responses:        POST {origin}/v1/responses");
    println!("  Anthropic Messages:      POST {origin}/v1/messages");
    println!("  Gemini:                  POST {origin}/v1beta/models/<model>:streamGenerateContent?alt=sse");
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    // Each request, as it arrives, on stderr: what the agent sent is half of what one debugs.
    let (mut main_seen, mut side_seen) = (0, 0);
    loop {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let (main, side) = (llm.seen(), llm.side_requests());
        for (kind, list, done) in [("scripted", &main, &mut main_seen), ("side", &side, &mut side_seen)] {
            for s in &list[*done..] {
                eprintln!("{}", serde_json::json!({"reply": kind, "path": s.path, "body": s.body}));
            }
            *done = list.len();
        }
    }
}

/// Runs the corpus in `dir` against every adapter and writes the matrix.
pub fn matrix(adapters: Vec<PathBuf>, out: Option<&Path>, frame_timeout: u64, jobs: usize, dir: PathBuf) -> ExitCode {
    let registry = match Registry::embedded() {
        Ok(r) => r,
        Err(e) => return fail(&e.to_string()),
    };
    let agentwire = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return fail(&e.to_string()),
    };
    let command = {
        let mut words = vec!["agentwire conformance matrix".to_owned()];
        words.extend(adapters.iter().map(|a| format!("--adapter {}", a.display())));
        words.push(dir.display().to_string());
        if let Some(out) = out {
            words.push(format!("--out {}", out.display()));
        }
        words.join(" ")
    };
    let options = MatrixOptions { adapters, dir, agentwire, frame_timeout: std::time::Duration::from_secs(frame_timeout), jobs };
    let columns = match run_matrix(&options, &|agent| tracing::info!("running the corpus against {agent}")) {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let md = markdown(&columns, registry, &now, &command);
    let json = crate::conformance::matrix::json(&columns, registry, &now);
    match out {
        Some(path) => {
            let written = std::fs::write(path, &md).and_then(|()| std::fs::write(json_path(path), format!("{json:#}\n")));
            if let Err(e) = written {
                return fail(&format!("{}: {e}", path.display()));
            }
        }
        None => print!("{md}"),
    }
    for c in &columns {
        if !c.report.passed() {
            eprintln!("{} differs from its baseline:\n{}", c.report.agent, c.report.text());
        }
    }
    if columns.iter().all(|c| c.report.passed()) { ExitCode::SUCCESS } else { ExitCode::from(1) }
}
