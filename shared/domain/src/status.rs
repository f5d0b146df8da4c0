//! The run's status machine: which moves are legal, and what each move does to the fields
//! that only mean something in some states. [`Run::transition_to`] is the one way a run's
//! status changes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::DomainError;
use crate::run::Run;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Queued,
    Running,
    WaitingOnUser,
    WaitingOnChildren,
    /// Held by the user between iterations; `continue` queues it again.
    Paused,
    Completed,
    Stopped,
    Canceled,
    Failed,
}

impl RunStatus {
    pub const ALL: [RunStatus; 9] = [
        RunStatus::Queued,
        RunStatus::Running,
        RunStatus::WaitingOnUser,
        RunStatus::WaitingOnChildren,
        RunStatus::Paused,
        RunStatus::Completed,
        RunStatus::Stopped,
        RunStatus::Canceled,
        RunStatus::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::WaitingOnUser => "waiting_on_user",
            RunStatus::WaitingOnChildren => "waiting_on_children",
            RunStatus::Paused => "paused",
            RunStatus::Completed => "completed",
            RunStatus::Stopped => "stopped",
            RunStatus::Canceled => "canceled",
            RunStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<RunStatus> {
        RunStatus::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Ended runs hold no slot in the per-user active counter. `stopped` can still be continued,
    /// and every ended run but a `canceled` one can be asked a follow-up question.
    pub fn is_ended(self) -> bool {
        matches!(
            self,
            RunStatus::Completed | RunStatus::Stopped | RunStatus::Canceled | RunStatus::Failed
        )
    }

    /// Final: nothing can move the run out of it. The user's cancel stays the one sure way
    /// to end a run (and its attached children) for good.
    pub fn is_final(self) -> bool {
        self == RunStatus::Canceled
    }

    /// A worker may claim the next iteration only in these.
    pub fn is_claimable(self) -> bool {
        matches!(self, RunStatus::Queued | RunStatus::Running)
    }

    pub fn is_waiting(self) -> bool {
        matches!(
            self,
            RunStatus::WaitingOnUser | RunStatus::WaitingOnChildren
        )
    }

    /// The machine, and only the moves the domain makes: a claim (queued or running to
    /// running), a commit (running to anything but queued), the user's cancel, pause, answer,
    /// resume, continue and follow-up question, and the children's end (or the wait for them
    /// timing out) waking or stopping their parent.
    pub fn can_transition_to(self, to: RunStatus) -> bool {
        use RunStatus::*;
        match self {
            Queued => matches!(to, Running | Paused | Canceled),
            Running => to != Queued,
            WaitingOnUser | WaitingOnChildren => matches!(to, Queued | Stopped | Canceled),
            Paused => matches!(to, Queued | Canceled),
            // `continue`, or a follow-up question to an ended run.
            Stopped | Completed | Failed => matches!(to, Queued),
            Canceled => false,
        }
    }

    pub fn transition(self, to: RunStatus) -> Result<RunStatus, DomainError> {
        if self.can_transition_to(to) {
            Ok(to)
        } else {
            Err(DomainError::IllegalTransition { from: self, to })
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A run's status as the run holds it: read it like a [`RunStatus`] (it derefs to one and
/// compares with one), change it only through [`Run::transition_to`]. Its field is private so
/// no code can assign a status past the machine; stores still (de)serialize it as the bare
/// status string.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CurrentStatus(RunStatus);

// The API document shows a run's status as the `RunStatus` it is on the wire.
impl JsonSchema for CurrentStatus {
    fn inline_schema() -> bool {
        RunStatus::inline_schema()
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        RunStatus::schema_name()
    }
    fn schema_id() -> std::borrow::Cow<'static, str> {
        RunStatus::schema_id()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        RunStatus::json_schema(generator)
    }
}

impl CurrentStatus {
    /// Where every run starts.
    pub(crate) fn initial() -> Self {
        CurrentStatus(RunStatus::Queued)
    }

    pub fn get(self) -> RunStatus {
        self.0
    }
}

impl std::ops::Deref for CurrentStatus {
    type Target = RunStatus;
    fn deref(&self) -> &RunStatus {
        &self.0
    }
}

impl PartialEq<RunStatus> for CurrentStatus {
    fn eq(&self, other: &RunStatus) -> bool {
        self.0 == *other
    }
}

impl PartialEq<CurrentStatus> for RunStatus {
    fn eq(&self, other: &CurrentStatus) -> bool {
        *self == other.0
    }
}

impl From<CurrentStatus> for RunStatus {
    fn from(s: CurrentStatus) -> RunStatus {
        s.0
    }
}

// Printed as the bare status, so logs and assertion messages read as before.
impl std::fmt::Debug for CurrentStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.0, f)
    }
}

impl std::fmt::Display for CurrentStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

impl Run {
    /// Moves the run to `to`, or says why the machine forbids it. The fields tied to a state
    /// follow it here, so no caller can leave one behind:
    /// - leaving `running`: no lease (no iteration is in flight) and no pause pending;
    /// - leaving `waiting_on_user`: the questions are answered or moot;
    /// - entering `waiting_on_children`: the wait's deadline (`child_wait_timeout_s` from now);
    ///   leaving it: none;
    /// - entering an ended status: `ended_at`; leaving one (`continue`): no `ended_at`, no
    ///   cancel pending;
    /// - entering `queued`: the last stop's reason and report no longer describe the run (a
    ///   follow-up's event keeps what the superseded report said);
    /// - entering `waiting_on_user` or an ended status: its outcome is owed to the user
    ///   (`notified` false); entering `paused` or `waiting_on_children`: nothing to announce.
    pub fn transition_to(&mut self, to: RunStatus, now: i64) -> Result<(), DomainError> {
        let from = self.status.0;
        from.transition(to)?;
        self.status = CurrentStatus(to);
        self.updated_at = now;
        if from == RunStatus::Running && to != RunStatus::Running {
            self.lease = None;
            self.pause_requested = false;
        }
        if from == RunStatus::WaitingOnUser && to != RunStatus::WaitingOnUser {
            self.questions.clear();
        }
        self.children_wait_until = (to == RunStatus::WaitingOnChildren)
            .then(|| now.saturating_add((self.thresholds.child_wait_timeout_s * 1_000) as i64));
        if to.is_ended() && !from.is_ended() {
            self.ended_at = Some(now);
        }
        if from.is_ended() && !to.is_ended() {
            self.ended_at = None;
            self.cancel_requested = false;
        }
        if to == RunStatus::Queued {
            self.stopping_reason = None;
            self.report = None;
        }
        match to {
            RunStatus::WaitingOnUser => self.notified = false,
            RunStatus::Paused | RunStatus::WaitingOnChildren => self.notified = true,
            t if t.is_ended() => self.notified = false,
            _ => {}
        }
        Ok(())
    }

