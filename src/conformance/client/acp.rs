//! The scripted ACP v1 agent that `agentwire conformance client --dialect acp` hands to the client
//! under test (`{{agent}}`): it answers the client's handshake, plays one scenario on the
//! prompt, validates every frame the client writes against the ACP schema, and writes its
//! verdicts to the report file as it goes.
//!
//! Plain blocking code: one thread reads stdin into a channel, the scenario waits on it with
//! deadlines, so a client that stops answering is a verdict, not a hang.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::inbox::{write, ClientLines, Framing, Incoming};
use super::report::{ReportWriter, Verdict};
use super::scenarios::AcpScenario;
use crate::protocol::acp::{acp_validator, AcpValidator};
use crate::protocol::acp_v2::acp_v2_validator;

/// The session id the scripted agent hands out.
const SESSION: &str = "sess-conformance-1";

/// The scripted agent of one scenario.
#[derive(Debug)]
pub struct ScriptedAcpAgent {
    scenario: AcpScenario,
    /// The client's frames (and whether it closed the agent's input, its first invalid one).
    input: ClientLines,
    report: ReportWriter,
    /// How long to wait for the client's next step.
    wait: Duration,
    next_id: u64,
    /// Requests sent to the client and not answered yet: id (as JSON text) → method.
    pending: HashMap<String, String>,
    /// Answers to our requests, by id, read while waiting for something else.
    answers: HashMap<String, Value>,
    /// What the client advertised in `initialize`.
    capabilities: Value,
    /// The `cwd` of `session/new`.
    cwd: Option<String>,
    /// The id of the `session/prompt` request, once it came.
    prompt_id: Option<Value>,
    cancelled: bool,
    /// Responses to ids this agent never used (a reply to a notification, or a made-up id).
    stray: Vec<Value>,
    /// Requests of ours already answered (id as JSON text): a second response to one is a
    /// duplicate.
    answered: std::collections::HashSet<String>,
    /// Second responses to a request already answered.
    duplicates: Vec<Value>,
    /// Whether the `session/new` response went out (a prompt before it names a session the
    /// client cannot know yet).
    session_answered: bool,
    /// A `session/prompt` that came before the `session/new` response.
    early_prompt: Option<Value>,
    /// A prompt read while waiting for something else, kept for the scenario.
    stashed_prompt: Option<Value>,
    /// A `session/cancel` sent as a request (with an id).
    cancel_request: Option<Value>,
    /// Whether any `session/prompt` request came.
    prompt_seen: bool,
    /// The ACP version spoken: 2 when the client's `initialize` asks for 2 or later, else 1.
    version: u64,
    /// Whether the downgrade scenario answered a v2 client with v1.
    downgraded: bool,
}

impl ScriptedAcpAgent {
    /// An agent for `scenario` reading this process's stdin; verdicts go to `report`.
    pub fn new(scenario: AcpScenario, report: ReportWriter, wait: Duration) -> Self {
        Self {
            scenario,
            input: ClientLines::stdin(Framing::Lines),
            report,
            wait,
            next_id: 0,
            pending: HashMap::new(),
            answers: HashMap::new(),
            capabilities: Value::Null,
            cwd: None,
            prompt_id: None,
            cancelled: false,
            stray: Vec::new(),
            answered: std::collections::HashSet::new(),
            duplicates: Vec::new(),
            session_answered: false,
            early_prompt: None,
            stashed_prompt: None,
            cancel_request: None,
            prompt_seen: false,
            version: 1,
            downgraded: false,
        }
    }

