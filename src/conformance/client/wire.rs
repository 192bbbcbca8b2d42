//! The scripted kimi wire agent that `agentwire conformance client --dialect wire` hands to the
//! host under test (`{{agent}}`): JSON-RPC 2.0 on stdio as kimi-cli 1.50's `--wire` speaks it.
//! It answers `initialize`, plays a turn on `prompt` (`TurnBegin`, `StepBegin`, a `ContentPart`,
//! `TurnEnd`, then the `finished` result), validates every frame the host writes against the wire
//! schema, and writes its verdicts to the report file as it goes.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::inbox::{write, ClientLines, Framing, Incoming};
use super::report::{ReportWriter, Verdict};
use super::scenarios::WireScenario;
use crate::protocol::validate::{validator, Direction, SchemaDialect};

/// What came from the host.
/// The scripted wire agent of one scenario.
#[derive(Debug)]
pub struct ScriptedWireAgent {
    scenario: WireScenario,
    /// The client's frames (and whether it closed the agent's input, its first invalid one).
    input: ClientLines,
    report: ReportWriter,
    wait: Duration,
    /// Requests of ours not answered yet: id (as JSON text) → request type.
    pending: HashMap<String, String>,
    /// Answers to our requests, by id.
    answers: HashMap<String, Value>,
    /// Responses that answer nothing pending (a second answer, a reply to an event).
    stray: Vec<Value>,
}

impl ScriptedWireAgent {
    /// An agent for `scenario` reading this process's stdin; verdicts go to `report`.
    pub fn new(scenario: WireScenario, report: ReportWriter, wait: Duration) -> Self {
        Self { scenario, input: ClientLines::stdin(Framing::Lines), report, wait, pending: HashMap::new(), answers: HashMap::new(), stray: Vec::new() }
    }

    /// Plays the scenario to its end.
    pub fn run(mut self) {
        if self.play().is_some() {
            let deadline = Instant::now() + self.wait;
            while !self.input.eof && Instant::now() < deadline {
                self.pump(deadline);
            }
            if self.scenario == WireScenario::Extensions {
                match (self.input.eof, self.stray.first()) {
                    (_, Some(frame)) => self.report.check("WIRE-CLIENT-EVENT-1", Verdict::Fail, format!("a response to no request of the agent (an answered event?): {frame}")),
                    (true, None) => self.report.check("WIRE-CLIENT-EVENT-1", Verdict::Pass, "the host finished its turn past an event type it does not know, and answered no event"),
                    (false, None) => self.report.check("WIRE-CLIENT-EVENT-1", Verdict::Fail, format!("no EOF within {} s of the turn's end, after an unknown event type", self.wait.as_secs())),
                }
            }
        }
        match self.input.invalid.take() {
            Some(detail) => self.report.check("WIRE-CLIENT-FRAME-1", Verdict::Fail, detail),
            None => self.report.check("WIRE-CLIENT-FRAME-1", Verdict::Pass, "every frame was a JSON-RPC 2.0 object the wire schema knows"),
        }
        self.report.event("exit");
    }

    fn play(&mut self) -> Option<()> {
        let deadline = Instant::now() + self.wait;
        let prompt = loop {
            match self.next(deadline.saturating_duration_since(Instant::now())) {
                Incoming::Frame(f) if f["method"] == "prompt" && f.get("id").is_some() => break f,
                Incoming::Frame(f) => self.answer_other(&f),
                Incoming::Eof | Incoming::Timeout => {
                    let why = if self.input.eof { "the host closed the agent's input without a prompt" } else { "the host sent no prompt" };
                    for id in self.scenario.requirements() {
                        self.report.check(id, Verdict::NotTestable, why);
                    }
                    return None;
                }
            }
        };
        let user_input = prompt["params"]["user_input"].clone();
        self.event("TurnBegin", json!({"user_input": user_input}));
        self.event("StepBegin", json!({"n": 1}));
        match self.scenario {
            WireScenario::Turn => {}
            WireScenario::Extensions => {
                // A later kimi's event: sent unvalidated, since no schema of ours names it.
                self.write(json!({"jsonrpc": "2.0", "method": "event", "params": {"type": "AgentwireFutureEvent", "payload": {"nested": [1, 2]}}}));
            }
            WireScenario::Approval => self.approval()?,
        }
        self.event("ContentPart", json!({"type": "text", "text": "conformance: hello"}));
        self.event("TurnEnd", json!({}));
        self.send(json!({"jsonrpc": "2.0", "id": prompt["id"], "result": {"status": "finished"}}), Some("prompt"));
        Some(())
    }

