//! The HTTP API, configuration and wiring shared by the CLI and (later) the Lambda functions.

pub mod api;
#[cfg(feature = "aws")]
pub mod aws;
pub mod config;
pub mod console;
#[cfg(feature = "embedded")]
pub mod embedded;
pub mod error;
pub mod mcp;
pub mod mcp_servers;
pub mod openapi;
pub mod platform;
pub mod schedules;
pub mod tools;
pub mod webhooks;

pub use api::{CreateRun, VerifiedUser, create_run, router};
pub use config::{AppConfig, FetchConfig, Tokens};
pub use console::{Console, router_with_console};
#[cfg(feature = "embedded")]
pub use embedded::{Embedded, Running};
pub use error::ApiError;
pub use platform::Platform;

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