    /// Plays the scenario to its end. The process exits after (the caller returns).
    pub fn run(mut self) {
        let played = self.play();
        if played.is_some() {
            self.wait_for_eof();
        }
        match (self.downgraded, self.input.invalid.take()) {
            // After the downgrade a frame invalid as v1 is the version's fault, charged there.
            (true, Some(detail)) => self.report.check("ACP-CLIENT-VERSION-1", Verdict::Fail, format!("after a v1 answer to its v2 initialize, a frame that is not v1: {detail}")),
            (true, None) if self.prompt_seen => self.report.check("ACP-CLIENT-VERSION-1", Verdict::Pass, "after a v1 answer to its v2 initialize the client spoke v1"),
            (true, None) => self.report.check("ACP-CLIENT-VERSION-1", Verdict::Pass, "after a v1 answer to its v2 initialize the client sent nothing more (it disconnected or stopped)"),
            (false, Some(detail)) => self.report.check("ACP-CLIENT-SCHEMA-1", Verdict::Fail, detail),
            (false, None) => self.report.check("ACP-CLIENT-SCHEMA-1", Verdict::Pass, "every frame validated"),
        }
        if self.scenario == AcpScenario::Downgrade && !self.downgraded {
            self.report.check("ACP-CLIENT-VERSION-1", Verdict::NotApplicable, "the client asked for v1");
        }
        match (self.duplicates.first(), self.stray.first()) {
            (Some(frame), _) => self.report.check("ACP-CLIENT-RPC-1", Verdict::Fail, format!("a second response to a request already answered: {frame}")),
            (None, Some(frame)) => self.report.check("ACP-CLIENT-RPC-1", Verdict::Fail, format!("a response to no request of the agent: {frame}")),
            (None, None) => self.report.check("ACP-CLIENT-RPC-1", Verdict::Pass, "one response per request of the agent, none to anything else"),
        }
        match (&self.early_prompt, self.session_answered) {
            (Some(frame), _) => self.report.check("ACP-CLIENT-ORDER-2", Verdict::Fail, format!("session/prompt before the session/new response: {frame}")),
            (None, true) if self.prompt_seen => self.report.check("ACP-CLIENT-ORDER-2", Verdict::Pass, "session/prompt came after the session/new response"),
            (None, _) => {}
        }
        if let Some(frame) = self.cancel_request.take() {
            self.report.check("ACP-CLIENT-CANCEL-3", Verdict::Fail, format!("session/cancel sent as a request (with an id), not a notification: {frame}"));
        }
        self.report.event("exit");
    }

    fn play(&mut self) -> Option<()> {
        self.handshake()?;
        let setup = match self.scenario {
            AcpScenario::Load if self.version < 2 => self.expect_request_of(&["session/new", "session/load"]),
            _ => self.expect_request_of(&["session/new"]),
        };
        if self.scenario == AcpScenario::Extensions {
            match &setup {
                Some(_) => self.report.check("ACP-CLIENT-EXT-4", Verdict::Pass, "the client went on to session/new past an auth method of an unknown type"),
                None => self.report.check("ACP-CLIENT-EXT-4", Verdict::Fail, format!("no session/new after an initialize result whose authMethods holds an unknown type ({})", if self.input.eof { "the client closed the agent's input" } else { "nothing within the wait" })),
            }
        }
        let session_new = setup?;
        let loading = session_new["method"] == "session/load";
        if self.scenario == AcpScenario::Load && !loading {
            let why = if self.version >= 2 { "ACP v2 has no session/load (it resumes with session/resume)" } else { "the client created a session instead of loading one" };
            self.report.check("ACP-CLIENT-LOAD-1", Verdict::NotApplicable, why);
        }
        self.cwd = session_new["params"]["cwd"].as_str().map(str::to_owned);
        if self.scenario == AcpScenario::EarlyUpdate {
            self.text("an update before the session/new response");
        }
        // A moment before the response: a client that prompts without waiting for it shows
        // here (its prompt is kept and played as the turn's).
        let settle = Instant::now() + Duration::from_millis(300);
        while self.stashed_prompt.is_none() && !self.input.eof && Instant::now() < settle {
            if let Incoming::Frame(f) = self.next(settle.saturating_duration_since(Instant::now())) {
                match (f["method"].as_str(), f.get("id")) {
                    (Some("session/prompt"), Some(_)) => self.stashed_prompt = Some(f),
                    (Some(_), _) => self.answer_other(&f),
                    (None, _) => {}
                }
            }
        }
        if loading {
            // The v1 schema's LoadSessionResponse: no sessionId (the client named it).
            self.respond(&session_new["id"], "session/load", json!({}));
        } else {
            let mut result = json!({"sessionId": SESSION});
            if self.scenario == AcpScenario::Extensions {
                result["_meta"] = json!({"agentwire.dev/probe": {"nested": [1, 2]}});
            }
            self.respond(&session_new["id"], "session/new", result);
        }
        let prompted = self.expect_request("session/prompt");
        if loading {
            let loaded = &session_new["params"]["sessionId"];
            match &prompted {
                Some(p) if p["params"]["sessionId"] == *loaded => self.report.check("ACP-CLIENT-LOAD-1", Verdict::Pass, "the client prompted the session it loaded, answered without a sessionId"),
                Some(p) => self.report.check("ACP-CLIENT-LOAD-1", Verdict::Fail, format!("the client prompted another session than the one it loaded ({loaded}): {p}")),
                None => self.report.check("ACP-CLIENT-LOAD-1", Verdict::Fail, format!("no session/prompt after a session/load answered `{{}}` (a LoadSessionResponse has no sessionId){}", if self.input.eof { ": the client closed the agent's input" } else { "" })),
            }
        }
        let Some(prompt) = prompted else {
            let why = match self.input.eof {
                true => "the client closed the agent's input before sending session/prompt",
                false => "the client sent no session/prompt",
            };
            if self.scenario == AcpScenario::EarlyUpdate {
                let detail = match self.input.eof {
                    true => "the client closed the agent's input after a session/update that came before the session/new response, without prompting".to_owned(),
                    false => format!("no session/prompt within {} s of a session/update that came before the session/new response", self.wait.as_secs()),
                };
                self.report.check("ACP-CLIENT-ORDER-1", Verdict::Fail, detail);
            } else {
                for id in self.scenario.requirements() {
                    self.report.check(id, Verdict::NotTestable, why);
                }
            }
            return None;
        };
        self.prompt_id = Some(prompt["id"].clone());
        if self.version >= 2 {
            // v2 answers the prompt at once with the user message's id; the run's end is an
            // `idle` state update.
            self.prompt_id = None;
            self.respond(&prompt["id"], "session/prompt", json!({"messageId": "msg-user-1"}));
            self.update(json!({"sessionUpdate": "state_update", "state": "running"}));
        }
        match self.scenario {
            AcpScenario::Initialize => self.plain_turn(),
            AcpScenario::EarlyUpdate => {
                self.report.check("ACP-CLIENT-ORDER-1", Verdict::Pass, "the client prompted after an update that preceded the session/new response");
                self.plain_turn()
            }
            AcpScenario::Extensions => self.extensions(),
            AcpScenario::Permission => self.permission(),
            AcpScenario::Cancel => self.cancel(),
            AcpScenario::FsTerminal => self.fs_terminal(),
            AcpScenario::Load | AcpScenario::Downgrade => self.plain_turn(),
            AcpScenario::AgentExit => {
                self.text("the agent exits now, in the middle of the turn");
                self.report.event("agent-exit");
                // The process ends without answering: the client must notice its output closing.
                None
            }
        }
    }

