//! The generated Rust API: the handler traits and dispatch functions, the method traits tying
//! commands to their response types, and tag markers on member structs used on their own.

use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use agentwire::jsonrpc::dispatch::wire::dispatch_wire_request;
use agentwire::jsonrpc::{Error as WireError, Responder};
use agentwire::protocol::*;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

/// Drives a future that never waits (the canned handlers below).
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("canned handlers never wait"),
    }
}

/// A handler answering each command with a canned JSON value, parsed into the method's typed
/// return value (so the trait's return types are exercised), or with an error.
#[derive(Default)]
struct Canned(HashMap<&'static str, Result<Value, RpcError>>);

impl Canned {
    fn reply<T: DeserializeOwned>(&self, tag: &str) -> Result<T, RpcError> {
        match self.0.get(tag) {
            Some(Ok(v)) => Ok(serde_json::from_value(v.clone()).expect("canned value fits the return type")),
            Some(Err(e)) => Err(e.clone()),
            None => Err(RpcError::unsupported(format!("{tag} is not canned"))),
        }
    }
}

macro_rules! canned_handler {
    ($($tag:ident: $cmd:ident => $ty:ty,)*) => {
        impl RpcHandler for Canned {
            $(async fn $tag(&self, _cmd: $cmd) -> Result<$ty, RpcError> { self.reply(stringify!($tag)) })*
        }
    };
}

canned_handler! {
    prompt: PromptCommand => Option<PromptAccepted>,
    steer: SteerCommand => Option<QueuedInputAccepted>,
    follow_up: FollowUpCommand => Option<QueuedInputAccepted>,
    abort: AbortCommand => (),
    clear_queue: ClearQueueCommand => ClearedQueue,
    abort_and_prompt: AbortAndPromptCommand => (),
    new_session: NewSessionCommand => CancelledResult,
    get_state: GetStateCommand => SessionState,
    set_todos: SetTodosCommand => TodoPhasesResult,
    set_host_tools: SetHostToolsCommand => HostToolNames,
    set_model: SetModelCommand => Model,
    cycle_model: CycleModelCommand => Option<CycleModelResult>,
    get_available_models: GetAvailableModelsCommand => AvailableModels,
    set_thinking_level: SetThinkingLevelCommand => (),
    cycle_thinking_level: CycleThinkingLevelCommand => Option<ThinkingLevelResult>,
    get_available_thinking_levels: GetAvailableThinkingLevelsCommand => AvailableThinkingLevels,
    set_steering_mode: SetSteeringModeCommand => (),
    set_follow_up_mode: SetFollowUpModeCommand => (),
    set_interrupt_mode: SetInterruptModeCommand => (),
    compact: CompactCommand => CompactionResult,
    set_auto_compaction: SetAutoCompactionCommand => (),
    set_auto_retry: SetAutoRetryCommand => (),
    set_event_options: SetEventOptionsCommand => (),
    negotiate_protocol: NegotiateProtocolCommand => NegotiatedProtocol,
    abort_retry: AbortRetryCommand => (),
    bash: BashCommand => BashResult,
    abort_bash: AbortBashCommand => (),
    get_session_stats: GetSessionStatsCommand => SessionStats,
    export_html: ExportHtmlCommand => ExportResult,
    switch_session: SwitchSessionCommand => CancelledResult,
    branch: BranchCommand => BranchResult,
    fork: ForkCommand => BranchResult,
    clone: CloneCommand => CancelledResult,
    get_branch_messages: GetBranchMessagesCommand => BranchMessages,
    get_fork_messages: GetForkMessagesCommand => BranchMessages,
    get_last_assistant_text: GetLastAssistantTextCommand => LastAssistantText,
    set_session_name: SetSessionNameCommand => (),
    get_messages: GetMessagesCommand => MessagesResult,
    get_messages_page: GetMessagesPageCommand => MessagesPage,
    get_commands: GetCommandsCommand => CommandsResult,
    get_available_commands: GetAvailableCommandsCommand => CommandsResult,
    list_sessions: ListSessionsCommand => SessionList,
    get_tree: GetTreeCommand => SessionTree,
    get_entries: GetEntriesCommand => SessionEntries,
}

fn dispatch(handler: &Canned, frame: Value) -> Value {
    let id = frame.get("id").cloned();
    let command = RpcCommand::from_value(frame).unwrap();
    serde_json::to_value(block_on(dispatch_rpc_command(handler, id, command))).unwrap()
}

#[test]
fn dispatch_builds_the_response_envelope_for_each_kind_of_result() {
    let mut h = Canned::default();
    h.0.insert("get_last_assistant_text", Ok(json!({"text": "hi"})));
    h.0.insert("cycle_model", Ok(Value::Null));
    h.0.insert("abort", Ok(Value::Null));
    h.0.insert("prompt", Ok(Value::Null));
    h.0.insert("set_model", Err(RpcError::not_found("Model not found: acme/none")));
    assert_eq!(
        dispatch(&h, json!({"id": 7, "type": "get_last_assistant_text"})),
        json!({"id": 7, "type": "response", "command": "get_last_assistant_text", "success": true, "data": {"text": "hi"}})
    );
    // Nullable data is written as null; commands without data have no `data` key; an
    // optional-data command answering None has none either.
    assert_eq!(dispatch(&h, json!({"type": "cycle_model"})), json!({"type": "response", "command": "cycle_model", "success": true, "data": null}));
    assert_eq!(dispatch(&h, json!({"id": "a", "type": "abort"})), json!({"id": "a", "type": "response", "command": "abort", "success": true}));
    assert_eq!(dispatch(&h, json!({"id": "p", "type": "prompt", "message": "hi"})), json!({"id": "p", "type": "response", "command": "prompt", "success": true}));
    assert_eq!(
        dispatch(&h, json!({"id": "m", "type": "set_model", "provider": "acme", "modelId": "none"})),
        json!({"id": "m", "type": "response", "command": "set_model", "success": false, "error": "Model not found: acme/none", "code": "not_found"})
    );
    // pi's alias answers with its own command name.
    h.0.insert("fork", Ok(json!({"text": "first", "cancelled": false})));
    assert_eq!(dispatch(&h, json!({"id": 1, "type": "fork", "entryId": "5d46e4ac"}))["command"], "fork");
}

#[test]
fn every_dispatched_response_validates() {
    let h = Canned::default();
    let examples = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema/examples/rpc-commands.jsonl")).unwrap();
    for line in examples.lines() {
        let response = dispatch(&h, serde_json::from_str(line).unwrap());
        assert_eq!(response["success"], false);
        agentwire::protocol::validate::validator()
            .validate_frame(agentwire::protocol::validate::SchemaDialect::Rpc, agentwire::protocol::validate::Direction::Outbound, &response, None)
            .unwrap_or_else(|e| panic!("{response}: {e}"));
    }
}

fn data_type<M: RpcMethod>() -> &'static str {
    std::any::type_name::<M::Data>()
}

