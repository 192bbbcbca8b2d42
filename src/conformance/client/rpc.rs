//! The scripted pi rpc agent that `agentwire conformance client --dialect rpc` hands to the
//! client under test (`{{agent}}`): it reads the host's JSONL commands, answers `prompt` with a
//! canned run (pi 1.6's records: a `disposition`, then `agent_end` and `agent_settled`, so a host
//! written for pi 0.73 or for pi 1.6 sees its turn end), validates every record the host writes
//! against the rpc schema, and writes its verdicts to the report file as it goes.
//!
//! The host ends the agent by closing its input or with SIGTERM (pi's documented shutdowns); a
//! SIGTERM handler writes that verdict, since nothing after the signal runs.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::inbox::{write, ClientLines, Framing, Incoming};
use super::report::{on_sigterm_report, set_sigterm_report, ReportWriter, Verdict};
use super::scenarios::RpcScenario;
use crate::protocol::validate::{validator, Direction, SchemaDialect};

/// What came from the host.
/// What a SIGTERM appends: pi's docs name SIGTERM an orderly shutdown, so a host that sends it
/// ended its agent as documented.
static SIGTERM_LINES: &[u8] = b"{\"kind\":\"check\",\"requirement\":\"RPC-CLIENT-EOF-2\",\"verdict\":\"pass\",\"detail\":\"the client ended the agent with SIGTERM (an orderly shutdown in pi's docs)\"}\n{\"kind\":\"event\",\"event\":\"sigterm\"}\n{\"kind\":\"event\",\"event\":\"exit\"}\n";
/// A SIGTERM after the framing scenario's last records: the run ended for the client.
static SIGTERM_AFTER_FRAMING: &[u8] = b"{\"kind\":\"check\",\"requirement\":\"RPC-CLIENT-FRAME-2\",\"verdict\":\"pass\",\"detail\":\"the client saw its turn end (it stopped the agent with SIGTERM after it): records with U+2028 and U+2029 inside their strings were read whole\"}\n{\"kind\":\"event\",\"event\":\"sigterm\"}\n{\"kind\":\"event\",\"event\":\"exit\"}\n";
/// A SIGTERM after the extensions scenario's last records.
static SIGTERM_AFTER_EXTENSIONS: &[u8] = b"{\"kind\":\"check\",\"requirement\":\"RPC-CLIENT-EVENT-1\",\"verdict\":\"pass\",\"detail\":\"the client finished its turn past an unknown event type (it stopped the agent with SIGTERM after it)\"}\n{\"kind\":\"event\",\"event\":\"sigterm\"}\n{\"kind\":\"event\",\"event\":\"exit\"}\n";

/// The scripted rpc agent of one scenario.
#[derive(Debug)]
pub struct ScriptedRpcAgent {
    scenario: RpcScenario,
    /// The client's frames (and whether it closed the agent's input, its first invalid one).
    input: ClientLines,
    report: ReportWriter,
    wait: Duration,
    /// Extension UI responses read, by the request id they name.
    ui_responses: Vec<Value>,
}

impl ScriptedRpcAgent {
    /// An agent for `scenario` reading this process's stdin; verdicts go to `report` (`file`:
    /// the same report, for the SIGTERM handler).
    pub fn new(scenario: RpcScenario, report: ReportWriter, file: Option<std::fs::File>, wait: Duration) -> Self {
        if let Some(file) = file {
            on_sigterm_report(file, &SIGTERM_LINES);
        }
        Self { scenario, input: ClientLines::stdin(Framing::LfOnly), report, wait, ui_responses: Vec::new() }
    }

    /// Plays the scenario to its end.
    pub fn run(mut self) {
        let played = self.play();
        match self.input.invalid.take() {
            Some(detail) => self.report.check("RPC-CLIENT-FRAME-1", Verdict::Fail, detail),
            None => self.report.check("RPC-CLIENT-FRAME-1", Verdict::Pass, "every record was one JSON object, a command the rpc schema knows"),
        }
        if played.is_some() {
            let deadline = Instant::now() + self.wait;
            while !self.input.eof && Instant::now() < deadline {
                self.pump(deadline);
            }
            if self.scenario == RpcScenario::Turn {
                match self.input.eof {
                    true => self.report.check("RPC-CLIENT-EOF-2", Verdict::Pass, "the client closed the agent's input when done"),
                    false => self.report.check("RPC-CLIENT-EOF-2", Verdict::Fail, format!("the client neither closed the agent's input nor sent SIGTERM within {} s of its turn's end", self.wait.as_secs())),
                }
            }
        }
        self.report.event("exit");
    }

