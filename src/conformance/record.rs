//! `agentwire conformance record`: runs an agent in an isolated directory like the runner does,
//! forwards the host's frames from stdin to it and its frames to stdout, and writes the session
//! as a transcript that replays against it: volatile values become placeholders, ids the agent
//! chose become captures (and the host's later frames refer to them), the model's replies become
//! `model` lines.
//!
//! Input lines are forwarded one at a time once the agent has been quiet for `settle` and, unless
//! the line only makes sense during a run (steer, follow-up, abort, a UI or host-tool answer, a
//! wire `steer` / `cancel` / response), no run is in progress. So a piped script records the
//! same interleaving the runner reproduces, where each `in` line waits for the frames before it.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::error::{InputError, RecordError, RunError};
use crate::client::process::{isolate, GroupGuard};
use crate::recording::{Normalizer, Recording};
use crate::protocol::validate::SchemaDialect;

/// What to record.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// Transcript name.
    pub name: String,
    /// What the transcript pins down.
    pub description: String,
    /// Requirement ids it covers.
    pub requirements: Vec<String>,
    /// The dialect spoken.
    pub dialect: SchemaDialect,
    /// The agentwire binary to run.
    pub agentwire: PathBuf,
    /// Extra agentwire arguments (kept in the header); `--model-script FILE` becomes `model` lines.
    pub args: Vec<String>,
    /// Quiet time before the next input line is forwarded.
    pub settle: Duration,
}

/// The model script named by `--model-script` in `args`, as `model` reply values, and the args
/// without it (the runner supplies the script).
fn split_model_script(args: &[String]) -> Result<(Vec<Value>, Vec<String>), InputError> {
    let mut rest = Vec::new();
    let mut replies = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let file = if a == "--model-script" { it.next().cloned() } else { a.strip_prefix("--model-script=").map(str::to_owned) };
        match file {
            Some(f) => {
                let text = std::fs::read_to_string(&f).map_err(|source| InputError::Io { path: f.clone().into(), source })?;
                for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                    replies.push(serde_json::from_str(line).map_err(|source| InputError::Json { at: format!("{f}:{}", i + 1), source })?);
                }
            }
            None => rest.push(a.clone()),
        }
    }
    Ok((replies, rest))
}

/// Whether a host line is meant to arrive while a run is in progress.
fn belongs_mid_run(line: &str) -> bool {
    let Ok(frame) = serde_json::from_str::<Value>(line) else { return false };
    if frame.get("jsonrpc").is_some() {
        return frame.get("method").is_none() || matches!(frame["method"].as_str(), Some("steer" | "cancel"));
    }
    matches!(
        frame["type"].as_str(),
        Some("steer" | "follow_up" | "abort" | "abort_and_prompt" | "abort_retry" | "abort_bash" | "extension_ui_response" | "host_tool_update" | "host_tool_result")
    ) || frame.get("streamingBehavior").is_some()
}

/// A host line that starts a prompt whose end the recorder waits for (see [`ends_prompt`]).
fn starts_prompt(frame: &Value) -> bool {
    if frame.get("jsonrpc").is_some() {
        return frame["method"] == "prompt";
    }
    (frame["type"] == "prompt" && frame.get("streamingBehavior").is_none()) || frame["type"] == "abort_and_prompt"
}

/// Whether `frame` ends the prompt with request id `id`: its `prompt_result`, its failure
/// response (rpc), or its response (wire).
fn ends_prompt(frame: &Value, id: &Value) -> bool {
    if frame.get("id") != Some(id) {
        return false;
    }
    if frame.get("jsonrpc").is_some() {
        return frame.get("method").is_none();
    }
    frame["type"] == "prompt_result" || (frame["type"] == "response" && frame["success"] == false)
}

/// Tracks whether a run (rpc: `agent_start`…`agent_end`; wire: `TurnBegin`…`TurnEnd`) is on.
fn run_delta(frame: &Value) -> i32 {
    match (frame["type"].as_str(), frame["params"]["type"].as_str()) {
        (Some("agent_start"), _) | (_, Some("TurnBegin")) => 1,
        (Some("agent_end"), _) | (_, Some("TurnEnd")) => -1,
        _ => 0,
    }
}

enum Event {
    Host(String),
    HostEof,
    Agent(Value),
    AgentRaw(String),
    AgentEof,
}

