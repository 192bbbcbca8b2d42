//! Server-sent events from a reqwest response, parsed by the `eventsource-stream` crate.

use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};

use super::{http_error, retry_after, transport_error, ProviderError};

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

/// Sends a streaming request: a non-success status becomes the error (with the server's message
/// and `Retry-After`); otherwise the response's events.
pub async fn open(builder: reqwest::RequestBuilder) -> Result<impl Stream<Item = Result<SseEvent, ProviderError>> + Send + Unpin, ProviderError> {
    let response = builder.send().await.map_err(|e| transport_error(&e))?;
    let status = response.status();
    if !status.is_success() {
        let after = retry_after(response.headers());
        let body = response.text().await.unwrap_or_default();
        return Err(http_error(status.as_u16(), after, &body));
    }
    Ok(events(response))
}
