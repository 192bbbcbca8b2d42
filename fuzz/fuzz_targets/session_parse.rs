//! The session loader on arbitrary file contents: parsing must never panic, and neither must
//! anything the agent does with a loaded session (its branch, messages, tree, settings) —
//! whatever parent chains (cycles, dangling parents, compactions pointing nowhere) the file has.
#![no_main]

use std::path::Path;

use agentwire::sessions::Session;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok((session, warnings)) = Session::parse(Path::new("fuzz.jsonl"), data) else { return };
    for w in &warnings {
        assert!(w.line >= 2, "the header is line 1 and never a warning");
    }
    let branch_len = session.branch().len();
    assert!(branch_len <= session.entries().len());
    let _ = session.messages();
    let _ = session.compactable();
    let _ = session.branch_messages();
    let _ = session.name();
    let _ = session.settings();
    let tree = session.tree();
    assert_eq!(tree.entries.len(), session.entries().len());
});
