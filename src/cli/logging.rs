//! Diagnostics on stderr through `tracing`, never on stdout (stdout carries only frames). The
//! level comes from `--log-level`, else `$AGENTWIRE_LOG` (an env-filter directive such as
//! `debug` or `agentwire::providers=debug`), else `info`. Lines read `agentwire: warn: …`.
//! The MCP client library (`rmcp`) says only its warnings unless the directive names it.

use std::fmt;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

/// `agentwire: <level>: <message>` (the level is left out for `info`, which is the tool
/// talking to its user).
struct Compact;

impl<S, N> FormatEvent<S, N> for Compact
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let level = *event.metadata().level();
        if level == Level::INFO {
            write!(writer, "agentwire: ")?;
        } else {
            write!(writer, "agentwire: {}: ", level.as_str().to_ascii_lowercase())?;
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// Installs the stderr subscriber. A bad directive is reported and the default used instead.
pub fn init(level: Option<&str>) {
    let directive = level.map(str::to_owned).or_else(|| std::env::var("AGENTWIRE_LOG").ok()).unwrap_or_else(|| "info".to_owned());
    // rmcp (the MCP client) logs every handshake at info, a server's whole instructions
    // included: only its warnings, unless the directive names it (`debug,rmcp=debug`).
    let directive = if directive.contains("rmcp") { directive } else { format!("{directive},rmcp=warn") };
    let (filter, bad) = match EnvFilter::try_new(&directive) {
        Ok(f) => (f, None),
        Err(e) => (EnvFilter::new("info"), Some(e)),
    };
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).event_format(Compact).with_env_filter(filter).try_init();
    if let Some(e) = bad {
        tracing::warn!("ignoring the log level {directive:?}: {e}");
    }
}
