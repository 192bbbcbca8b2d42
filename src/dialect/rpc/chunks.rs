//! Inbound `rpc_chunk` frames (omp protocol v2) in the JSONL dialect. Before a successful
//! `negotiate_protocol` a chunk is an unknown command, as in protocol 1. After it, chunks are
//! reassembled ([`crate::transport::chunk::Reassembler`]) into the line they carry, which is
//! decoded like any other line. A broken sequence is answered with one error response: its id
//! and command are read from the start of the frame when its first chunk arrived, so the host's
//! request gets its one answer; the rest of that sequence is dropped. A sequence still open at
//! the end of input is discarded with the same kind of error.

use super::decode::{decode_line, failure, Inbound, RpcFailure};
use crate::protocol::{RpcChunk, RpcErrorCode};
use crate::transport::chunk::{Chunk, ChunkError, Reassembled, Reassembler, MAX_REASSEMBLED_FRAME_BYTES};
use crate::transport::{FrameBatch, InboundLine};

/// The reader's chunk state.
#[derive(Debug)]
pub struct InboundChunks {
    reassembler: Reassembler,
}

impl Default for InboundChunks {
    fn default() -> Self {
        Self { reassembler: Reassembler::new(MAX_REASSEMBLED_FRAME_BYTES) }
    }
}

impl InboundChunks {
    /// Takes one chunk: the decoded frame once its sequence is whole (or the error response that
    /// frame gets), `None` while more chunks are due. Errors for broken sequences and chunks
    /// sent before negotiation go into `errors`.
    pub fn accept(&mut self, chunk: RpcChunk, negotiated: bool, max_line_bytes: usize, errors: &mut FrameBatch) -> Option<Result<Inbound, RpcFailure>> {
        if !negotiated {
            let message = "Unknown command: rpc_chunk (chunked frames are accepted only after negotiate_protocol with protocolVersion 2)";
            let _ = failure(None, "rpc_chunk", RpcErrorCode::UnknownCommand, message.to_owned()).push_to(errors);
            return None;
        }
        let mut failed = Vec::new();
        let RpcChunk { chunk_id, index, count, byte_length, data, .. } = chunk;
        let step = self.reassembler.push(Chunk { chunk_id, index, count, byte_length, data }, &mut failed);
        for error in failed {
            let _ = sequence_failure(error).push_to(errors);
        }
        match step {
            Reassembled::Pending | Reassembled::Dropped => None,
            Reassembled::Frame(bytes) => Some(match decode_line(&InboundLine::Line(bytes), max_line_bytes) {
                Ok(Inbound::Chunk(_)) => {
                    Err(failure(None, "rpc_chunk", RpcErrorCode::InvalidRequest, "An rpc_chunk frame cannot carry another rpc_chunk frame".to_owned()))
                }
                decoded => decoded,
            }),
        }
    }

    /// At end of input: the error response for a sequence left unfinished.
    pub fn at_end(&mut self) -> Option<RpcFailure> {
        self.reassembler.finish().map(sequence_failure)
    }
}

/// The one error response of a broken sequence, with the id and command of the frame it carried
/// when they could be read from its start.
fn sequence_failure(error: ChunkError) -> RpcFailure {
    let (id, kind) = crate::dialect::peek_id_and_type(&error.head);
    let code = if error.too_large { RpcErrorCode::FrameTooLarge } else { RpcErrorCode::InvalidRequest };
    failure(id, kind.map_or(std::borrow::Cow::Borrowed("rpc_chunk"), std::borrow::Cow::Owned), code, error.message)
}