    /// Test fixtures only: puts the run in `status` as a store would load it, past the machine.
    #[cfg(any(test, feature = "testing"))]
    pub fn with_status_for_tests(mut self, status: RunStatus) -> Run {
        self.status = CurrentStatus(status);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::build_report;
    use crate::run::{StopType, StoppingReason};
    use crate::testing::sample_run;
    use RunStatus::*;

    /// Every legal move, by hand: anything not listed must be refused.
    const LEGAL: &[(RunStatus, RunStatus)] = &[
        (Queued, Running),
        (Queued, Paused),
        (Queued, Canceled),
        (Running, Running),
        (Running, WaitingOnUser),
        (Running, WaitingOnChildren),
        (Running, Paused),
        (Running, Completed),
        (Running, Stopped),
        (Running, Canceled),
        (Running, Failed),
        (WaitingOnUser, Queued),
        (WaitingOnUser, Stopped),
        (WaitingOnUser, Canceled),
        (WaitingOnChildren, Queued),
        (WaitingOnChildren, Stopped),
        (WaitingOnChildren, Canceled),
        (Paused, Queued),
        (Paused, Canceled),
        (Stopped, Queued),
        (Completed, Queued),
        (Failed, Queued),
    ];

    #[test]
    fn every_pair_of_statuses_is_legal_exactly_when_the_table_says_so() {
        for from in RunStatus::ALL {
            for to in RunStatus::ALL {
                // Arrange
                let run = sample_run().with_status_for_tests(from);
                let legal = LEGAL.contains(&(from, to));

                // Act
                let mut moved = run.clone();
                let result = moved.transition_to(to, 7);

                // Assert
                if legal {
                    assert_eq!(result, Ok(()), "{from} -> {to} must be allowed");
                    assert_eq!(moved.status, to);
                } else {
                    assert_eq!(
                        result,
                        Err(DomainError::IllegalTransition { from, to }),
                        "{from} -> {to} must be refused"
                    );
                    assert_eq!(moved, run, "a refused move changes nothing");
                }
            }
        }
    }

    #[test]
    fn the_guarded_status_is_a_bare_status_on_the_wire_and_in_the_api_document() {
        // Arrange
        let run = sample_run();
        let run_schema = schemars::schema_for!(Run);
        let child_schema = schemars::schema_for!(crate::run::ChildRun);

        // Act
        let json = serde_json::to_value(&run).unwrap();
        let back: Run = serde_json::from_value(json.clone()).unwrap();

        // Assert
        assert_eq!(json["status"], "running");
        assert_eq!(back.status, Running);
        assert_eq!(
            run_schema.as_value()["properties"]["status"],
            child_schema.as_value()["properties"]["status"]
        );
    }

    #[test]
    fn a_canceled_run_accepts_no_transition() {
        assert!(
            RunStatus::ALL
                .iter()
                .all(|to| !Canceled.can_transition_to(*to))
        );
    }

    #[test]
    fn leaving_running_drops_the_lease_and_a_pending_pause() {
        // Arrange
        let mut run = sample_run();
        run.lease = crate::testing::lease("w", 1, 9);
        run.pause_requested = true;

        // Act
        run.transition_to(Paused, 5).unwrap();

        // Assert
        assert!(run.lease.is_none() && !run.pause_requested);
        assert!(run.notified, "a pause the user asked for is not announced");
        assert_eq!(run.updated_at, 5);
    }

    #[test]
    fn an_ended_run_has_an_end_time_and_owes_its_outcome_until_continued() {
        // Arrange
        let mut run = sample_run();
        run.notified = true;

        // Act
        run.transition_to(Stopped, 10).unwrap();
        let ended_at = run.ended_at;
        run.cancel_requested = true;
        run.transition_to(Queued, 20).unwrap();

        // Assert
        assert_eq!(ended_at, Some(10));
        assert_eq!(run.ended_at, None);
        assert!(!run.cancel_requested);
    }

    #[test]
    fn leaving_waiting_on_user_clears_the_questions_and_the_stop() {
        // Arrange
        let mut run = sample_run();
        run.transition_to(WaitingOnUser, 1).unwrap();
        run.questions = vec!["which one?".into()];
        run.stopping_reason = Some(StoppingReason::new(StopType::WaitingOnUser, "1 question"));
        run.report = Some(build_report(&run, &[], "waits", &[], Default::default(), 1));
        assert!(!run.notified, "a wait on the user is announced");

        // Act
        run.transition_to(Queued, 2).unwrap();

        // Assert
        assert!(run.questions.is_empty());
        assert!(run.report.is_none() && run.stopping_reason.is_none());
    }
}
