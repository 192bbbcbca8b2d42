//! The fake LLM server is the library's, shared with the conformance harness; integration tests
//! reach it as `common::fake_llm`.

#[allow(unused_imports)]
pub use agentwire::conformance::fake_llm::*;
