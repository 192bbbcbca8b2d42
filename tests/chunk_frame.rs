//! The transport's `rpc_chunk` frame (`transport::chunk::Chunk`) is defined beside the framing,
//! not taken from the protocol layer (the transport names no layer above it): it must stay the
//! schema's `RpcChunk`, field for field, both ways.

use agentwire::protocol::validate::validator;
use agentwire::protocol::RpcChunk;
use agentwire::transport::chunk::{split, Chunk};

#[test]
fn the_transport_chunk_is_the_schemas_rpc_chunk() {
    let frame = br#"{"type":"prompt","message":"a frame long enough to travel in a few chunks"}"#;
    let chunks = split(frame, "rpc-1", 16);
    assert!(chunks.len() > 1);
    for chunk in chunks {
        let value = serde_json::to_value(&chunk).unwrap();
        validator().validate_def("RpcChunk", &value).unwrap_or_else(|e| panic!("{value}: {e}"));
        // The generated type reads it and writes the same text back; ours reads that text.
        let typed: RpcChunk = serde_json::from_value(value.clone()).unwrap();
        let text = serde_json::to_string(&typed).unwrap();
        assert_eq!(text, serde_json::to_string(&chunk).unwrap());
        assert_eq!(serde_json::from_str::<Chunk>(&text).unwrap(), chunk);
    }
}
