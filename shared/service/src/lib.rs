//! longrun's use cases over the ports, apart from any transport: HTTP (`longrun-http`), MCP,
//! the Lambda handlers and `serve`'s loops all call these. Errors are `ServiceError`, never an
//! HTTP type.

pub mod trigger;
pub mod worker_loop;

pub use trigger::{Handled, Settle, settle, step_body};
pub use worker_loop::{DEFAULT_MAX_INFLIGHT, PollStats, WorkerConfig, WorkerLoop, handle_delivery};
