//! The ports: every trait the engine and the use cases talk through, and the messages they
//! speak. Adapters (`longrun-local`, `longrun-aws`, `longrun-llm`, `longrun-outbound`) depend on
//! this crate and the domain only, never on the engine. Each store trait has a conformance suite
//! in `tests/` that every adapter passes.

pub mod agent;
pub mod archive;
pub mod clock;
pub mod durability;
pub mod faults;
pub mod fetch;
pub mod git;
pub mod idempotency;
pub mod llm;
pub mod notify;
pub mod outbox;
pub mod pricing;
pub mod queue;
pub mod redact;
pub mod seal;
pub mod signing;
pub mod store;
pub mod tools;

pub use agent::{AgentError, AgentHost, AgentTurn, BusPage, CheckRun, Folder};
pub use archive::{RunArchive, RunRetention};
pub use clock::{Clock, ManualClock, SystemClock};
pub use durability::Durability;
pub use faults::{FaultPoint, Faults, NoFaults};
pub use fetch::{FetchPolicy, HostLookup, Refusal};
pub use idempotency::{IDEMPOTENCY_WINDOW_MS, IdempotencyKeys, IdempotencyRecord};
pub use llm::{
    ChatMessage, ChatRequest, ChatResponse, LlmClient, LlmError, LlmErrorKind, LlmRole, Usage,
};
pub use notify::{Notifier, NotifyError};
pub use outbox::{WebhookOutbox, WebhookPoster};
pub use queue::{
    DEDUP_WINDOW_MS, Delivery, Enqueued, QueueError, QueueResult, StepMessage, StepQueue,
    StepReason, send_then_ack_and_next,
};
pub use seal::{SealError, Sealer};
pub use store::{
    CatalogEntry, CatalogExt, CatalogKind, CatalogScope, ChangeFn, ContextFilter, Inbox, RunLog,
    RunQuery, ScheduleStore, Store, StoreError, StoreResult, UserCatalog, Workspace,
};
pub use tools::{McpConnector, McpToolSpec, Tool, ToolContext, ToolFactory};

/// Every store trait in scope, for code that calls a concrete adapter's methods (tests,
/// wiring); code holding a `dyn Store` needs only `CatalogExt`.
pub mod prelude {
    pub use crate::idempotency::IdempotencyKeys as _;
    pub use crate::outbox::WebhookOutbox as _;
    pub use crate::store::{
        CatalogExt as _, Inbox as _, RunLog as _, ScheduleStore as _, UserCatalog as _,
        Workspace as _,
    };
}