#[test]
fn commands_are_tied_to_their_response_types() {
    assert_eq!(SetModelCommand::COMMAND, "set_model");
    assert!(data_type::<SetModelCommand>().ends_with("::Model"));
    assert!(data_type::<CycleModelCommand>().contains("Option<") && data_type::<CycleModelCommand>().contains("CycleModelResult"));
    assert_eq!(data_type::<AbortCommand>(), "()");
    assert_eq!(<WirePromptRequest as WireMethod>::METHOD, "prompt");
    assert!(std::any::type_name::<<WirePromptRequest as WireMethod>::Result>().ends_with("WirePromptResult"));
    assert_eq!(<WireApprovalRequest as WireAgentRequestKind>::TYPE, "ApprovalRequest");
}

#[test]
fn tables_list_every_command_and_method_with_their_results() {
    let set_model = RPC_COMMANDS.iter().find(|c| c.command == "set_model").unwrap();
    assert_eq!((set_model.request, set_model.response), ("SetModelCommand", Some("Model")));
    let cycle = RPC_COMMANDS.iter().find(|c| c.command == "cycle_model").unwrap();
    assert!(cycle.nullable && !cycle.optional);
    assert_eq!(RPC_COMMANDS.iter().find(|c| c.command == "abort").unwrap().response, None);
    assert_eq!(RPC_COMMANDS.len(), RpcCommand::TAGS.len());
    let names: Vec<&str> = WIRE_METHODS.iter().map(|m| m.name).collect();
    assert_eq!(names, ["initialize", "prompt", "steer", "replay", "cancel", "set_plan_mode"]);
    assert_eq!(WIRE_METHODS[1].result, "WirePromptResult");
    let requests: Vec<(&str, &str)> = WIRE_AGENT_REQUESTS.iter().map(|r| (r.name, r.result)).collect();
    assert_eq!(requests[0], ("ApprovalRequest", "WireApprovalResult"));
    assert_eq!(requests.len(), 4);
}

