//! Server-sent events from a reqwest response, parsed by the `eventsource-stream` crate.

use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};

use super::{transport_error, ProviderError};

/// One SSE event: its `event:` name (empty for the default) and `data:` payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The event name.
    pub event: String,
    /// The data payload.
    pub data: String,
}

/// The events of a streaming response body.
pub fn events(response: reqwest::Response) -> impl Stream<Item = Result<SseEvent, ProviderError>> + Send + Unpin {
    response.bytes_stream().eventsource().map(|item| match item {
        Ok(e) => Ok(SseEvent { event: e.event, data: e.data }),
        Err(eventsource_stream::EventStreamError::Transport(e)) => Err(transport_error(&e)),
        Err(e) => Err(ProviderError::transient(format!("malformed event stream: {e}"))),
    })
}
