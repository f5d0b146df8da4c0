//! longrun's engine: one bounded iteration over the ports. Never names an adapter.

pub mod llm;
pub mod ports;
pub mod prompt;
pub mod step;
pub mod tools;

pub use llm::{ChatRequest, ChatResponse, LlmClient, LlmError, LlmErrorKind, LlmRole, Usage};
pub use ports::{
    Clock, Delivery, FaultPoint, Faults, ManualClock, NoFaults, Notifier, OutcomeMessage,
    QueueError, RunStore, StepMessage, StepQueue, StepReason, StoreError, SystemClock,
};
pub use step::{Dispatch, Engine, EngineConfig, EngineError, StepOutcome, SweepReport};
pub use tools::ToolRegistry;