    fn play(&mut self) -> Option<()> {
        let prompt = loop {
            match self.next(self.wait) {
                Incoming::Frame(f) if f["type"] == "prompt" => break f,
                Incoming::Frame(f) => self.answer_other(&f),
                Incoming::Eof | Incoming::Timeout => {
                    let why = if self.input.eof { "the client closed the agent's input without a prompt" } else { "the client sent no prompt" };
                    for id in self.scenario.requirements() {
                        self.report.check(id, Verdict::NotTestable, why);
                    }
                    return None;
                }
            }
        };
        let mut response = json!({"type": "response", "command": "prompt", "success": true, "data": {"disposition": "started"}});
        if let Some(id) = prompt.get("id") {
            response["id"] = id.clone();
        }
        self.send(response);
        let message = prompt["message"].as_str().unwrap_or_default().to_owned();
        self.send(json!({"type": "agent_start"}));
        self.send(json!({"type": "turn_start"}));
        let user = json!({"role": "user", "content": [{"type": "text", "text": message}], "timestamp": 1_795_326_502_573_u64});
        self.send(json!({"type": "message_start", "message": user}));
        self.send(json!({"type": "message_end", "message": user}));
        match self.scenario {
            RpcScenario::Turn => {}
            RpcScenario::Framing => {}
            RpcScenario::Extensions => {
                // A newer agent's event, and a field this version does not name.
                self.send_unchecked(json!({"type": "agentwire_future_event", "detail": {"nested": [1, 2]}}));
            }
            RpcScenario::ExtensionUi => self.extension_ui()?,
            RpcScenario::AgentExit => {
                self.report.event("agent-exit");
                return None;
            }
        }
        let text = match self.scenario {
            RpcScenario::Framing => "line\u{2028}separator and paragraph\u{2029}separator inside one string",
            RpcScenario::Turn | RpcScenario::Extensions | RpcScenario::ExtensionUi | RpcScenario::AgentExit => "conformance: hello",
        };
        let assistant = json!({"role": "assistant", "content": [{"type": "text", "text": text}], "api": "openai-completions", "provider": "fake", "model": "fake-model",
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "stop", "timestamp": 1_795_326_502_630_u64});
        let mut start = assistant.clone();
        start["content"] = json!([]);
        self.send(json!({"type": "message_start", "message": start}));
        self.send(json!({"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": text, "partial": assistant}}));
        self.send(json!({"type": "message_end", "message": assistant}));
        self.send(json!({"type": "turn_end", "message": assistant, "toolResults": []}));
        // The run ends with the next record: a SIGTERM from then on is a host done with it (a
        // host written for pi 0.73 stops on `agent_end`, before `agent_settled` is written).
        match self.scenario {
            RpcScenario::Framing => set_sigterm_report(&SIGTERM_AFTER_FRAMING),
            RpcScenario::Extensions => set_sigterm_report(&SIGTERM_AFTER_EXTENSIONS),
            RpcScenario::Turn | RpcScenario::ExtensionUi | RpcScenario::AgentExit => {}
        }
        self.send(json!({"type": "agent_end", "messages": [user, assistant]}));
        self.send(json!({"type": "agent_settled", "aborted": false}));
        match self.scenario {
            RpcScenario::Framing => {
                let deadline = Instant::now() + self.wait;
                while !self.input.eof && Instant::now() < deadline {
                    self.pump(deadline);
                }
                match self.input.eof {
                    true => self.report.check("RPC-CLIENT-FRAME-2", Verdict::Pass, "the client saw its turn end: records with U+2028 and U+2029 inside their strings were read whole"),
                    false => self.report.check(
                        "RPC-CLIENT-FRAME-2",
                        Verdict::Fail,
                        format!("the turn whose message_end, turn_end and agent_end carry U+2028/U+2029 never ended for the client: no EOF within {} s (it splits records there?)", self.wait.as_secs()),
                    ),
                }
            }
            RpcScenario::Extensions => {
                let deadline = Instant::now() + self.wait;
                while !self.input.eof && Instant::now() < deadline {
                    self.pump(deadline);
                }
                match self.input.eof {
                    true => self.report.check("RPC-CLIENT-EVENT-1", Verdict::Pass, "the client finished its turn past an unknown event type"),
                    false => self.report.check("RPC-CLIENT-EVENT-1", Verdict::Fail, format!("no EOF within {} s of the turn's end, after an unknown event type", self.wait.as_secs())),
                }
            }
            RpcScenario::Turn | RpcScenario::ExtensionUi | RpcScenario::AgentExit => {}
        }
        Some(())
    }

    /// A `confirm` dialog (with a timeout, so a host without extension UI still gets its turn)
    /// and a fire-and-forget `notify`; judges the responses.
    fn extension_ui(&mut self) -> Option<()> {
        self.send(json!({"type": "extension_ui_request", "id": "ui-notify-1", "method": "notify", "message": "conformance notice", "notifyType": "info"}));
        self.send(json!({"type": "extension_ui_request", "id": "ui-confirm-1", "method": "confirm", "title": "Confirm?", "message": "conformance dialog", "timeout": self.wait.as_millis() as u64}));
        let deadline = Instant::now() + self.wait;
        while !self.input.eof && Instant::now() < deadline && !self.ui_responses.iter().any(|r| r["id"] == "ui-confirm-1") {
            self.pump(deadline);
        }
        // A stray answer to the notification shows up on the next read at the latest.
        let settle = Instant::now() + Duration::from_millis(300);
        while !self.input.eof && Instant::now() < settle {
            self.pump(settle);
        }
        let answered_notify = self.ui_responses.iter().find(|r| r["id"] == "ui-notify-1").cloned();
        let unknown = self.ui_responses.iter().find(|r| r["id"] != "ui-confirm-1" && r["id"] != "ui-notify-1").cloned();
        match (answered_notify, unknown) {
            (Some(r), _) => self.report.check("RPC-CLIENT-UI-1", Verdict::Fail, format!("a response to the fire-and-forget `notify`: {r}")),
            (None, Some(r)) => self.report.check("RPC-CLIENT-UI-1", Verdict::Fail, format!("a response naming no request's id: {r}")),
            (None, None) => self.report.check("RPC-CLIENT-UI-1", Verdict::Pass, "no response to the fire-and-forget request, none to an unknown id"),
        }
        match self.ui_responses.iter().find(|r| r["id"] == "ui-confirm-1") {
            Some(r) => {
                let detail = format!("the dialog was answered: {r}");
                self.report.check("RPC-CLIENT-UI-2", Verdict::Pass, detail);
            }
            None if self.input.eof => self.report.check("RPC-CLIENT-UI-2", Verdict::Fail, "the client closed the agent's input with the dialog unanswered"),
            None => self.report.check("RPC-CLIENT-UI-2", Verdict::Fail, format!("the `confirm` dialog was not answered within its {} s timeout", self.wait.as_secs())),
        }
        if self.input.eof {
            return None;
        }
        Some(())
    }

    /// Anything but a prompt: an answer saying the scripted agent does not play it (pi's shape
    /// for a command it refuses), nothing for a UI response.
    fn answer_other(&mut self, frame: &Value) {
        let Some(command) = frame["type"].as_str().map(str::to_owned) else { return };
        if command == "extension_ui_response" {
            return;
        }
        let mut response = json!({"type": "response", "command": command, "success": false, "error": format!("the scripted agent does not play `{command}`")});
        if let Some(id) = frame.get("id") {
            response["id"] = id.clone();
        }
        self.send(response);
    }

    fn send(&mut self, frame: Value) {
        if let Err(e) = validator().validate_frame(SchemaDialect::Rpc, Direction::Outbound, &frame, None) {
            self.report.check("HARNESS", Verdict::Fail, format!("the scripted agent wrote an invalid record ({e}): {frame}"));
        }
        self.send_unchecked(frame);
    }

    /// Writes a record without validation (the unknown event the extensions scenario plays).
    fn send_unchecked(&mut self, frame: Value) {
        write(&mut self.report, &frame);
    }

    fn next(&mut self, within: Duration) -> Incoming {
        let frame = match self.input.next(&mut self.report, within, "a record that is not one JSON object") {
            Incoming::Frame(frame) => frame,
            other => return other,
        };
        if let Err(e) = validator().validate_frame(SchemaDialect::Rpc, Direction::Inbound, &frame, None) {
            self.input.invalid.get_or_insert_with(|| format!("{e}: {frame}"));
        }
        if frame["type"] == "extension_ui_response" {
            self.ui_responses.push(frame.clone());
        }
        Incoming::Frame(frame)
    }

    fn pump(&mut self, deadline: Instant) {
        if let Incoming::Frame(f) = self.next(deadline.saturating_duration_since(Instant::now())) {
            self.answer_other(&f);
        }
    }
}
