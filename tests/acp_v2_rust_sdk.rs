//! ACP v2 through the binary, driven by the official Rust crate `agent-client-protocol`
//! (5.2.0, feature `unstable_protocol_v2`) as a second client independent of the TypeScript SDK
//! (tests/acp-sdk/typescript/acp-v2.test.mjs): the crate spawns `agentwire --mode acp`, negotiates
//! v2 and reads every answer, update and permission request into its own v2 types.
//!
//! Beside what each test asserts, every line of either side is checked after the run
//! ([`check_lines`]): each frame agentwire wrote is valid against the vendored v2 schema
//! (`schema/acp/v2/schema.json`, SDK 2.4.0), and each notification and request it wrote reads
//! into the crate's types as a known variant, not the crate's catch-all for future ones.
//!
//! The crate's v2 types (`agent-client-protocol-schema` 1.17.0) are a later Preview revision than
//! the vendored schema: they add the client-provided system prompt (`systemPrompt` on
//! `session/new` and `session/resume`, the `session.systemPrompt` capability). agentwire does not
//! advertise it, so these tests do not send one; nothing else differs (docs/acp-mode.md).
//!
//! With the crate's features `unstable_session_fork`, `unstable_session_set_title` and
//! `unstable_end_turn_token_usage`, its types read the unstable surface agentwire implements
//! (`session/fork`, `session/set_title`, `usage` on `idle`; frames of those methods checked
//! against the vendored unstable schema).

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v2::{schema as v2, ActiveSession, ConnectionTo, InitializeOutcome, Responder};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, Client, Error, ErrorCode, LineDirection};
use agentwire::protocol::acp_v2::acp_v2_validator;
use common::acp::{dirs, slow_reply};
use serde_json::{json, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

/// How long one wait for agentwire may take before the test fails instead of hanging.
const WAIT: Duration = Duration::from_secs(15);

/// What the client answers a permission request with.
type Decide = fn(&v2::RequestPermissionRequest) -> v2::RequestPermissionResponse;

/// The updates and permission requests one connection received, in order.
struct Seen {
    updates: UnboundedReceiver<v2::UpdateSessionNotification>,
    asks: Arc<Mutex<Vec<v2::RequestPermissionRequest>>>,
}

impl Seen {
    async fn next(&mut self) -> v2::UpdateSessionNotification {
        tokio::time::timeout(WAIT, self.updates.recv())
            .await
            .expect("a session/update from agentwire in time")
            .expect("the connection is still open")
    }

    /// Updates of `session` up to and including the first `wanted` picks.
    async fn until(&mut self, session: &v2::SessionId, wanted: impl Fn(&v2::SessionUpdate) -> bool) -> Vec<v2::SessionUpdate> {
        let mut seen = Vec::new();
        loop {
            let n = self.next().await;
            assert_eq!(&n.session_id, session, "an update of another session: {n:?}");
            let done = wanted(&n.update);
            seen.push(n.update);
            if done {
                return seen;
            }
        }
    }

    /// Updates of `session` up to the idle `state_update`, and its stop reason.
    async fn until_idle(&mut self, session: &v2::SessionId) -> (Vec<v2::SessionUpdate>, Option<v2::StopReason>) {
        let seen = self.until(session, |u| matches!(u, v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(_)))).await;
        let Some(v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(idle))) = seen.last() else { unreachable!() };
        let reason = idle.stop_reason.clone();
        (seen, reason)
    }

    /// The updates the client has already received, without waiting for more.
    fn received(&mut self) -> Vec<v2::SessionUpdate> {
        std::iter::from_fn(|| self.updates.try_recv().ok()).map(|n| n.update).collect()
    }

    fn asks(&self) -> Vec<v2::RequestPermissionRequest> {
        self.asks.lock().unwrap().clone()
    }
}

/// One `agentwire --mode acp` process in `cwd`, with its config dir and offline model script.
struct Run<'a> {
    cwd: &'a Path,
    config: &'a Path,
    script: Vec<Value>,
    decide: Decide,
}

