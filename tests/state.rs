//! State commands: get_state, thinking levels (events before responses), modes, todos,
//! session name, models, toggles, and the clear errors of commands that need sessions on disk.

mod common;

use common::{text_reply, Agent};
use serde_json::json;

#[test]
fn get_state_reports_every_documented_field() {
    let mut a = Agent::start(&[], &[]);
    let s = a.request(json!({"id":1,"type":"get_state"}))["data"].clone();
    assert_eq!(s["model"]["id"], "offline");
    for (k, v) in [
        ("thinkingLevel", json!("off")), ("isStreaming", json!(false)), ("isCompacting", json!(false)),
        ("steeringMode", json!("one-at-a-time")), ("followUpMode", json!("one-at-a-time")), ("interruptMode", json!("immediate")),
        ("autoCompactionEnabled", json!(true)), ("autoRetryEnabled", json!(true)), ("messageCount", json!(0)),
        ("pendingMessageCount", json!(0)), ("queuedMessageCount", json!(0)), ("todoPhases", json!([])),
    ] {
        assert_eq!(s[k], v, "{k}");
    }
    assert!(s.get("sessionName").is_none());
    assert!(s.get("sessionFile").is_none(), "no file is named before it exists (it is created on the first message)");
    assert_eq!(s["sessionId"].as_str().unwrap().len(), 36);
}

/// `get_state` answers from text kept while the state is unchanged (docs/performance.md):
/// asked right after each kind of change, the answer shows that change, never the one before.
#[test]
fn get_state_shows_each_change_at_once() {
    fn state(a: &mut Agent, n: &mut u32) -> serde_json::Value {
        *n += 1;
        a.request(json!({"id": format!("s{n}"), "type": "get_state"}))["data"].clone()
    }
    let mut a = Agent::start(&[], &[text_reply("Hello!")]);
    let n = &mut 0;
    let first = state(&mut a, n);
    assert_eq!(state(&mut a, n), first, "nothing changed");
    let changes = [
        (json!({"type":"set_thinking_level","level":"high"}), "/thinkingLevel", json!("high")),
        (json!({"type":"set_steering_mode","mode":"all"}), "/steeringMode", json!("all")),
        (json!({"type":"set_follow_up_mode","mode":"all"}), "/followUpMode", json!("all")),
        (json!({"type":"set_interrupt_mode","mode":"wait"}), "/interruptMode", json!("wait")),
        (json!({"type":"set_auto_compaction","enabled":false}), "/autoCompactionEnabled", json!(false)),
        (json!({"type":"set_auto_retry","enabled":false}), "/autoRetryEnabled", json!(false)),
        (json!({"type":"set_session_name","name":"named"}), "/sessionName", json!("named")),
        (json!({"type":"set_todos","phases":[{"id":"p","name":"P","tasks":[]}]}), "/todoPhases/0/id", json!("p")),
        (json!({"type":"cycle_thinking_level"}), "/thinkingLevel", json!("off")),
    ];
    for (i, (mut change, pointer, expected)) in changes.into_iter().enumerate() {
        change["id"] = json!(format!("c{i}"));
        assert_eq!(a.request(change.clone())["success"], true, "{change}");
        let s = state(&mut a, n);
        assert_eq!(s.pointer(pointer), Some(&expected), "after {change}: {s}");
    }
    // A run changes what the session holds.
    a.send(json!({"id":"p","type":"prompt","message":"hi"}));
    a.until_prompt_result("p");
    let s = state(&mut a, n);
    assert_eq!((&s["messageCount"], &s["contextUsage"]["tokens"]), (&json!(2), &json!(102)), "{s}");
    assert_eq!(state(&mut a, n), s, "nothing changed since");
}