    // --- the handshake -------------------------------------------------------------------------

    fn handshake(&mut self) -> Option<()> {
        let first = match self.next(self.wait) {
            Incoming::Frame(f) => f,
            Incoming::Eof | Incoming::Timeout => {
                self.report.check("ACP-CLIENT-INIT-1", Verdict::Fail, "the client wrote nothing (no initialize request)");
                return None;
            }
        };
        let is_init = first["method"] == "initialize" && first.get("id").is_some();
        if !is_init {
            self.report.check("ACP-CLIENT-INIT-1", Verdict::Fail, format!("the first message is not an initialize request: {first}"));
            self.answer_other(&first);
            return None;
        }
        let version = &first["params"]["protocolVersion"];
        // v1's `clientCapabilities` may be left out: the schema gives it a default (no fs, no
        // terminal), which is what an absent one advertises. v2 names it `capabilities`.
        let caps_field = if self.version >= 2 { "capabilities" } else { "clientCapabilities" };
        match (version.as_u64(), first["params"].get(caps_field)) {
            (Some(_), None) => self.report.check("ACP-CLIENT-INIT-1", Verdict::Pass, format!("initialize with protocolVersion {version}, no {caps_field} (the schema's default: none)")),
            (Some(_), Some(caps)) if caps.is_object() => self.report.check("ACP-CLIENT-INIT-1", Verdict::Pass, format!("initialize with protocolVersion {version}")),
            _ => self.report.check("ACP-CLIENT-INIT-1", Verdict::Fail, format!("initialize without an integer protocolVersion, or with a {caps_field} that is not an object: {first}")),
        }
        self.report.event(&format!("{}{}", super::ACP_VERSION_EVENT, version.as_u64().unwrap_or(0)));
        self.capabilities = first["params"][caps_field].clone();
        if self.scenario == AcpScenario::Downgrade && self.version >= 2 {
            // An agent that knows only v1 answers with its latest version; the client's next
            // frames are judged as v1.
            self.version = 1;
            self.downgraded = true;
        }
        let info = json!({"name": "agentwire-scripted-agent", "version": env!("CARGO_PKG_VERSION")});
        let (mut result, capabilities) = match self.version {
            2.. => (json!({"protocolVersion": 2, "info": info, "capabilities": {"session": {}}, "authMethods": []}), "capabilities"),
            _ => (
                json!({
                    "protocolVersion": 1,
                    "agentCapabilities": {"loadSession": self.scenario == AcpScenario::Load, "promptCapabilities": {"image": false, "audio": false, "embeddedContext": false}},
                    "authMethods": [],
                    "agentInfo": info,
                }),
                "agentCapabilities",
            ),
        };
        if self.scenario == AcpScenario::Extensions {
            // A newer agent's capability and metadata: a client reads what it knows. An auth
            // method of a kind this client's schema does not name (not needed: no
            // `authenticate` follows) is one of them.
            result[capabilities]["_meta"] = json!({"agentwire.dev/future": true});
            result["_meta"] = json!({"agentwire.dev/probe": "initialize"});
            let id = if self.version >= 2 { "methodId" } else { "id" };
            result["authMethods"] = json!([{id: "agentwire-future", "name": "A sign-in of a later kind", "type": "agentwire_future_kind", "description": "an auth method variant the client does not know"}]);
        }
        self.respond(&first["id"], "initialize", result);
        Some(())
    }