#[test]
fn member_structs_write_and_check_their_own_tag() {
    let cmd: SetModelCommand = serde_json::from_value(json!({"provider": "openai", "modelId": "gpt"})).unwrap();
    assert_eq!(serde_json::to_value(&cmd).unwrap(), json!({"type": "set_model", "provider": "openai", "modelId": "gpt"}));
    let err = serde_json::from_value::<SetModelCommand>(json!({"type": "get_state", "provider": "openai", "modelId": "gpt"})).unwrap_err();
    assert!(err.to_string().contains("expected the string \"set_model\""), "{err}");
    // Unions read the tag first and report the member's own error.
    let err = RpcCommand::from_value(json!({"type": "set_model", "provider": "openai"})).unwrap_err();
    assert_eq!(err.to_string(), "missing field `modelId`");
    let err = RpcCommand::from_value(json!({"type": "set_modle"})).unwrap_err();
    assert!(err.to_string().starts_with("unknown type `set_modle`, expected one of [\"prompt\""), "{err}");
    // Nested unions: an inbound frame is a command or a sub-protocol answer.
    let frame = RpcInboundFrame::from_value(json!({"type": "host_tool_result", "id": "h1", "result": {"content": []}})).unwrap();
    assert_eq!(frame.tag(), "host_tool_result");
    let frame = RpcOutboundFrame::from_value(json!({"type": "extension_ui_request", "id": "u", "method": "notify", "message": "hi"})).unwrap();
    assert_eq!(frame.tag(), "extension_ui_request");
}

struct Wire;

impl WireHandler for Wire {
    async fn initialize(&self, r: WireInitializeRequest) -> Result<WireInitializeResult, WireError> {
        Ok(serde_json::from_value(json!({"protocol_version": r.params.protocol_version, "server": {"name": "t", "version": "0"}, "slash_commands": []})).unwrap())
    }
    async fn prompt(&self, _r: WirePromptRequest) -> Result<WirePromptResult, WireError> {
        Ok(serde_json::from_value(json!({"status": "finished"})).unwrap())
    }
    async fn steer(&self, _r: WireSteerRequest) -> Result<WireSteerResult, WireError> {
        Err(WireError::new(agentwire::dialect::wire::codes::INVALID_STATE, "No agent turn is in progress"))
    }
    async fn replay(&self, _r: WireReplayRequest) -> Result<WireReplayResult, WireError> {
        Ok(serde_json::from_value(json!({"status": "finished", "events": 0, "requests": 0})).unwrap())
    }
    async fn cancel(&self, _r: WireCancelRequest) -> Result<WireEmptyResult, WireError> {
        Ok(serde_json::from_value(json!({})).unwrap())
    }
    async fn set_plan_mode(&self, r: WireSetPlanModeRequest) -> Result<WireSetPlanModeResult, WireError> {
        Ok(serde_json::from_value(json!({"status": "ok", "plan_mode": r.params.enabled})).unwrap())
    }
}

#[test]
fn wire_dispatch_returns_results_and_domain_errors() {
    // The dispatch encodes the whole response frame, the typed result serialized straight into it.
    let run = |v: Value| {
        let id = v["id"].clone();
        let answer = block_on(dispatch_wire_request(&Wire, WireRequest::from_value(v).unwrap(), Responder::new(id, true)));
        serde_json::from_slice::<Value>(answer.bytes()).unwrap()
    };
    assert_eq!(run(json!({"jsonrpc": "2.0", "id": 1, "method": "prompt", "params": {"user_input": "hi"}})), json!({"jsonrpc": "2.0", "id": 1, "result": {"status": "finished"}}));
    assert_eq!(run(json!({"id": "x", "method": "set_plan_mode", "params": {"enabled": true}}))["result"], json!({"status": "ok", "plan_mode": true}));
    let err = run(json!({"jsonrpc": "2.0", "id": 2, "method": "steer", "params": {"user_input": "hi"}}));
    assert_eq!(err["error"], json!({"code": -32000, "message": "No agent turn is in progress", "data": null}));
}

/// Serializes a frame built with a generated `new`, compares it with the JSON it should be, and
/// validates it against the schema def it was generated from.
fn built<T: serde::Serialize>(def: &str, frame: &T, expected: Value) -> Value {
    let value = serde_json::to_value(frame).unwrap();
    assert_eq!(value, expected, "{def}");
    agentwire::protocol::validate::validator().validate_def(def, &value).unwrap_or_else(|e| panic!("{def}: {value}: {e}"));
    value
}

