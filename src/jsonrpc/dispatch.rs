//! The generated dispatch of every JSON-RPC handler trait onto this runtime: for each trait a
//! `dispatch_*` function that runs one typed request on a handler and hands its typed outcome
//! to the [`Responder`](super::Responder), and the blanket [`Dispatch`](super::Dispatch) impl
//! the serve loop drives. `build.rs` writes them beside the protocol's types and traits
//! (`src/codegen/handlers.rs`, `split_runtime`): the traits, the request enums and the method
//! types are the protocol layer's, and only what names this runtime is included here, so the
//! protocol layer names no runtime.

/// kimi's wire dialect: `dispatch_wire_request` for [`WireHandler`](crate::protocol::WireHandler).
#[allow(missing_docs, clippy::all, clippy::pedantic, unused_imports)]
pub mod wire {
    use crate::protocol::*;
    include!(concat!(env!("OUT_DIR"), "/wire_dispatch.rs"));
}

/// ACP v1: `dispatch_acp_request` and `dispatch_acp_client_request` for the handler traits of
/// [`crate::protocol::acp`].
#[allow(missing_docs, clippy::all, clippy::pedantic, unused_imports)]
pub mod acp {
    use crate::protocol::acp::*;
    include!(concat!(env!("OUT_DIR"), "/acp_dispatch.rs"));
}

/// ACP v2: the same for the handler traits of [`crate::protocol::acp_v2`].
#[allow(missing_docs, clippy::all, clippy::pedantic, unused_imports)]
pub mod acp_v2 {
    use crate::protocol::acp_v2::*;
    include!(concat!(env!("OUT_DIR"), "/acp_v2_dispatch.rs"));
}
