//! Which ACP version a connection speaks: read off its first line, before either front serves
//! it. An `initialize` asking for protocol version 2 or later gets v2 (which answers 2, the
//! highest agentwire supports at or below the version asked); anything else — version 1, 0, a
//! string, another method first, a line that is not JSON — is served by v1
//! (v1 answers version 1 to any version, as its spec asks). The line is handed back to the
//! front that serves the connection, so it is read once, by the front, like every other.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, BufReader};

/// An ACP protocol version agentwire speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcpVersion {
    /// ACP v1 (stable).
    V1,
    /// ACP v2 (Preview).
    V2,
}

/// The version the first line of a connection asks for (see the module docs).
pub fn asked(first_line: &[u8]) -> AcpVersion {
    #[derive(serde::Deserialize)]
    struct Initialize {
        method: String,
        params: Params,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Params {
        protocol_version: serde_json::Value,
    }
    match serde_json::from_slice::<Initialize>(first_line) {
        Ok(i) if i.method == "initialize" && i.params.protocol_version.as_u64().is_some_and(|v| v >= 2) => AcpVersion::V2,
        Ok(_) | Err(_) => AcpVersion::V1,
    }
}

/// The input of a connection whose first line was read to pick its version: that line, then
/// the rest.
pub type Routed<R> = BufReader<tokio::io::Chain<std::io::Cursor<Vec<u8>>, R>>;

/// Reads the first line of `input` (at most `max_line_bytes`; a longer one is left for the
/// front to refuse) and returns the version it asks for, a copy of that line (as read, its
/// newline included) and the whole input to serve. `crate::server::acp_version` is the one
/// caller: the version of a connection is chosen there.
pub async fn route_keeping<R: AsyncBufRead + Unpin>(mut input: R, max_line_bytes: usize) -> (AcpVersion, Vec<u8>, Routed<R>) {
    let mut line = Vec::new();
    let limit = u64::try_from(max_line_bytes).unwrap_or(u64::MAX).saturating_add(1);
    // A read error is the front's to meet: it reads the same input next.
    let _ = (&mut input).take(limit).read_until(b'\n', &mut line).await;
    let version = asked(&line);
    (version, line.clone(), BufReader::with_capacity(64 * 1024, std::io::Cursor::new(line).chain(input)))
}

/// The id of the `initialize` request `first_line` is, if it is one.
pub fn initialize_id(first_line: &[u8]) -> Option<serde_json::Value> {
    #[derive(serde::Deserialize)]
    struct Request {
        method: String,
        id: serde_json::Value,
    }
    serde_json::from_slice::<Request>(first_line).ok().filter(|r| r.method == "initialize" && (r.id.is_string() || r.id.is_number())).map(|r| r.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_initialize_asking_for_two_or_more_is_v2() {
        let v = |s: &str| asked(s.as_bytes());
        assert_eq!(v(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}"#), AcpVersion::V2);
        assert_eq!(v(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":7}}"#), AcpVersion::V2);
        assert_eq!(v(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#), AcpVersion::V1);
        assert_eq!(v(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2"}}"#), AcpVersion::V1);
        assert_eq!(v(r#"{"jsonrpc":"2.0","id":0,"method":"session/new","params":{"protocolVersion":2}}"#), AcpVersion::V1);
        assert_eq!(v("{nope"), AcpVersion::V1);
        assert_eq!(v(""), AcpVersion::V1);
    }

    #[tokio::test]
    async fn the_first_line_is_served_too() {
        let input: &[u8] = b"{\"method\":\"initialize\",\"params\":{\"protocolVersion\":2}}\nsecond\n";
        let (version, line, mut routed) = route_keeping(input, 1024).await;
        assert_eq!(line, b"{\"method\":\"initialize\",\"params\":{\"protocolVersion\":2}}\n");
        assert_eq!(version, AcpVersion::V2);
        let mut all = String::new();
        routed.read_to_string(&mut all).await.unwrap();
        assert_eq!(all, "{\"method\":\"initialize\",\"params\":{\"protocolVersion\":2}}\nsecond\n");
    }
}
