//! The message of a caught panic, for the error that answers in its place: the JSON-RPC runtime
//! (a request's handler panicked), the rpc serve loop and the agent core (a run panicked) all
//! name it the same way. Its own module so that every layer may use it.

/// The message a panic was raised with (`panic!("…")` gives a `&str` or a `String`); empty for
/// any other payload.
pub(crate) fn reason(panic: Box<dyn std::any::Any + Send>) -> String {
    match panic.downcast::<String>() {
        Ok(text) => *text,
        Err(panic) => panic.downcast_ref::<&str>().map(|s| (*s).to_owned()).unwrap_or_default(),
    }
}
