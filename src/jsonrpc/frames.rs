//! The [`Responder`] a generated dispatch answers through, and the encoded [`Answer`] it
//! makes: the frame shapes and the error object are the protocol's
//! ([`crate::protocol::envelope`]), this is where they meet the transport's batches.

use serde::Serialize;
use serde_json::Value;

use crate::protocol::envelope::{Error, ErrorFrame, SuccessFrame};
use crate::transport::FrameBatch;

/// Where the answer to one request goes: the generated dispatch hands the handler's typed
/// outcome to [`Responder::answer`], which encodes the response frame once.
#[derive(Debug)]
pub struct Responder {
    id: Value,
    null_data: bool,
}

/// One encoded response frame, ready to be queued.
#[derive(Debug, Default)]
pub struct Answer {
    frame: FrameBatch,
}

impl Answer {
    /// The frame's bytes (one line, LF included).
    pub fn bytes(&self) -> &[u8] {
        self.frame.as_bytes()
    }

    /// The frame's bytes, to queue.
    pub fn into_batch(self) -> FrameBatch {
        self.frame
    }
}

impl Responder {
    /// The responder for the request `id`; `null_data` as in [`ErrorFrame`].
    pub fn new(id: Value, null_data: bool) -> Self {
        Self { id, null_data }
    }

    /// The id of the request being answered.
    pub fn id(&self) -> &Value {
        &self.id
    }

    /// The error frame for `error`.
    pub fn error_frame(&self, error: Error) -> ErrorFrame {
        ErrorFrame { id: Some(self.id.clone()), error, null_data: self.null_data }
    }

    /// Encodes the response for `outcome`: the result serialized straight into the frame.
    pub fn answer<T: Serialize>(self, outcome: Result<T, Error>) -> Answer {
        let mut frame = FrameBatch::default();
        let written = match &outcome {
            Ok(result) => frame.push(&SuccessFrame { id: &self.id, result }),
            Err(e) => frame.push(&self.error_frame(e.clone())),
        };
        if written.is_err() {
            // Our result types always serialize; if one did not, the request is still answered.
            let _ = frame.push(&self.error_frame(Error::internal("could not serialize the result")));
        }
        Answer { frame }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_encoded_once_into_their_frame() {
        let id = Value::from(7);
        let ok = Responder::new(id.clone(), false).answer(Ok::<_, Error>(true));
        assert_eq!(ok.bytes(), b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":true}\n");
        let acp = Responder::new(id.clone(), false).answer::<()>(Err(Error::internal("no")));
        assert_eq!(acp.bytes(), b"{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32603,\"message\":\"no\"}}\n");
        let kimi = Responder::new(id, true).answer::<()>(Err(Error::internal("no")));
        assert_eq!(kimi.bytes(), b"{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32603,\"message\":\"no\",\"data\":null}}\n");
    }
}
