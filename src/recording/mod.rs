//! Live sessions written as conformance transcripts: the normalization of live frames into
//! patterns ([`Normalizer`]), the transcript they make ([`Recording`]) and the bridge's tap on a
//! proxied session ([`Tap`]). The harness's `conformance record` drives an agent with it; the
//! bridge records what passes through it, so it lives apart from the harness.

mod normalize;
pub mod tap;
mod transcript;

pub use normalize::Normalizer;
pub use tap::Tap;
pub use transcript::Recording;

/// Inside a pattern string, stands for the run's temporary directory.
pub const TMP_PLACEHOLDER: &str = "{{tmp}}";