/// The tools and the system prompt are large (every tool's parameter schema; omp's answer is
/// ~70 KB with both) and sent only when asked for (notes §2.7.3 "We:"): a plain `get_state` has
/// neither, `dumpTools: true` lists what the model is offered, `systemPrompt: true` the prompt,
/// and the plain answer kept between changes never picks up either.
#[test]
fn get_state_sends_tools_and_system_prompt_only_on_request() {
    let mut a = Agent::start(&[], &[]);
    let state = |a: &mut Agent, id: &str, extra: serde_json::Value| {
        let mut cmd = json!({"id": id, "type": "get_state"});
        cmd.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let r = a.request(cmd);
        assert_eq!(r["success"], true, "{r}");
        r["data"].as_object().unwrap().clone()
    };
    let plain = state(&mut a, "p1", json!({}));
    assert!(!plain.contains_key("dumpTools") && !plain.contains_key("systemPrompt"), "{plain:?}");
    let tools = json!([
        {"name": "host_probe", "description": "d", "parameters": {"type": "object"}},
        {"name": "host_hidden", "description": "h", "parameters": {"type": "object"}, "hidden": true},
    ]);
    assert_eq!(a.request(json!({"id": "h", "type": "set_host_tools", "tools": tools}))["success"], true);
    let plain = state(&mut a, "p2", json!({}));
    assert!(!plain.contains_key("dumpTools"), "still not listed after a change: {plain:?}");

    let mut with = state(&mut a, "t1", json!({"dumpTools": true}));
    let listed = with.remove("dumpTools").expect("dumpTools");
    let names: Vec<&str> = listed.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["read", "write", "edit", "bash", "ls", "grep", "find", "host_probe"], "built-ins, then the host's visible tools");
    assert!(listed[3]["parameters"]["properties"]["command"].is_object(), "each with its schema: {listed}");
    assert_eq!(with, plain, "the rest is the plain answer");
    assert_eq!(state(&mut a, "p3", json!({})), plain, "asked between two plain answers, nothing leaks into the kept one");

    let mut prompt = state(&mut a, "sp", json!({"systemPrompt": true}));
    let parts = prompt.remove("systemPrompt").expect("systemPrompt");
    assert!(parts[0].as_str().unwrap().starts_with("You are agentwire"), "{parts}");
    assert_eq!(prompt, plain);
    let both = state(&mut a, "b", json!({"dumpTools": true, "systemPrompt": true}));
    assert_eq!((&both["dumpTools"], &both["systemPrompt"]), (&listed, &parts));
    assert_eq!(state(&mut a, "f", json!({"dumpTools": false, "systemPrompt": false})), plain);
}

#[test]
fn thinking_levels_emit_their_change_before_the_response() {
    let mut a = Agent::start(&[], &[]);
    a.send(json!({"id":"t","type":"set_thinking_level","level":"high"}));
    // Both names: pi reads `level`, omp `thinkingLevel`.
    assert_eq!(a.next(), json!({"type":"thinking_level_changed","level":"high","thinkingLevel":"high"}));
    assert_eq!(a.next()["id"], "t");
    // Same level: no event. xhigh is clamped to what the model supports.
    assert_eq!(a.request(json!({"id":"t2","type":"set_thinking_level","level":"xhigh"}))["success"], true);
    a.send(json!({"id":"c","type":"cycle_thinking_level"}));
    assert_eq!(a.next(), json!({"type":"thinking_level_changed","level":"off","thinkingLevel":"off"}));
    assert_eq!(a.next()["data"], json!({"level":"off"}));
    assert_eq!(a.request(json!({"id":"l","type":"get_available_thinking_levels"}))["data"]["levels"], json!(["off","minimal","low","medium","high"]));
}

#[test]
fn modes_toggles_todos_and_names_are_stored_and_reported() {
    let mut a = Agent::start(&[], &[]);
    for cmd in [
        json!({"id":1,"type":"set_steering_mode","mode":"all"}),
        json!({"id":2,"type":"set_follow_up_mode","mode":"all"}),
        json!({"id":3,"type":"set_interrupt_mode","mode":"wait"}),
        json!({"id":4,"type":"set_auto_compaction","enabled":false}),
        json!({"id":5,"type":"set_auto_retry","enabled":false}),
        json!({"id":6,"type":"abort_retry"}),
    ] {
        let r = a.request(cmd);
        assert!(r["success"] == true && r.get("data").is_none(), "{r}");
    }
    let phases = json!([{"id":"p1","name":"Build","tasks":[{"id":"t1","content":"schema","status":"completed"}]}]);
    a.send(json!({"id":7,"type":"set_todos","phases":phases}));
    assert_eq!(a.next(), json!({"type":"todo_update","todoPhases":phases}));
    assert_eq!(a.next()["data"], json!({"todoPhases":phases}), "ids are kept");
    a.send(json!({"id":8,"type":"set_session_name","name":"  padded name  "}));
    assert_eq!(a.next(), json!({"type":"session_info_changed","name":"padded name"}));
    assert_eq!(a.next()["success"], true);
    let blank = a.request(json!({"id":9,"type":"set_session_name","name":"   "}));
    assert_eq!((&blank["success"], &blank["error"]), (&json!(false), &json!("Session name cannot be empty")));
    let s = a.request(json!({"id":10,"type":"get_state"}))["data"].clone();
    assert_eq!(
        (&s["steeringMode"], &s["followUpMode"], &s["interruptMode"], &s["autoCompactionEnabled"], &s["autoRetryEnabled"], &s["sessionName"], &s["todoPhases"]),
        (&json!("all"), &json!("all"), &json!("wait"), &json!(false), &json!(false), &json!("padded name"), &phases)
    );
}

