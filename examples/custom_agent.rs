//! A custom agent served in every dialect: its reply is the prompt text reversed.
//!
//! ```sh
//! cargo run --example custom_agent -- --mode acp    # or rpc, wire
//! ```
//!
//! It implements only the core's required part (`control` and `prompt`: the run, with `Runs`
//! keeping the bookkeeping and the conversation) and takes the defaults for the rest: the
//! messages come from `Runs`; `compact`, `bash`, models, sessions on disk … are refused with
//! "this agent does not support `…`" and advertised as absent.

use agentwire::core::events::RunOutcome;
use agentwire::core::{AgentCore, AgentInfo, CoreResult, Host, QueueKind, Runs, Submitted};
use agentwire::protocol::ImageContent;
use agentwire::server::{serve_with, Dialect, ServeOptions};

/// Answers every prompt with its text reversed.
struct Reverse {
    runs: Runs,
}

impl AgentCore for Reverse {
    type Control = Runs;
    fn control(&self) -> &Runs {
        &self.runs
    }
    async fn prompt(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>) -> CoreResult<Submitted> {
        self.check_input(&images)?;
        let reversed: String = text.chars().rev().collect();
        self.runs.start(text, images, queue, move |reply| async move {
            reply.text(reversed).await;
            RunOutcome::Completed
        }).await
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dialect = match args.iter().position(|a| a == "--mode").and_then(|i| args.get(i + 1)).map(String::as_str) {
        Some("acp") => Dialect::Acp,
        Some("wire") => Dialect::Wire,
        Some("rpc") | None => Dialect::Rpc,
        Some(other) => {
            eprintln!("custom_agent: unknown --mode {other} (rpc, wire or acp)");
            std::process::exit(2);
        }
    };
    let make = |host: Host| Reverse { runs: Runs::new("reverse", host) };
    let options = ServeOptions::default().with_info(AgentInfo::new("custom_agent", env!("CARGO_PKG_VERSION")));
    serve_with(dialect, options, make, tokio::io::stdin(), tokio::io::stdout()).await
}