impl<'a> Run<'a> {
    fn new(cwd: &'a Path, config: &'a Path, script: &[Value]) -> Self {
        Run { cwd, config, script: script.to_vec(), decide: |_| v2::RequestPermissionResponse::new(v2::CancelledPermissionOutcome::new().into()) }
    }

    fn deciding(mut self, decide: Decide) -> Self {
        self.decide = decide;
        self
    }

    /// Spawns agentwire through the crate's `AcpAgent`, connects the crate's v2 client to it,
    /// runs `body`, closes the connection (the crate closes stdin and waits for the process; an
    /// exit other than 0 fails the run),
    /// then checks every line either side wrote.
    async fn drive<R>(self, body: impl AsyncFnOnce(ConnectionTo<Agent>, &mut Seen) -> Result<R, Error>) -> R {
        let mut config = AcpAgentConfig::new(env!("CARGO_BIN_EXE_agentwire")).args(["--mode", "acp"]).arg("--config-dir").arg(arg(self.config)).arg("--cwd").arg(arg(self.cwd));
        if !self.script.is_empty() {
            let path = self.config.join(format!("script-{}.jsonl", uuid::Uuid::new_v4()));
            std::fs::write(&path, self.script.iter().map(|v| format!("{v}\n")).collect::<String>()).unwrap();
            config = config.arg("--model-script").arg(arg(&path));
        }
        // The crate's launcher can set variables but not remove them; agentwire reads a blank
        // key as no key, so the machine's provider keys never reach the offline-model tests.
        for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AGENTWIRE_CONFIG_DIR"] {
            config = config.env(var, "");
        }
        let lines: Arc<Mutex<Vec<(LineDirection, String)>>> = Arc::default();
        let log = lines.clone();
        let agent = AcpAgent::new(config).with_debug(move |line, direction| log.lock().unwrap().push((direction, line.to_owned())));