#[test]
fn models_and_text_commands() {
    let mut a = Agent::start(&[], &[text_reply("It is done.  \n")]);
    assert_eq!(a.request(json!({"id":1,"type":"get_last_assistant_text"}))["data"], json!({"text":null}));
    assert_eq!(a.request(json!({"id":2,"type":"set_model","provider":"agentwire","modelId":"offline"}))["data"]["id"], "offline");
    let nf = a.request(json!({"id":3,"type":"set_model","provider":"acme","modelId":"x"}));
    assert_eq!((&nf["error"], &nf["code"]), (&json!("Model not found: acme/x"), &json!("not_found")));
    assert_eq!(a.request(json!({"id":4,"type":"cycle_model"}))["data"], json!(null));
    assert_eq!(a.request(json!({"id":5,"type":"get_available_models"}))["data"]["models"].as_array().unwrap().len(), 1);
    a.send(json!({"id":"p","type":"prompt","message":"finish"}));
    a.until_prompt_result("p");
    assert_eq!(a.request(json!({"id":6,"type":"get_last_assistant_text"}))["data"], json!({"text":"It is done."}));
    let stats = a.request(json!({"id":7,"type":"get_session_stats"}))["data"].clone();
    assert_eq!((&stats["userMessages"], &stats["assistantMessages"], &stats["totalMessages"]), (&json!(1), &json!(1), &json!(2)));
    let page = a.request(json!({"id":8,"type":"get_messages_page","limit":1}))["data"].clone();
    assert_eq!((&page["totalMessages"], &page["nextCursor"]), (&json!(2), &json!("1")));
    let page = a.request(json!({"id":9,"type":"get_messages_page","cursor":"1"}))["data"].clone();
    assert!(page.get("nextCursor").is_none() && page["messages"][0]["role"] == "assistant");
    assert_eq!(a.request(json!({"id":10,"type":"new_session"}))["data"], json!({"cancelled":false}));
    assert_eq!(a.request(json!({"id":11,"type":"get_state"}))["data"]["messageCount"], 0);
    let commands = a.request(json!({"id":12,"type":"get_commands"}))["data"]["commands"].clone();
    let names: Vec<&str> = commands.as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["model", "name", "compose", "new", "todos", "status", "recall", "help"]);
    assert_eq!(commands[0]["source"], "builtin");
    assert_eq!(commands[0]["input"], json!({"hint":"[provider/id]"}));
}

#[test]
fn no_session_keeps_everything_in_memory() {
    let mut a = Agent::start(&["--no-session"], &[]);
    assert!(a.request(json!({"id":1,"type":"get_state"}))["data"].get("sessionFile").is_none());
    let e = a.request(json!({"id":2,"type":"export_html"}));
    assert_eq!((&e["success"], &e["code"]), (&json!(false), &json!("invalid_params")));
}

#[test]
fn ready_says_whether_sessions_are_kept_on_disk() {
    let a = Agent::start(&[], &[]);
    assert_eq!(a.seen[0]["capabilities"]["sessions"], true, "sessions are written under the config dir: {}", a.seen[0]);
    let b = Agent::start(&["--no-session"], &[]);
    assert_eq!(b.seen[0]["capabilities"]["sessions"], false, "{}", b.seen[0]);
}
