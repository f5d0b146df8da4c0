//! The HTTP face of longrun's use cases: the API under `/v1`, the MCP server, the OpenAPI
//! document and the console. Handlers check the caller and map `ServiceError` to
//! problem+json; the use cases themselves live in `longrun-service`.

pub mod api;
pub mod console;
pub mod error;
pub mod mcp;
pub mod mcp_servers;
pub mod openapi;
pub mod schedules;
pub mod strict;
pub mod tasks;
pub mod tools;

pub use api::{CreateRun, VerifiedUser, create_run, router};
pub use console::{Console, router_with_console};
pub use error::ApiError;
// What a router is built over; `longrun-wiring` assembles it.
pub use longrun_service::{AppConfig, FetchConfig, Platform, Tokens};
pub use longrun_service::{config, platform, webhooks};