        let (tx, updates) = unbounded_channel();
        let asks: Arc<Mutex<Vec<v2::RequestPermissionRequest>>> = Arc::default();
        let mut seen = Seen { updates, asks: asks.clone() };
        let decide = self.decide;
        let result = Client
            .v2()
            .name("agentwire-rust-sdk-test")
            .on_receive_notification(
                async move |n: v2::UpdateSessionNotification, _cx: ConnectionTo<Agent>| tx.send(n).map_err(Error::into_internal_error),
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |ask: v2::RequestPermissionRequest, responder: Responder<v2::RequestPermissionResponse>, _cx: ConnectionTo<Agent>| {
                    let answer = decide(&ask);
                    asks.lock().unwrap().push(ask);
                    responder.respond(answer)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(agent, async move |cx| body(cx, &mut seen).await)
            .await;
        let result = result.unwrap_or_else(|e| panic!("the crate's v2 client failed: {e:?}"));
        check_lines(&lines.lock().unwrap());
        result
    }
}

fn arg(path: &Path) -> String {
    path.to_str().expect("a UTF-8 temp path").to_owned()
}

/// Every frame either side wrote is valid against the vendored v2 schema (a response against the
/// method it answers), and every notification and request agentwire wrote reads into the crate's
/// v2 types as a variant the crate knows.
fn check_lines(lines: &[(LineDirection, String)]) {
    // Request id → method, for each side's requests, so the other side's answers are checked
    // against the method they answer.
    let (mut ours, mut theirs) = (std::collections::HashMap::new(), std::collections::HashMap::new());
    for (direction, line) in lines {
        let frame: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        let method = frame["method"].as_str();
        let id = frame.get("id").map(Value::to_string);
        match direction {
            LineDirection::Stdin => {
                let answered = id.as_ref().filter(|_| method.is_none()).and_then(|id| theirs.get(id)).map(String::as_str);
                acp_v2_validator().validate_inbound(&frame, answered).unwrap_or_else(|e| panic!("the crate wrote a frame the vendored v2 schema rejects: {e}\n{line}"));
                if let (Some(id), Some(method)) = (id, method) {
                    ours.insert(id, method.to_owned());
                }
            }
            LineDirection::Stdout => {
                let answered = id.as_ref().filter(|_| method.is_none()).and_then(|id| ours.get(id)).map(String::as_str);
                acp_v2_validator().validate_outbound(&frame, answered).unwrap_or_else(|e| panic!("agentwire wrote a frame the vendored v2 schema rejects: {e}\n{line}"));
                if let (Some(id), Some(method)) = (id, method) {
                    theirs.insert(id, method.to_owned());
                }
                let params = frame["params"].clone();
                match method {
                    Some("session/update") => {
                        let n: v2::UpdateSessionNotification = serde_json::from_value(params).unwrap_or_else(|e| panic!("the crate cannot read this update ({e}): {line}"));
                        assert!(!matches!(n.update, v2::SessionUpdate::Other(_)), "the crate reads a known update as an unknown one: {line}");
                    }
                    Some("session/request_permission") => {
                        let ask: v2::RequestPermissionRequest = serde_json::from_value(params).unwrap_or_else(|e| panic!("the crate cannot read this request ({e}): {line}"));
                        assert!(!matches!(ask.subject, Some(v2::RequestPermissionSubject::Other(_))), "{line}");
                    }
                    Some(other) => panic!("agentwire sent `{other}`, which this test does not expect: {line}"),
                    None => {}
                }
            }
            LineDirection::Stderr => {}
        }
    }
}

async fn initialize(cx: &ConnectionTo<Agent>) -> Result<v2::InitializeResponse, Error> {
    let request = v2::InitializeRequest::new(ProtocolVersion::V2, v2::Implementation::new("agentwire-rust-sdk-test", "1"));
    let outcome = cx.send_initialize(request).block_task().await?;
    let InitializeOutcome::Initialized(response) = outcome else { panic!("agentwire did not select version 2: {outcome:?}") };
    Ok(response)
}

async fn new_session(cx: &ConnectionTo<Agent>, cwd: &Path) -> Result<ActiveSession<Agent>, Error> {
    initialize(cx).await?;
    Ok(cx.build_session(cwd).start_session().block_task().await?.session)
}

fn text(block: &v2::ContentBlock) -> &str {
    match block {
        v2::ContentBlock::Text(t) => &t.text,
        other => panic!("not text: {other:?}"),
    }
}

/// The agent message chunks among `updates`, as (message id, text).
fn agent_chunks(updates: &[v2::SessionUpdate]) -> Vec<(v2::MessageId, String)> {
    updates
        .iter()
        .filter_map(|u| match u {
            v2::SessionUpdate::AgentMessageChunk(c) => Some((c.message_id.clone(), text(&c.content).to_owned())),
            _ => None,
        })
        .collect()
}

fn states(updates: &[v2::SessionUpdate]) -> Vec<&'static str> {
    updates
        .iter()
        .filter_map(|u| match u {
            v2::SessionUpdate::StateUpdate(v2::StateUpdate::Running(_)) => Some("running"),
            v2::SessionUpdate::StateUpdate(v2::StateUpdate::RequiresAction(_)) => Some("requires_action"),
            v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(_)) => Some("idle"),
            v2::SessionUpdate::StateUpdate(other) => panic!("a state agentwire does not send: {other:?}"),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_prompt_is_acknowledged_with_its_message_id_streamed_and_ends_idle_end_turn() {
    let (dir, config) = dirs();
    let script = [json!({"thinking": "pondering", "text": "Hello from the Rust crate", "chunkSize": 4})];
    Run::new(dir.path(), config.path(), &script)
        .drive(async |cx, seen| {
            let init = initialize(&cx).await?;
            assert_eq!(init.protocol_version, ProtocolVersion::V2);
            assert_eq!(init.info.name, "agentwire");
            let session_caps = init.capabilities.session.expect("the v2 session baseline is advertised");
            assert!(session_caps.delete.is_some(), "session/delete is advertised");
            let setup = cx.build_session(dir.path()).start_session().block_task().await?;
            assert!(setup.response.config_options.iter().any(|o| o.config_id.to_string() == "model"), "{:?}", setup.response.config_options);
            let session = setup.session;

            let ack = session.send_prompt("hi").block_task().await?;
            let (updates, reason) = seen.until_idle(session.session_id()).await;
            assert_eq!(reason, Some(v2::StopReason::EndTurn));
            assert_eq!(states(&updates), ["running", "idle"]);
            let user = updates.iter().find_map(|u| match u {
                v2::SessionUpdate::UserMessage(m) => Some(m),
                _ => None,
            });
            let user = user.expect("the prompt echoed as a user message");
            assert_eq!(user.message_id, ack.message_id, "the user message carries the acknowledged id");
            assert_eq!(user.content.value().expect("the user message's content").iter().map(text).collect::<String>(), "hi");
            let chunks = agent_chunks(&updates);
            assert!(chunks.len() > 1, "streamed in several chunks: {chunks:?}");
            assert_eq!(chunks.iter().map(|(_, t)| t.as_str()).collect::<String>(), "Hello from the Rust crate");
            assert!(chunks.iter().all(|(id, _)| *id == chunks[0].0), "one agent message: {chunks:?}");
            assert_ne!(chunks[0].0, ack.message_id, "the reply is a message of its own");
            let thought: String = updates
                .iter()
                .filter_map(|u| match u {
                    v2::SessionUpdate::AgentThoughtChunk(c) => Some(text(&c.content).to_owned()),
                    _ => None,
                })
                .collect();
            assert_eq!(thought, "pondering");
            Ok(())
        })
        .await;
}

#[tokio::test]
async fn a_write_asks_permission_with_its_diff_and_runs_once_allowed() {
    let (dir, config) = dirs();
    let script = [json!({"toolCalls": [{"id": "w1", "name": "write", "arguments": {"path": "a.txt", "content": "x\n"}}]}), json!({"text": "written"})];
    let allow_once: Decide = |ask| {
        let option = ask.options.iter().find(|o| o.kind == v2::PermissionOptionKind::AllowOnce).expect("an allow-once option");
        v2::RequestPermissionResponse::new(v2::RequestPermissionOutcome::Selected(v2::SelectedPermissionOutcome::new(option.option_id.clone())))
    };
    let target = dir.path().join("a.txt");
    Run::new(dir.path(), config.path(), &script)
        .deciding(allow_once)
        .drive(async |cx, seen| {
            let session = new_session(&cx, dir.path()).await?;
            session.send_prompt("write a.txt").block_task().await?;
            let (updates, reason) = seen.until_idle(session.session_id()).await;
            assert_eq!(reason, Some(v2::StopReason::EndTurn));
            assert_eq!(std::fs::read_to_string(&target).expect("the write ran"), "x\n");
            assert_eq!(states(&updates), ["running", "requires_action", "running", "idle"]);

            let asks = seen.asks();
            assert_eq!(asks.len(), 1, "{asks:?}");
            let ask = &asks[0];
            assert_eq!(&ask.session_id, session.session_id());
            assert_eq!(ask.options.iter().map(|o| o.option_id.to_string()).collect::<Vec<_>>(), ["allow_once", "allow_always", "reject_once", "reject_always"]);
            let Some(v2::RequestPermissionSubject::ToolCall(subject)) = &ask.subject else { panic!("a tool call subject: {ask:?}") };
            assert_eq!(subject.tool_call.tool_call_id.to_string(), "w1");
            let content = subject.tool_call.content.value().expect("the subject's content");
            let diff = content
                .iter()
                .find_map(|c| match c {
                    v2::ToolCallContent::Diff(d) => Some(d),
                    _ => None,
                })
                .expect("a diff in the permission's subject");
            let changed: Vec<PathBuf> = diff.changes.iter().map(change_path).collect();
            assert_eq!(changed, [target.clone()]);
            assert!(diff.patch.as_ref().expect("patch text").text.contains("+x"), "{diff:?}");

            let completed = updates.iter().any(|u| matches!(u, v2::SessionUpdate::ToolCallUpdate(t) if t.tool_call_id.to_string() == "w1" && t.status.value() == Some(&v2::ToolCallStatus::Completed)));
            assert!(completed, "the write's tool call ends completed: {updates:?}");
            Ok(())
        })
        .await;
}

fn change_path(change: &v2::DiffChange) -> PathBuf {
    match &change.operation {
        v2::DiffChangeOperation::Add(c) => c.path.clone().into_inner(),
        other => panic!("a new file's change is an add: {other:?}"),
    }
}

#[tokio::test]
async fn cancel_mid_stream_ends_idle_cancelled_and_close_ends_the_session() {
    let (dir, config) = dirs();
    let full = slow_reply()["text"].as_str().unwrap().to_owned();
    Run::new(dir.path(), config.path(), &[slow_reply(), slow_reply()])
        .drive(async |cx, seen| {
            let session = new_session(&cx, dir.path()).await?;
            let id = session.session_id().clone();
            session.send_prompt("go").block_task().await?;
            let mut updates = seen.until(&id, |u| matches!(u, v2::SessionUpdate::AgentMessageChunk(_))).await;
            session.cancel_active_work()?;
            let (rest, reason) = seen.until_idle(&id).await;
            updates.extend(rest);
            assert_eq!(reason, Some(v2::StopReason::Cancelled));
            let streamed: String = agent_chunks(&updates).into_iter().map(|(_, t)| t).collect();
            assert!(full.starts_with(&streamed) && streamed.len() < full.len(), "stopped mid-stream: {streamed:?}");

            // The session still takes a prompt; closing it mid-stream cancels that turn, whose
            // idle update comes before the close's answer.
            session.send_prompt("again").block_task().await?;
            seen.until(&id, |u| matches!(u, v2::SessionUpdate::AgentMessageChunk(_))).await;
            // The raw request, not `ActiveSession::close`, which reads -32002 as success. The
            // crate hands updates to the handler in the order they arrive, so the cancelled
            // turn's idle update is in by the time the close is answered.
            cx.send_request(v2::CloseSessionRequest::new(id.clone())).block_task().await?;
            let before_answer = seen.received();
            let last = before_answer.last().expect("the turn's updates before the close's answer");
            let v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(idle)) = last else { panic!("the close answered before the turn was idle: {before_answer:?}") };
            assert_eq!(idle.stop_reason, Some(v2::StopReason::Cancelled));
            let after = session.send_prompt("closed?").block_task().await.expect_err("a closed session takes no prompt");
            assert_eq!(after.code, ErrorCode::RESOURCE_NOT_FOUND, "{after:?}");
            // Closing or deleting what does not exist succeeds.
            cx.send_request(v2::CloseSessionRequest::new("never")).block_task().await?;
            cx.send_request(v2::DeleteSessionRequest::new("never")).block_task().await?;
            Ok(())
        })
        .await;
}

#[tokio::test]
async fn resume_from_the_start_in_a_fresh_process_replays_the_history_with_its_message_ids() {
    let (dir, config) = dirs();
    let (id, prompt_id, reply_id) = Run::new(dir.path(), config.path(), &[json!({"text": "first answer", "chunkSize": 5})])
        .drive(async |cx, seen| {
            let session = new_session(&cx, dir.path()).await?;
            let ack = session.send_prompt("remember this").block_task().await?;
            let (updates, _) = seen.until_idle(session.session_id()).await;
            let reply = agent_chunks(&updates).first().expect("a reply").0.clone();
            Ok((session.session_id().clone(), ack.message_id, reply))
        })
        .await;

    Run::new(dir.path(), config.path(), &[json!({"text": "second answer"})])
        .drive(async |cx, seen| {
            initialize(&cx).await?;
            let listed = cx.send_request(v2::ListSessionsRequest::new().cwd(dir.path())).block_task().await?;
            assert!(listed.sessions.iter().any(|s| s.session_id == id), "{listed:?}");
            let resume = v2::ResumeSessionRequest::new(id.clone(), dir.path()).replay_from(v2::ReplayFrom::Start(v2::ReplayFromStart::new()));
            let session = cx.resume_session_from(resume).start_session().block_task().await?.session;
            let replayed = seen.until(&id, |u| matches!(u, v2::SessionUpdate::StateUpdate(_))).await;
            let (user, agent) = replayed.iter().fold((None, None), |(user, agent), u| match u {
                v2::SessionUpdate::UserMessage(m) => (Some(m), agent),
                v2::SessionUpdate::AgentMessage(m) => (user, Some(m)),
                _ => (user, agent),
            });
            let user = user.expect("the user message replayed");
            assert_eq!(user.message_id, prompt_id, "the replayed prompt keeps its id");
            assert_eq!(user.content.value().expect("the replayed prompt's content").iter().map(text).collect::<String>(), "remember this");
            let agent = agent.expect("the reply replayed");
            assert_eq!(agent.message_id, reply_id, "the replayed reply keeps its id");
            assert_eq!(agent.content.value().expect("the replayed reply's content").iter().map(text).collect::<String>(), "first answer");
            assert!(matches!(replayed.last(), Some(v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(_)))), "{replayed:?}");

            let next = session.send_prompt("and now").block_task().await?;
            assert!(next.message_id != prompt_id && next.message_id != reply_id, "a new message: {next:?}");
            let (updates, reason) = seen.until_idle(&id).await;
            assert_eq!(reason, Some(v2::StopReason::EndTurn));
            assert_eq!(agent_chunks(&updates).into_iter().map(|(_, t)| t).collect::<String>(), "second answer");

            cx.send_request(v2::DeleteSessionRequest::new(id.clone())).block_task().await?;
            let listed = cx.send_request(v2::ListSessionsRequest::new().cwd(dir.path())).block_task().await?;
            assert!(!listed.sessions.iter().any(|s| s.session_id == id), "deleted: {listed:?}");
            Ok(())
        })
        .await;
}

