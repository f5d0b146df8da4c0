//! longrun's use cases over the ports, apart from any transport: the HTTP API
//! (`longrun-http`), its MCP server, the Lambda handlers and `serve`'s loops all call these,
//! and none of them links axum through this crate. Also the wiring (`Platform`, `AppConfig`,
//! the AWS and embedded assemblies), the one trigger policy and outcome delivery to webhooks.

#[cfg(feature = "aws")]
pub mod aws;
pub mod config;
#[cfg(feature = "embedded")]
pub mod embedded;
pub mod error;
pub mod files;
pub mod idempotency;
pub mod outbox;
pub mod platform;
pub mod retention;
pub mod runs;
pub mod schedules;
pub mod tasks;
pub mod trigger;
pub mod webhooks;
pub mod worker_loop;

pub use config::{AppConfig, FetchConfig, Tokens};
#[cfg(feature = "embedded")]
pub use embedded::{Embedded, Running};
pub use error::ServiceError;
pub use outbox::{Outbox, OutboxConfig};
pub use platform::{Platform, PlatformError};
pub use retention::{Retention, RetentionMode, RetentionPolicy};
pub use runs::{CreateRun, create_run};
pub use trigger::{Handled, Settle, retry_later, settle, step_body};
pub use worker_loop::{
    DEFAULT_MAX_INFLIGHT, PollStats, WorkerConfig, WorkerLoop, carry_delivery, handle_delivery,
};

/// Logs on stderr: human lines for the CLI (`json` false), JSON lines for Lambda and for
/// `--log-format json`; `RUST_LOG` overrides the level. Colour only for a person at a terminal:
/// a log redirected to a file or a pipe, or read with `NO_COLOR` set, gets no escape codes.
pub fn init_tracing(json: bool, default_level: &str) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let terminal = std::io::stderr().is_terminal();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(!json && colour(terminal, std::env::var_os("NO_COLOR")));
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// Whether to colour a log: on a terminal, unless `NO_COLOR` is set to something
/// (<https://no-color.org>: an empty value does not count).
fn colour(terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::colour;

    #[test]
    fn logs_are_coloured_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some("".into())));
        assert!(!colour(true, Some("1".into())));
        assert!(!colour(false, None));
    }
}