/// Records a session: host frames from `input`, agent frames echoed to `echo`; returns the
/// transcript text.
pub fn record(options: &RecordOptions, input: impl BufRead + Send + 'static, echo: &mut dyn Write) -> Result<String, RecordError> {
    let (scripted, args) = split_model_script(&options.args)?;
    let temp = tempfile::tempdir().map_err(RunError::Setup)?;
    let (home, config, work) = (temp.path().join("home"), temp.path().join("config"), temp.path().join("work"));
    for d in [&home, &config, &work] {
        std::fs::create_dir_all(d).map_err(RunError::Setup)?;
    }
    let mode = if options.dialect == SchemaDialect::Rpc { "rpc" } else { "wire" };
    let mut command = Command::new(&options.agentwire);
    command.arg("--mode").arg(mode).arg("--cwd").arg(&work).arg("--config-dir").arg(&config);
    if !scripted.is_empty() {
        let script = temp.path().join("model-script.jsonl");
        std::fs::write(&script, scripted.iter().map(|r| format!("{r}\n")).collect::<String>()).map_err(RunError::Setup)?;
        command.arg("--model-script").arg(script);
    }
    command.args(&args).env("HOME", &home).current_dir(&work);
    for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "AGENTWIRE_CONFIG_DIR"] {
        command.env_remove(var);
    }
    isolate(&mut command);
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().map_err(RunError::Spawn)?;
    // Whatever ends the recording (an early error return included), nothing the agent started
    // stays behind.
    let _group = GroupGuard(child.id());
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().expect("piped");
    let agent_tx = tx.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let event = serde_json::from_str(&line).map_or(Event::AgentRaw(line), Event::Agent);
            if agent_tx.send(event).is_err() {
                return;
            }
        }
        let _ = agent_tx.send(Event::AgentEof);
    });
    std::thread::spawn(move || {
        for line in input.lines().map_while(Result::ok) {
            if tx.send(Event::Host(line)).is_err() {
                return;
            }
        }
        let _ = tx.send(Event::HostEof);
    });

    let mut recording = Recording::new(Normalizer::new(temp.path()));
    let mut queued: std::collections::VecDeque<Option<String>> = Default::default();
    let mut stdin = child.stdin.take();
    let mut last_frame = Instant::now();
    let mut agent_done = false;
    let mut runs = 0i32;
    // Prompts forwarded whose end has not been seen: between a prompt's response and its run's
    // first event the agent is quiet but not idle (a loaded machine makes that gap longer than
    // `settle`).
    let mut prompts: Vec<Value> = Vec::new();
    loop {
        // Forward the next host line once the agent has been quiet long enough (and idle, for
        // lines that do not belong in a run).
        let ready = match queued.front() {
            None => false,
            Some(next) => last_frame.elapsed() >= options.settle && ((runs <= 0 && prompts.is_empty()) || next.as_deref().is_some_and(belongs_mid_run)),
        };
        if ready {
            match queued.pop_front().flatten() {
                Some(line) => {
                    if let Some(frame) = recording.host(&line).filter(starts_prompt) {
                        if let Some(id) = frame.get("id") {
                            prompts.push(id.clone());
                        }
                    }
                    if let Some(s) = stdin.as_mut() {
                        let _ = s.write_all(format!("{line}\n").as_bytes()).and_then(|()| s.flush());
                    }
                }
                None => {
                    recording.close_stdin();
                    stdin.take();
                }
            }
            last_frame = Instant::now();
        }
        if agent_done {
            break;
        }
        match rx.recv_timeout(Duration::from_millis(10)) {
            Ok(Event::Host(line)) => queued.push_back(Some(line)),
            Ok(Event::HostEof) => queued.push_back(None),
            Ok(Event::Agent(frame)) => {
                let _ = writeln!(echo, "{frame}").and_then(|()| echo.flush());
                runs += run_delta(&frame);
                prompts.retain(|id| !ends_prompt(&frame, id));
                recording.agent(&frame);
                last_frame = Instant::now();
            }
            Ok(Event::AgentRaw(line)) => return Err(RunError::NotJson(line).into()),
            Ok(Event::AgentEof) => agent_done = true,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => agent_done = true,
        }
    }
    let code = child.wait().map_err(RunError::Setup)?.code();
    if let Some(code) = code {
        recording.exit(code);
    }

    let mut header = json!({"kind": "header", "name": options.name, "dialect": mode, "description": options.description, "requirements": options.requirements});
    if !args.is_empty() {
        header["args"] = json!(args);
    }
    Ok(recording.transcript(&header, &scripted))
}
