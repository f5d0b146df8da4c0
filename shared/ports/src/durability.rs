//! How durable a write must be when its call returns: a parameter of the writes that can be
//! made cheaper by deferring it (`RunLog::update_run`, `StepQueue::enqueue`), not a second
//! method for each.

/// How durable a write must be when the call that makes it returns. Each port's contract says
/// when a caller may ask for `Deferred`. Adapters without a cheaper deferred path (memory,
/// DynamoDB, SQS, whose every write is as durable as it gets when it returns) treat both the
/// same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Durable when the call returns: a crash after it loses nothing.
    Now,
    /// For a write a crash may lose harmlessly, because what caused it is not yet acknowledged
    /// and is redone (a claim whose lease is taken again, an iteration committed or a step sent
    /// for a message still in flight, which is redelivered). A store that batches durability
    /// (SQLite's group commit) may return before the write is on disk; it is durable no later
    /// than the next `Now` write of the same store, and a crash loses it only together with
    /// every write after it.
    Deferred,
}
