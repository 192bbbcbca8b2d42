//! `agentwire conformance run | record | import | requirements | serve-model | matrix`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{emit, emit_or_fail, fail, ConformanceAction, ImportFrom, ReportFormat, RequirementsFormat};
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
    let agent = match format {
        RequirementsFormat::Text => text(registry, &by_id),
        RequirementsFormat::Json => json_lines(registry, &by_id),
    };
    if let Err(code) = emit_or_fail(&agent).and_then(|()| emit_or_fail(&super::conformance_client::requirements(format))) {
        return code;
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
    // The server keeps serving when nobody reads the banner any more.
    let _ = emit(&format!(
        "serving {count} scripted replies on {origin}\n  OpenAI Chat Completions: POST {origin}/v1/chat/completions\n  OpenAI Responses:        POST {origin}/v1/responses\n  Anthropic Messages:      POST {origin}/v1/messages\n  Gemini:                  POST {origin}/v1beta/models/<model>:streamGenerateContent?alt=sse\n"
    ));
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
    let agentwire = match super::tools::agent_binary() {
        Ok(path) => path,
        Err(code) => return code,
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
            let existing = std::fs::read_to_string(path).ok();
            let text = crate::conformance::matrix::splice(existing.as_deref(), &md);
            let written = std::fs::write(path, text).and_then(|()| std::fs::write(json_path(path), format!("{json:#}\n")));
            if let Err(e) = written {
                return fail(&format!("{}: {e}", path.display()));
            }
        }
        None => {
            if let Err(code) = emit_or_fail(&md) {
                return code;
            }
        }
    }
    for c in &columns {
        if !c.report.passed() {
            eprintln!("{} differs from its baseline:\n{}", c.report.agent, c.report.text());
        }
    }
    if columns.iter().all(|c| c.report.passed()) { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// Runs `agentwire conformance …` and returns the process exit code.
pub(super) fn run(action: ConformanceAction) -> ExitCode {
    match action {
        ConformanceAction::Record { out, name, description, requirements, dialect, settle_ms, args } => {
            let name = name.unwrap_or_else(|| out.file_stem().map_or_else(|| "recorded".to_owned(), |s| s.to_string_lossy().into_owned()));
            let exe = match super::tools::agent_binary() {
                Ok(path) => path,
                Err(code) => return code,
            };
            let options = crate::conformance::record::RecordOptions {
                name,
                description,
                requirements,
                dialect: dialect.into(),
                agentwire: exe,
                args,
                settle: std::time::Duration::from_millis(settle_ms),
            };
            let stdin = std::io::BufReader::new(std::io::stdin());
            match crate::conformance::record::record(&options, stdin, &mut std::io::stdout()) {
                Ok(text) => match std::fs::write(&out, text) {
                    Ok(()) => {
                        tracing::info!("wrote {}", out.display());
                        ExitCode::SUCCESS
                    }
                    Err(e) => fail(&format!("{}: {e}", out.display())),
                },
                Err(e) => fail(&e.to_string()),
            }
        }
        ConformanceAction::Import { from, out, recordings } => {
            use crate::conformance::error::InputError;
            use crate::conformance::import_rpc::{import_rpc, Peer};
            let mut failed = false;
            // A shell glob over a recordings directory also names the companion files.
            let is_companion = |p: &std::path::Path| [".http.jsonl", ".wire_file.jsonl"].iter().any(|s| p.to_string_lossy().ends_with(s));
            for recording in recordings.iter().filter(|r| !is_companion(r)) {
                let scripts = recording.with_file_name("scripts.json");
                let converted = std::fs::read_to_string(&scripts)
                    .map_err(|source| InputError::Io { path: scripts.clone(), source })
                    .and_then(|t| serde_json::from_str(&t).map_err(|source| InputError::Json { at: scripts.display().to_string(), source }))
                    .and_then(|scripts| match from {
                        ImportFrom::Kimi => crate::conformance::import::import_kimi(recording, &scripts),
                        ImportFrom::Pi => import_rpc(Peer::Pi, recording, &scripts),
                        ImportFrom::Omp => import_rpc(Peer::Omp, recording, &scripts),
                    });
                let prefix = match from {
                    ImportFrom::Kimi => "kimi",
                    ImportFrom::Pi => Peer::Pi.name(),
                    ImportFrom::Omp => Peer::Omp.name(),
                };
                let stem = recording.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
                let target = out.join(format!("{prefix}-{}.jsonl", stem.replace(['.', '_'], "-")));
                match converted.and_then(|text| std::fs::write(&target, text).map_err(|source| InputError::Io { path: target.clone(), source })) {
                    Ok(()) => tracing::info!("wrote {}", target.display()),
                    Err(e) => {
                        tracing::error!("{e}");
                        failed = true;
                    }
                }
            }
            if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        ConformanceAction::Run { bin, adapter, baseline, no_baseline, filter, format, frame_timeout, jobs, paths } => {
            let run = ConformanceRun { bin, adapter, baseline, no_baseline, filter, format, frame_timeout, jobs };
            run_conformance(&run, &paths)
        }
        ConformanceAction::Requirements { format, dir } => requirements(format, &dir),
        ConformanceAction::ServeModel { listen, script } => serve_model(&listen, &script),
        ConformanceAction::Matrix { adapters, out, frame_timeout, jobs, dir } => {
            matrix(adapters, out.as_deref(), frame_timeout, jobs, dir)
        }
        ConformanceAction::Client { dialect, scenarios, format, wait, timeout, input, clients, out, command } => match clients {
            Some(file) => super::conformance_client::client_matrix(&scenarios, (wait, timeout), &file, out.as_deref()),
            None => match dialect {
                Some(dialect) => super::conformance_client::client(dialect, &scenarios, format, (wait, timeout), input, command),
                None => super::fail("--dialect is required without --clients"),
            },
        },
        ConformanceAction::ScriptedAgent { dialect, scenario, report, wait_ms } => super::conformance_client::scripted_agent(dialect, &scenario, &report, wait_ms),
    }
}

/// The options of `agentwire conformance run`.
struct ConformanceRun {
    bin: Option<String>,
    adapter: Option<std::path::PathBuf>,
    baseline: Option<std::path::PathBuf>,
    no_baseline: bool,
    filter: Option<String>,
    format: ReportFormat,
    frame_timeout: u64,
    jobs: usize,
}

fn run_conformance(opts: &ConformanceRun, paths: &[std::path::PathBuf]) -> ExitCode {
    use crate::conformance::runner::{load_adapter, AgentUnderTest, RunOptions};
    use crate::conformance::suite::{collect, find_baseline, run_suite_with_progress, transcript_name, Baseline};
    let exe = match super::tools::agent_binary() {
        Ok(path) => path,
        Err(code) => return code,
    };
    let bin: Option<Vec<String>> = opts.bin.as_ref().map(|b| b.split_whitespace().map(str::to_owned).collect());
    let agent = match (&opts.adapter, bin) {
        (Some(path), bin) => match load_adapter(path) {
            Ok(mut adapter) => {
                if let Some(bin) = bin.filter(|b| !b.is_empty()) {
                    adapter.command = bin;
                }
                AgentUnderTest::Adapted { adapter: Box::new(adapter), agentwire: exe }
            }
            Err(e) => return fail(&e.to_string()),
        },
        (None, Some(bin)) => match AgentUnderTest::command(bin, exe) {
            Ok(a) => a,
            Err(e) => return fail(&e.to_string()),
        },
        (None, None) => AgentUnderTest::Agentwire(exe),
    };
    // One directory given and no --baseline: its baseline for this agent, if it has one, so
    // `conformance run tests/conformance/kimi` judges known differences as such.
    let baseline_path = match (&opts.baseline, paths) {
        (Some(path), _) => Some(path.clone()),
        (None, [dir]) if dir.is_dir() && !opts.no_baseline => find_baseline(dir, &agent.name()).inspect(|found| {
            tracing::info!("using the baseline {} (--no-baseline to run without it)", found.display());
        }),
        (None, _) => None,
    };
    let mut baseline = match baseline_path.as_deref().map(Baseline::load).transpose() {
        Ok(b) => b,
        Err(e) => return fail(&e.to_string()),
    };
    let files = collect(paths, opts.filter.as_deref());
    if let (Some(b), Some(_)) = (baseline.as_mut(), &opts.filter) {
        // Entries for transcripts the filter left out are not stale, just not run.
        let run: std::collections::BTreeSet<std::path::PathBuf> = files.iter().cloned().collect();
        let left_out = collect(paths, None).into_iter().filter(|f| !run.contains(f)).filter_map(|f| transcript_name(&f)).collect();
        b.without(&left_out);
    }
    if files.is_empty() {
        return fail("no transcripts found");
    }
    let options = RunOptions { agent, frame_timeout: std::time::Duration::from_secs(opts.frame_timeout) };
    // A progress bar on a terminal (stderr); nothing when stderr is a pipe or a file.
    let bar = indicatif::ProgressBar::with_draw_target(Some(files.len() as u64), indicatif::ProgressDrawTarget::stderr());
    bar.set_style(indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {wide_msg}").unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()));
    let mut report = run_suite_with_progress(&files, &options, baseline.as_ref(), opts.jobs, &|outcome| {
        bar.set_message(outcome.name.clone());
        bar.inc(1);
    });
    bar.finish_and_clear();
    let registry = match crate::conformance::requirements::Registry::embedded() {
        Ok(r) => r,
        Err(e) => return fail(&e.to_string()),
    };
    // A whole corpus (a directory with its registry among the paths, unfiltered) must exercise
    // every MANDATORY requirement of the dialects the agent speaks; more paths beside it do not
    // switch that off.
    let corpus = paths.iter().any(|p| p.is_dir() && p.join("requirements.json").is_file());
    let not_judged = match (corpus, &opts.filter) {
        (true, None) => {
            report.judge_coverage(registry);
            None
        }
        (true, Some(filter)) => Some(format!("coverage not judged: --filter {filter} runs part of the corpus")),
        (false, _) => Some("coverage not judged: no corpus directory (one holding requirements.json) among the paths".to_owned()),
    };
    if let (Some(note), false) = (&not_judged, matches!(opts.format, ReportFormat::Text)) {
        eprintln!("{note}");
    }
    let text = match opts.format {
        ReportFormat::Text => report.text() + &report.requirements_text(registry) + &not_judged.map(|n| format!("\n{n}\n")).unwrap_or_default(),
        ReportFormat::Json => report.json_lines_with_requirements(registry),
        ReportFormat::Junit => report.junit(),
    };
    if let Err(code) = emit_or_fail(&text) {
        return code;
    }
    if report.passed() { ExitCode::SUCCESS } else { ExitCode::from(1) }
}