    // --- the scenarios -------------------------------------------------------------------------

    fn plain_turn(&mut self) -> Option<()> {
        self.text("conformance: hello");
        self.finish_prompt("end_turn");
        Some(())
    }

    fn extensions(&mut self) -> Option<()> {
        self.notify("_agentwire/notice", json!({"text": "an extension notification", "_meta": {"agentwire.dev/probe": 1}}));
        let mut update = self.chunk(json!({"type": "text", "text": "with _meta", "_meta": {"agentwire.dev/probe": 2}}));
        update["_meta"] = json!({"agentwire.dev/probe": 3});
        self.send(json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION, "update": update, "_meta": {"agentwire.dev/probe": 4}}}));
        let probe = self.request("_agentwire/probe", json!({"question": "do you know this method?"}));
        match self.await_answer(&probe) {
            Some(answer) => self.report.check("ACP-CLIENT-EXT-1", Verdict::Pass, format!("answered: {answer}")),
            None if self.input.eof => self.report.check("ACP-CLIENT-EXT-1", Verdict::Fail, "the client closed the agent's input instead of answering an unknown request"),
            None => self.report.check("ACP-CLIENT-EXT-1", Verdict::Fail, format!("no response to the unknown request `_agentwire/probe` within {} s", self.wait.as_secs())),
        }
        if self.input.eof {
            self.report.check("ACP-CLIENT-EXT-3", Verdict::Fail, "the client closed the agent's input during a turn with extension frames, before the prompt's answer");
            self.report.check("ACP-CLIENT-EXT-5", Verdict::NotTestable, "the client left before the update naming an unknown terminal");
            self.report.check("ACP-CLIENT-EXT-2", Verdict::NotTestable, "the client left before the turn ended");
            return None;
        }
        // A tool call embedding a terminal this client never created (the field's case: a whole
        // update dropped for it), then text in the same turn.
        let kind = if self.version >= 2 { "tool_call_update" } else { "tool_call" };
        self.update(json!({"sessionUpdate": kind, "toolCallId": "call-term", "title": "A terminal the client never created", "kind": "execute", "status": "in_progress",
            "content": [{"type": "terminal", "terminalId": "term-never-created"}]}));
        self.text("conformance: extensions tolerated?");
        self.finish_prompt("end_turn");
        // A stray reply shows up on the next read at the latest (the client's EOF follows it).
        self.wait_for_eof();
        match self.stray.first() {
            Some(frame) => self.report.check("ACP-CLIENT-EXT-2", Verdict::Fail, format!("a response to no request of the agent (an answered notification?): {frame}")),
            None => self.report.check("ACP-CLIENT-EXT-2", Verdict::Pass, "no notification was answered"),
        }
        self.report.check("ACP-CLIENT-EXT-3", Verdict::Pass, "the client stayed for the prompt's answer");
        self.report.check("ACP-CLIENT-EXT-5", Verdict::Pass, "the client stayed for the prompt's answer past an update naming a terminal it never created");
        Some(())
    }

    fn permission(&mut self) -> Option<()> {
        self.tool_call("call-1");
        let offered = [("always", "allow_always", "Always allow"), ("once", "allow_once", "Allow once"), ("reject", "reject_once", "Reject")];
        let first = self.ask_permission("call-1", &offered)?;
        let reversed = [offered[2], offered[1], offered[0]];
        let second = self.ask_permission("call-1", &reversed)?;
        let kind = |choice: &Option<String>| choice.as_ref().and_then(|id| offered.iter().find(|o| o.0 == id)).map(|o| o.1);
        match (kind(&first), kind(&second)) {
            (Some(a), Some(b)) if a != b => self.report.check(
                "ACP-CLIENT-PERM-2",
                Verdict::Fail,
                format!("the same options in reverse order got a different kind: `{a}` when offered first-to-last, `{b}` reversed (the choice follows the position)"),
            ),
            (a, b) => self.report.check("ACP-CLIENT-PERM-2", Verdict::Pass, format!("the same choice both times: {} / {}", a.unwrap_or("cancelled"), b.unwrap_or("cancelled"))),
        }
        self.tool_call_done("call-1", "failed");
        self.finish_prompt("end_turn");
        Some(())
    }

    /// One permission request; the option id chosen (`None`: cancelled). Judges PERM-1.
    fn ask_permission(&mut self, call: &str, options: &[(&str, &str, &str); 3]) -> Option<Option<String>> {
        let options: Vec<Value> = options.iter().map(|(id, kind, name)| json!({"optionId": id, "kind": kind, "name": name})).collect();
        let params = self.permission_params(call, json!(options));
        let id = self.request("session/request_permission", params);
        self.report.event("ask");
        let Some(answer) = self.await_answer(&id) else {
            self.report.check("ACP-CLIENT-PERM-1", Verdict::Fail, format!("session/request_permission not answered within {} s", self.wait.as_secs()));
            return None;
        };
        if answer.get("error").is_some() {
            // A response, so the request is not left hanging; but no decision: an error is
            // not the `cancelled` outcome and an agent must not read it as one.
            self.report.check("ACP-CLIENT-PERM-1", Verdict::Pass, "answered (with an error)");
            self.report.check("ACP-CLIENT-PERM-3", Verdict::Fail, format!("an error instead of the user's decision (`selected` or `cancelled`): {answer}"));
            return Some(None);
        }
        self.report.check("ACP-CLIENT-PERM-3", Verdict::Pass, "answered with an outcome");
        let outcome = &answer["result"]["outcome"];
        match outcome["outcome"].as_str() {
            Some("cancelled") => {
                self.report.check("ACP-CLIENT-PERM-1", Verdict::Pass, "answered `cancelled`");
                Some(None)
            }
            Some("selected") => {
                let chosen = outcome["optionId"].as_str().unwrap_or_default().to_owned();
                if options.iter().any(|o| o["optionId"] == chosen.as_str()) {
                    self.report.check("ACP-CLIENT-PERM-1", Verdict::Pass, format!("selected the offered option `{chosen}`"));
                    Some(Some(chosen))
                } else {
                    self.report.check("ACP-CLIENT-PERM-1", Verdict::Fail, format!("selected an option that was not offered: {answer}"));
                    Some(None)
                }
            }
            _ => {
                self.report.check("ACP-CLIENT-PERM-1", Verdict::Fail, format!("no outcome `cancelled` or `selected`: {answer}"));
                Some(None)
            }
        }
    }

    fn cancel(&mut self) -> Option<()> {
        self.tool_call("call-1");
        let params = self.permission_params("call-1", json!([{"optionId": "once", "kind": "allow_once", "name": "Allow once"}, {"optionId": "reject", "kind": "reject_once", "name": "Reject"}]));
        let id = self.request("session/request_permission", params);
        // Asks the harness to interrupt the client (SIGINT) while the request is pending.
        self.report.event("interrupt");
        let deadline = Instant::now() + self.wait;
        let (mut answer, mut answered_first) = (None, false);
        while !self.cancelled && !self.input.eof && Instant::now() < deadline {
            self.pump(deadline);
            if answer.is_none() {
                answer = self.answers.remove(&id_key(&id));
                // One frame a pump: the answer was read before any session/cancel.
                answered_first = answer.is_some() && !self.cancelled;
            }
        }
        if !self.cancelled {
            let why = match self.input.eof {
                true => "the client ended when interrupted, without session/cancel",
                false => "the client sent no session/cancel when interrupted",
            };
            self.report.check("ACP-CLIENT-CANCEL-1", Verdict::NotApplicable, why);
            self.report.check("ACP-CLIENT-CANCEL-2", Verdict::NotApplicable, why);
            self.report.check("ACP-CLIENT-CANCEL-3", Verdict::NotApplicable, why);
            return None;
        }
        if self.cancel_request.is_none() {
            self.report.check("ACP-CLIENT-CANCEL-3", Verdict::Pass, "session/cancel sent as a notification");
        }
        if self.version >= 2 && answer.is_none() {
            // v2: the agent cancels its own pending request; the client answers it `cancelled`.
            self.notify("$/cancel_request", json!({"requestId": id}));
        }
        let answer = match answer {
            Some(a) => Some(a),
            None => self.await_answer(&id),
        };
        match answer {
            Some(a) if answered_first => self.report.check("ACP-CLIENT-CANCEL-1", Verdict::NotTestable, format!("the client answered the permission request before it cancelled, so none was pending: {a}")),
            Some(a) if a["result"]["outcome"]["outcome"] == "cancelled" => self.report.check("ACP-CLIENT-CANCEL-1", Verdict::Pass, "the pending permission request was answered `cancelled`"),
            Some(a) => self.report.check("ACP-CLIENT-CANCEL-1", Verdict::Fail, format!("after session/cancel the pending permission request was answered: {a}")),
            None => self.report.check("ACP-CLIENT-CANCEL-1", Verdict::Fail, "after session/cancel the pending permission request was never answered"),
        }
        // Final updates after the cancel, then the answer, a moment later.
        self.tool_call_done("call-1", "failed");
        self.text("an update after session/cancel");
        let settle = Instant::now() + Duration::from_millis(300);
        while !self.input.eof && Instant::now() < settle {
            self.pump(settle);
        }
        if self.input.eof {
            self.report.check("ACP-CLIENT-CANCEL-2", Verdict::Fail, "the client closed the agent's input after session/cancel, before the prompt's answer (`cancelled`)");
            return None;
        }
        self.finish_prompt("cancelled");
        self.report.check("ACP-CLIENT-CANCEL-2", Verdict::Pass, "the client stayed until the prompt's answer");
        Some(())
    }

    fn fs_terminal(&mut self) -> Option<()> {
        if self.version >= 2 {
            for id in ["ACP-CLIENT-FS-1", "ACP-CLIENT-FS-2", "ACP-CLIENT-TERM-1"] {
                self.report.check(id, Verdict::NotApplicable, "ACP v2 has no client fs/* or terminal/* methods");
            }
            self.finish_prompt("end_turn");
            return Some(());
        }
        let caps = self.capabilities.clone();
        let dir = self.cwd.clone().unwrap_or_else(|| std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default());
        if caps["fs"]["readTextFile"] == true {
            let path = format!("{dir}/conformance-read.txt");
            let _ = std::fs::write(&path, "read me\n");
            let id = self.request("fs/read_text_file", json!({"sessionId": SESSION, "path": path}));
            self.judge_result("ACP-CLIENT-FS-1", "fs/read_text_file", &id, |r| r.get("content").is_some_and(Value::is_string));
        } else {
            self.report.check("ACP-CLIENT-FS-1", Verdict::NotApplicable, "the client does not advertise fs.readTextFile");
        }
        if caps["fs"]["writeTextFile"] == true {
            let id = self.request("fs/write_text_file", json!({"sessionId": SESSION, "path": format!("{dir}/conformance-written.txt"), "content": "written\n"}));
            self.judge_result("ACP-CLIENT-FS-2", "fs/write_text_file", &id, Value::is_object);
        } else {
            self.report.check("ACP-CLIENT-FS-2", Verdict::NotApplicable, "the client does not advertise fs.writeTextFile");
        }
        if caps["terminal"] == true {
            self.terminal();
        } else {
            self.report.check("ACP-CLIENT-TERM-1", Verdict::NotApplicable, "the client does not advertise terminal");
        }
        if self.input.eof {
            return None;
        }
        self.finish_prompt("end_turn");
        Some(())
    }

    fn terminal(&mut self) {
        let id = self.request("terminal/create", json!({"sessionId": SESSION, "command": "echo", "args": ["conformance"]}));
        let Some(created) = self.await_answer(&id) else {
            return self.report.check("ACP-CLIENT-TERM-1", Verdict::Fail, format!("terminal/create not answered within {} s", self.wait.as_secs()));
        };
        let Some(terminal) = created["result"]["terminalId"].as_str().map(str::to_owned) else {
            let verdict = if created.get("error").is_some() { Verdict::NotTestable } else { Verdict::Fail };
            return self.report.check("ACP-CLIENT-TERM-1", verdict, format!("terminal/create answered without a terminalId: {created}"));
        };
        let params = json!({"sessionId": SESSION, "terminalId": terminal});
        for (method, valid) in [("terminal/wait_for_exit", Value::is_object as fn(&Value) -> bool), ("terminal/output", |r: &Value| r.get("output").is_some_and(Value::is_string)), ("terminal/release", Value::is_object)] {
            let id = self.request(method, params.clone());
            match self.await_answer(&id) {
                Some(a) if a.get("error").is_some() || a.get("result").is_some_and(valid) => {}
                Some(a) => return self.report.check("ACP-CLIENT-TERM-1", Verdict::Fail, format!("{method} answered with a result that is not its response object: {a}")),
                None => return self.report.check("ACP-CLIENT-TERM-1", Verdict::Fail, format!("{method} not answered within {} s", self.wait.as_secs())),
            }
        }
        self.report.check("ACP-CLIENT-TERM-1", Verdict::Pass, "create, wait_for_exit, output and release answered with their response objects");
    }

    /// Judges the answer to `id`: an error, or a result `valid` accepts.
    fn judge_result(&mut self, requirement: &str, method: &str, id: &Value, valid: impl Fn(&Value) -> bool) {
        match self.await_answer(id) {
            Some(a) if a.get("error").is_some() => self.report.check(requirement, Verdict::Pass, format!("{method} refused with an error: {}", a["error"])),
            Some(a) if a.get("result").is_some_and(&valid) => self.report.check(requirement, Verdict::Pass, format!("{method} answered {}", a["result"])),
            Some(a) => self.report.check(requirement, Verdict::Fail, format!("{method} answered with a result that is not its response object: {a}")),
            None => self.report.check(requirement, Verdict::Fail, format!("{method} not answered within {} s", self.wait.as_secs())),
        }
    }

    // --- frames out ----------------------------------------------------------------------------

    fn send(&mut self, frame: Value) {
        self.send_answering(frame, None);
    }

    /// Sends a frame; `answered`: the method of the client's request it answers.
    fn send_answering(&mut self, frame: Value, answered: Option<&str>) {
        // A frame of ours the schema refuses is the harness's fault: said so, never charged to
        // the client. Extension methods have no schema.
        if !frame["method"].as_str().is_some_and(|m| m.starts_with('_')) {
            if let Err(e) = self.validator().validate_outbound(&frame, answered) {
                self.report.check("HARNESS", Verdict::Fail, format!("the scripted agent wrote an invalid frame ({e}): {frame}"));
            }
        }
        write(&mut self.report, &frame);
    }

    fn respond(&mut self, id: &Value, method: &str, result: Value) {
        if method == "session/new" || method == "session/load" {
            self.session_answered = true;
        }
        self.send_answering(json!({"jsonrpc": "2.0", "id": id, "result": result}), Some(method));
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn update(&mut self, update: Value) {
        self.notify("session/update", json!({"sessionId": SESSION, "update": update}));
    }

    /// `session/request_permission` params of the version spoken (v2 titles the request itself
    /// and has no `toolCall`).
    fn permission_params(&self, call: &str, options: Value) -> Value {
        match self.version {
            2.. => json!({"sessionId": SESSION, "title": "Run `touch conformance.txt`", "options": options}),
            _ => json!({"sessionId": SESSION, "toolCall": {"toolCallId": call, "title": "Run `touch conformance.txt`", "kind": "execute"}, "options": options}),
        }
    }

    /// The validator of the version spoken.
    fn validator(&self) -> &'static AcpValidator {
        match self.version {
            2.. => acp_v2_validator(),
            _ => acp_validator(),
        }
    }

    /// An agent message chunk of the version spoken (v2 names its message).
    fn chunk(&self, content: Value) -> Value {
        match self.version {
            2.. => json!({"sessionUpdate": "agent_message_chunk", "messageId": "msg-agent-1", "content": content}),
            _ => json!({"sessionUpdate": "agent_message_chunk", "content": content}),
        }
    }

    fn text(&mut self, text: &str) {
        let chunk = self.chunk(json!({"type": "text", "text": text}));
        self.update(chunk);
    }

    fn tool_call(&mut self, id: &str) {
        // v2 has no `tool_call`: a `tool_call_update` upserts the call.
        let kind = if self.version >= 2 { "tool_call_update" } else { "tool_call" };
        self.update(json!({"sessionUpdate": kind, "toolCallId": id, "title": "Run `touch conformance.txt`", "kind": "execute", "status": "pending"}));
    }

    fn tool_call_done(&mut self, id: &str, status: &str) {
        self.update(json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": status}));
    }

    /// Sends a request; returns its id.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.pending.insert(id_key(&id), method.to_owned());
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn finish_prompt(&mut self, stop: &str) {
        if self.version >= 2 {
            if self.prompt_seen {
                self.update(json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": stop}));
            }
            return;
        }
        if let Some(id) = self.prompt_id.take() {
            self.respond(&id, "session/prompt", json!({"stopReason": stop}));
        }
    }

    // --- frames in -----------------------------------------------------------------------------

    /// The next line, validated and recorded; responses to our requests are matched here.
    fn next(&mut self, within: Duration) -> Incoming {
        let frame = match self.input.next(&mut self.report, within, "a line that is not JSON") {
            Incoming::Frame(frame) => frame,
            other => return other,
        };
        if frame["method"] == "initialize" {
            // The version is the client's to ask: 2 or later gets v2, anything else v1.
            self.version = match frame["params"]["protocolVersion"].as_u64() {
                Some(2..) => 2,
                Some(_) | None => 1,
            };
        }
        let answered = match (frame.get("method"), frame.get("id")) {
            (None, Some(id)) => self.pending.get(&id_key(id)).cloned(),
            _ => None,
        };
        if let Err(e) = self.validator().validate_inbound(&frame, answered.as_deref()) {
            self.input.invalid.get_or_insert_with(|| format!("{e}: {frame}"));
        }
        if frame["method"] == "session/prompt" && frame.get("id").is_some() {
            self.prompt_seen = true;
            if !self.session_answered && self.early_prompt.is_none() {
                self.early_prompt = Some(frame.clone());
            }
        }
        if frame.get("method").is_none() {
            match frame.get("id").map(id_key) {
                Some(key) if self.pending.remove(&key).is_some() => {
                    self.answered.insert(key.clone());
                    self.answers.insert(key, frame.clone());
                }
                Some(key) if self.answered.contains(&key) => self.duplicates.push(frame.clone()),
                _ => self.stray.push(frame.clone()),
            }
        }
        Incoming::Frame(frame)
    }

    /// Reads one frame before `deadline` and handles it as the scenario's background does.
    fn pump(&mut self, deadline: Instant) {
        if let Incoming::Frame(f) = self.next(deadline.saturating_duration_since(Instant::now())) {
            if f.get("method").is_some() {
                self.answer_other(&f);
            }
        }
    }

    /// The next request of one of `methods`, answering anything else meanwhile.
    fn expect_request_of(&mut self, methods: &[&str]) -> Option<Value> {
        let deadline = Instant::now() + self.wait;
        loop {
            match self.next(deadline.saturating_duration_since(Instant::now())) {
                Incoming::Frame(f) if f["method"].as_str().is_some_and(|m| methods.contains(&m)) && f.get("id").is_some() => return Some(f),
                Incoming::Frame(f) => {
                    if f.get("method").is_some() {
                        self.answer_other(&f);
                    }
                }
                Incoming::Eof | Incoming::Timeout => return None,
            }
        }
    }

    /// The next request `method`, answering anything else meanwhile; `None` at EOF or timeout.
    fn expect_request(&mut self, method: &str) -> Option<Value> {
        if method == "session/prompt" {
            if let Some(prompt) = self.stashed_prompt.take() {
                return Some(prompt);
            }
        }
        let deadline = Instant::now() + self.wait;
        loop {
            match self.next(deadline.saturating_duration_since(Instant::now())) {
                Incoming::Frame(f) if f["method"] == method && f.get("id").is_some() => return Some(f),
                Incoming::Frame(f) => {
                    if f.get("method").is_some() {
                        self.answer_other(&f);
                    }
                }
                Incoming::Eof | Incoming::Timeout => return None,
            }
        }
    }

    /// The answer to our request `id`, reading (and handling) other frames meanwhile.
    fn await_answer(&mut self, id: &Value) -> Option<Value> {
        let key = id_key(id);
        let deadline = Instant::now() + self.wait;
        loop {
            if let Some(answer) = self.answers.remove(&key) {
                return Some(answer);
            }
            if self.input.eof || Instant::now() >= deadline {
                return None;
            }
            self.pump(deadline);
        }
    }

    /// A client request or notification outside the scenario's script: `session/cancel` is
    /// noted, other requests get `Method not found`, other notifications nothing.
    fn answer_other(&mut self, frame: &Value) {
        let method = frame["method"].as_str().unwrap_or_default();
        match (method, frame.get("id")) {
            ("session/cancel", None) => self.cancelled = true,
            ("session/cancel", Some(id)) => {
                // The client did cancel, in the wrong shape: the cancel is played (its
                // requirements judged) and the shape judged on its own.
                self.cancelled = true;
                self.cancel_request.get_or_insert_with(|| frame.clone());
                let id = id.clone();
                self.send(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found: session/cancel is a notification"}}));
            }
            (_, None) => {}
            (_, Some(id)) => {
                let id = id.clone();
                self.send(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("Method not found: the scripted agent does not play `{method}`")}}));
            }
        }
    }

    /// After its turn the agent waits for the client to close its input.
    fn wait_for_eof(&mut self) {
        let deadline = Instant::now() + self.wait;
        while !self.input.eof && Instant::now() < deadline {
            self.pump(deadline);
        }
    }
}

/// A JSON-RPC id as a map key (`1` and `"1"` stay apart).
fn id_key(id: &Value) -> String {
    id.to_string()
}
