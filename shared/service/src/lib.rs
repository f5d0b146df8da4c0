//! longrun's use cases over the ports and the domain, apart from any transport and any
//! adapter: the HTTP API (`longrun-http`), its MCP server, the Lambda handlers and `serve`'s
//! loops all call these. Also the one trigger policy, the worker loop and outcome delivery
//! through the webhook outbox. The adapters are chosen and assembled by `longrun-wiring`.

pub mod config;
pub mod error;
pub mod files;
pub mod idempotency;
pub mod outbox;
pub mod platform;
pub mod reads;
pub mod registrations;
pub mod retention;
pub mod runs;
pub mod schedules;
pub mod tasks;
pub mod trigger;
pub mod webhooks;
pub mod worker_loop;

pub use config::{AppConfig, ConfigError, FetchConfig, Tokens};
pub use error::ServiceError;
pub use outbox::{Outbox, OutboxConfig};
pub use platform::Platform;
pub use retention::{Retention, RetentionMode, RetentionPolicy};
pub use runs::{CreateRun, create_run};
pub use trigger::{Handled, Settle, retry_later, settle, step_body};
pub use worker_loop::{
    DEFAULT_MAX_INFLIGHT, PollStats, WorkerConfig, WorkerLoop, carry_delivery, handle_delivery,
};
