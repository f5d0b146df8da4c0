//! Crash points of an iteration, for the crash/redelivery tests and the simulator.

/// Step boundaries where a fault hook can crash the worker (tests only in practice).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultPoint {
    AfterClaim,
    AfterLlmCall,
    /// The iteration's work (model and tool calls) is done; nothing of it is committed.
    BeforeCommit,
    AfterCommit,
    AfterEnqueue,
}

pub trait Faults: Send + Sync {
    /// True makes the step stop dead at `point`, as a crash would: no ack, no cleanup.
    fn crash_at(&self, point: FaultPoint, run_id: &str, iteration: u32) -> bool;
}

pub struct NoFaults;

impl Faults for NoFaults {
    fn crash_at(&self, _: FaultPoint, _: &str, _: u32) -> bool {
        false
    }
}