#[test]
fn constructors_set_the_constant_tags_and_leave_optional_fields_out() {
    use agentwire::protocol::validate::{validator, SchemaDialect, Direction};
    let outbound = |frame: &Value| validator().validate_frame(SchemaDialect::Rpc, Direction::Outbound, frame, None).unwrap_or_else(|e| panic!("{frame}: {e}"));

    outbound(&built("TurnStartEvent", &TurnStartEvent::new(), json!({"type": "turn_start"})));
    // Two constants (`type` and `method`), a constrained id, `impl Into<String>` text, and the
    // optional `timeout` absent.
    let confirm = UiConfirmRequest::new("u1".parse().unwrap(), "Delete?", String::from("Really delete a.txt?"));
    let expected = json!({"type": "extension_ui_request", "id": "u1", "method": "confirm", "title": "Delete?", "message": "Really delete a.txt?"});
    outbound(&built("UiConfirmRequest", &confirm, expected));
    // Optional fields stay writable after `new`.
    let mut confirm = confirm;
    confirm.timeout = Some(5000);
    assert_eq!(serde_json::to_value(&confirm).unwrap()["timeout"], 5000);
    // The map of additional properties of an open event starts empty.
    outbound(&built("AdvisorCostChangedEvent", &AdvisorCostChangedEvent::new(), json!({"type": "advisor_cost_changed"})));
    // A command and a response: tags set, `id` (optional) left out.
    let cmd = SetModelCommand::new("openai".parse().unwrap(), "gpt".parse().unwrap());
    let cmd = built("SetModelCommand", &cmd, json!({"type": "set_model", "provider": "openai", "modelId": "gpt"}));
    validator().validate_frame(SchemaDialect::Rpc, Direction::Inbound, &cmd, None).unwrap();
    outbound(&built("RpcResponse", &RpcResponse::new("abort", true), json!({"type": "response", "command": "abort", "success": true})));

    // Wire: an event notification (`jsonrpc` and `method` constants) around an event (`type`)
    // around its payload.
    let step = WireStepBeginEvent::new(WireStepBeginPayload { n: std::num::NonZeroU32::new(2).unwrap() });
    let step = WireEventNotification::new(step.into());
    let step = built(
        "WireEventNotification",
        &step,
        json!({"jsonrpc": "2.0", "method": "event", "params": {"type": "StepBegin", "payload": {"n": 2}}}),
    );
    validator().validate_frame(SchemaDialect::Wire, Direction::Outbound, &step, None).unwrap_or_else(|e| panic!("{step}: {e}"));
    built("WireSetPlanModeResult", &WireSetPlanModeResult::new(true), json!({"status": "ok", "plan_mode": true}));
}

/// Untagged unions of scalars (ids) get a generated visitor instead of serde's derive; they
/// accept exactly what the derive accepted, from text and from `Value` alike.
#[test]
fn scalar_unions_accept_what_serdes_untagged_derive_accepts() {
    for (text, expected) in [(r#""a""#, Some(RequestId::String("a".into()))), ("7", Some(RequestId::Int64(7))), ("-7", Some(RequestId::Int64(-7)))] {
        assert_eq!(serde_json::from_str::<RequestId>(text).ok(), expected, "{text}");
        assert_eq!(serde_json::from_value::<RequestId>(serde_json::from_str(text).unwrap()).ok(), expected, "{text}");
    }
    // Beyond i64, a float, null, a boolean, an object: no variant takes them.
    for text in ["18446744073709551615", "1.5", "null", "true", "{}", "[]"] {
        assert!(serde_json::from_str::<RequestId>(text).is_err(), "{text}");
        assert!(serde_json::from_value::<RequestId>(serde_json::from_str(text).unwrap()).is_err(), "{text}");
    }
    // A unit variant takes null; declaration order decides between the others.
    assert_eq!(serde_json::from_str::<WireErrorResponseId>("null").unwrap(), WireErrorResponseId::Null);
    assert_eq!(serde_json::from_str::<WireErrorResponseId>("3").unwrap(), WireErrorResponseId::Integer(3));
    assert_eq!(serde_json::from_str::<WireErrorResponseId>(r#""x""#).unwrap(), WireErrorResponseId::String("x".into()));
    assert!(serde_json::from_str::<WireErrorResponseId>("2.5").is_err());
}

#[test]
fn acp_methods_are_types_and_acp_structs_have_constructors() {
    use agentwire::jsonrpc::{Notification, Request};
    use agentwire::protocol::acp::{acp_validator, methods, PromptRequest, PromptResponse, ReadTextFileRequest, SessionId};
    fn request<M: Request>() -> &'static str {
        M::METHOD
    }
    fn notification<M: Notification>() -> &'static str {
        M::METHOD
    }
    // One uninhabited type per method, agent and client side, tying params to result.
    assert_eq!((request::<methods::SessionNew>(), request::<methods::FsReadTextFile>()), ("session/new", "fs/read_text_file"));
    assert_eq!((notification::<methods::SessionCancel>(), notification::<methods::SessionUpdate>()), ("session/cancel", "session/update"));
    let _typed: fn(<methods::SessionPrompt as Request>::Params) -> Option<<methods::SessionPrompt as Request>::Result> = |_: PromptRequest| None::<PromptResponse>;
    // `new(required…)` + `with_*`, as for our own schema's frames.
    let read = ReadTextFileRequest::new("/w/a.txt", SessionId("s1".into())).with_line(3);
    let value = serde_json::to_value(&read).unwrap();
    assert_eq!(value, json!({"line": 3, "path": "/w/a.txt", "sessionId": "s1"}));
    acp_validator().validate_def("ReadTextFileRequest", &value).unwrap();
}
