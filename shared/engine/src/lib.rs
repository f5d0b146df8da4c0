//! longrun's engine: one bounded iteration over the ports (`longrun-ports`). Never names an
//! adapter; adapters never name it.

pub mod prompt;
pub mod step;
pub mod tools;

pub use step::{Engine, EngineConfig, EngineError, FollowUp, StepOutcome, SweepReport};
pub use tools::ToolRegistry;