    /// An `ApprovalRequest`; judges its answer.
    fn approval(&mut self) -> Option<()> {
        let id = "req-conformance-1";
        self.pending.insert(json!(id).to_string(), "ApprovalRequest".into());
        self.send(
            json!({"jsonrpc": "2.0", "method": "request", "id": id, "params": {"type": "ApprovalRequest", "payload": {
                "id": id, "tool_call_id": "call_sh_1", "sender": "Shell", "action": "run command", "description": "Run command `touch conformance.txt`",
                "source_kind": "foreground_turn", "source_id": "conformance", "agent_id": null, "subagent_type": null, "source_description": null,
                "display": [{"type": "shell", "language": "bash", "command": "touch conformance.txt"}]}}}),
            None,
        );
        let key = json!(id).to_string();
        let deadline = Instant::now() + self.wait;
        while !self.answers.contains_key(&key) && !self.input.eof && Instant::now() < deadline {
            self.pump(deadline);
        }
        // A second answer shows up on the next reads.
        let settle = Instant::now() + Duration::from_millis(300);
        while !self.input.eof && Instant::now() < settle {
            self.pump(settle);
        }
        match (self.answers.get(&key).cloned(), self.stray.first().cloned()) {
            (Some(_), Some(second)) => self.report.check("WIRE-CLIENT-REQ-1", Verdict::Fail, format!("a second response, or one to no request: {second}")),
            (Some(answer), None) => self.report.check("WIRE-CLIENT-REQ-1", Verdict::Pass, format!("answered once: {answer}")),
            (None, _) if self.input.eof => self.report.check("WIRE-CLIENT-REQ-1", Verdict::Fail, "the host closed the agent's input with the ApprovalRequest unanswered"),
            (None, _) => self.report.check("WIRE-CLIENT-REQ-1", Verdict::Fail, format!("the ApprovalRequest was not answered within {} s", self.wait.as_secs())),
        }
        if self.input.eof {
            return None;
        }
        Some(())
    }

    /// A host request outside the script: `initialize` is answered as kimi answers it, others
    /// get `Method not found`; notifications and responses get nothing.
    fn answer_other(&mut self, frame: &Value) {
        let (Some(method), Some(id)) = (frame["method"].as_str(), frame.get("id")) else { return };
        let id = id.clone();
        match method {
            "initialize" => self.send(
                json!({"jsonrpc": "2.0", "id": id, "result": {"protocol_version": "1.10", "server": {"name": "agentwire-scripted-agent", "version": env!("CARGO_PKG_VERSION")}, "slash_commands": []}}),
                Some("initialize"),
            ),
            _ => self.write(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("Method not found: the scripted agent does not play `{method}`")}})),
        }
    }

    fn event(&mut self, kind: &str, payload: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": "event", "params": {"type": kind, "payload": payload}}), None);
    }

    /// Sends a frame the wire schema must accept (`answered`: the method a response answers).
    fn send(&mut self, frame: Value, answered: Option<&str>) {
        if let Err(e) = validator().validate_frame(SchemaDialect::Wire, Direction::Outbound, &frame, answered) {
            self.report.check("HARNESS", Verdict::Fail, format!("the scripted agent wrote an invalid frame ({e}): {frame}"));
        }
        self.write(frame);
    }

    fn write(&mut self, frame: Value) {
        write(&mut self.report, &frame);
    }

    fn next(&mut self, within: Duration) -> Incoming {
        let frame = match self.input.next(&mut self.report, within, "a line that is not JSON") {
            Incoming::Frame(frame) => frame,
            other => return other,
        };
        let key = frame.get("id").map(Value::to_string);
        let answered = match (frame.get("method"), &key) {
            (None, Some(key)) => self.pending.get(key).cloned(),
            _ => None,
        };
        if let Err(e) = validator().validate_frame(SchemaDialect::Wire, Direction::Inbound, &frame, answered.as_deref()) {
            self.input.invalid.get_or_insert_with(|| format!("{e}: {frame}"));
        }
        if frame.get("method").is_none() {
            match key {
                Some(key) if self.pending.remove(&key).is_some() => {
                    self.answers.insert(key, frame.clone());
                }
                _ => self.stray.push(frame.clone()),
            }
        }
        Incoming::Frame(frame)
    }

    fn pump(&mut self, deadline: Instant) {
        if let Incoming::Frame(f) = self.next(deadline.saturating_duration_since(Instant::now())) {
            self.answer_other(&f);
        }
    }
}