#[tokio::test]
async fn fork_title_and_usage_read_into_the_crates_unstable_types() {
    let (dir, config) = dirs();
    let script = [json!({"text": "one", "usage": {"input": 12, "output": 4}})];
    let (source, fork) = Run::new(dir.path(), config.path(), &script)
        .drive(async |cx, seen| {
            let init = initialize(&cx).await?;
            let caps = init.capabilities.session.expect("the v2 session baseline is advertised");
            assert!(caps.fork.is_some() && caps.title.is_some(), "{caps:?}");
            let session = cx.build_session(dir.path()).start_session().block_task().await?.session;
            session.send_prompt("first").block_task().await?;
            let (updates, reason) = seen.until_idle(session.session_id()).await;
            assert_eq!(reason, Some(v2::StopReason::EndTurn));
            let Some(v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(idle))) = updates.last() else { unreachable!() };
            let usage = idle.usage.as_deref().expect("the run's usage");
            assert_eq!((usage.input_tokens, usage.output_tokens, usage.total_tokens), (12, 4, 16));
            let forked = cx.send_request(v2::ForkSessionRequest::new(session.session_id().clone(), dir.path().to_path_buf())).block_task().await?;
            assert_ne!(&forked.session_id, session.session_id());
            let titled = cx.send_request(v2::SetSessionTitleRequest::new(forked.session_id.clone(), " The fork ")).block_task().await?;
            assert_eq!(titled.title, "The fork");
            Ok((session.session_id().clone(), forked.session_id))
        })
        .await;
    // A new process lists the fork beside its source, with its title.
    Run::new(dir.path(), config.path(), &[])
        .drive(async |cx, _seen| {
            initialize(&cx).await?;
            let list = cx.send_request(v2::ListSessionsRequest::new()).block_task().await?;
            let title = |id: &v2::SessionId| list.sessions.iter().find(|s| &s.session_id == id).map(|s| s.title.clone());
            assert_eq!(title(&fork), Some(Some("The fork".to_owned())), "{list:?}");
            assert!(title(&source).is_some(), "{list:?}");
            Ok(())
        })
        .await;
}
