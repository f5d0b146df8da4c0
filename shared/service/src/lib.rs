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
pub mod idempotency;
pub mod outbox;
pub mod platform;
pub mod retention;
pub mod runs;
pub mod schedules;
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
pub use trigger::{Handled, Settle, settle, step_body};
pub use worker_loop::{
    DEFAULT_MAX_INFLIGHT, PollStats, WorkerConfig, WorkerLoop, carry_delivery, handle_delivery,
};

/// Human logs for the CLI, JSON for Lambda; `RUST_LOG` overrides the level.
pub fn init_tracing(json: bool, default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
