//! What follows an agent process's end, decided once for both supervisors of one agent:
//! `longrun task`'s restart loop and `serve`'s agent host (one process per iteration of an
//! agent run). The decision is pure: [`next`] (wait for a usage limit's reset, fail fast with
//! the cause, end on a stop, complete once the children are waited for, or start again, and
//! why), [`resume`] (the CLI session the next start carries on) and the reset's time. The
//! supervisors do the waiting, the posting and the starting.

use std::time::Duration;

use crate::backend::Failure;
use crate::job::JobOutcome;
use crate::runinfo::{Ended, RunInfo};

/// What an agent process's end left, as its supervisor reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct End<'a> {
    pub ended: Ended,
    /// The backend that ran.
    pub backend: &'a str,
    /// The CLI session it reported.
    pub session: Option<&'a str>,
    /// A usage limit it hit: `Some(resets_at)`, the reset in epoch seconds when the CLI said.
    pub limit: Option<Option<i64>>,
    /// Why it failed, when its CLI said or it could not start.
    pub failure: Option<&'a Failure>,
}

impl<'a> End<'a> {
    /// The end the run's watcher just recorded.
    pub fn of(out: &'a JobOutcome) -> Self {
        End {
            ended: out.ended,
            backend: &out.backend,
            session: out.session.as_deref(),
            limit: out.limit.as_ref().map(|l| l.resets_at),
            failure: out.failure.as_ref(),
        }
    }

    /// The end as its run-info records it. A run that could not start records no `ended`:
    /// it failed fast.
    pub fn recorded(info: &'a RunInfo) -> Self {
        End {
            ended: info.ended.unwrap_or(Ended::FailedFast),
            backend: &info.agent,
            session: info.session_id.as_deref(),
            limit: info.usage_limit().map(|l| l.resets_at),
            failure: info.failure.as_ref(),
        }
    }
}

/// What follows a process's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// A usage limit: wait for its reset (epoch seconds, when known). Not a restart: starting
    /// again before the reset would only hit it again.
    WaitForReset { resets_at: Option<i64> },
    /// The backend failed in a way no restart fixes (authentication, quota, it cannot start)
    /// and DONE is not written: the task fails with the cause.
    Fail { cause: String },
    /// `longrun stop` stopped it: the user's word, no restart.
    Stopped,
    /// DONE is written: wait for the children still running, then the task is complete.
    Done,
    /// Start the agent again; `after` is how this process ended (stuck and idle ones were
    /// killed).
    Restart { after: Ended },
}

/// The decision, first match wins: a usage limit, a fatal failure short of DONE, a stop, DONE,
/// else a restart. `done`: DONE is in the task folder.
pub fn next(end: &End, done: bool) -> Next {
    if let Some(resets_at) = end.limit {
        return Next::WaitForReset { resets_at };
    }
    if let Some(f) = end.failure.filter(|f| f.kind.is_fatal())
        && !done
    {
        return Next::Fail {
            cause: format!("{}: {}", f.kind.as_str(), f.cause),
        };
    }
    match end.ended {
        Ended::Stopped => Next::Stopped,
        _ if done => Next::Done,
        after => Next::Restart { after },
    }
}

/// (backend, CLI session) the next start resumes: a session that ended cleanly or was
/// stopped, never one that was stuck, idle, out of time or failed fast (a session that went
/// wrong is not carried on). `run_job` resumes it only on the same backend.
pub fn resume(end: &End, enabled: bool) -> Option<(String, String)> {
    let clean = matches!(end.ended, Ended::Exited | Ended::Stopped);
    let session = end.session.filter(|s| enabled && clean && !s.is_empty())?;
    Some((end.backend.to_string(), session.to_string()))
}

/// How long to wait for a reset at `resets_at` (epoch seconds) from `now`: a second when it
/// has passed, `unknown` when the CLI did not say.
pub fn reset_wait(resets_at: Option<i64>, now: i64, unknown: Duration) -> Duration {
    match resets_at {
        Some(t) if t > now => Duration::from_secs((t - now) as u64),
        Some(_) => Duration::from_secs(1),
        None => unknown,
    }
}

/// The reset at `resets_at` (epoch seconds) in epoch milliseconds; `unknown` from `now_ms`
/// when the CLI did not say.
pub fn reset_at_ms(resets_at: Option<i64>, now_ms: i64, unknown: Duration) -> i64 {
    match resets_at {
        Some(t) => t * 1000,
        None => now_ms + unknown.as_millis() as i64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::FailureKind;

    fn end(ended: Ended) -> End<'static> {
        End {
            ended,
            backend: "claude",
            session: Some("s-1"),
            limit: None,
            failure: None,
        }
    }

    fn failure(kind: FailureKind) -> &'static Failure {
        Box::leak(Box::new(Failure {
            kind,
            cause: "401".into(),
        }))
    }

    #[test]
    fn a_clean_exit_without_done_restarts_and_with_done_completes() {
        assert_eq!(
            next(&end(Ended::Exited), false),
            Next::Restart {
                after: Ended::Exited
            }
        );
        assert_eq!(next(&end(Ended::Exited), true), Next::Done);
    }

    #[test]
    fn stuck_idle_out_of_time_and_failed_fast_restart_saying_how_they_ended() {
        for e in [
            Ended::Stuck,
            Ended::Idle,
            Ended::OutOfTime,
            Ended::FailedFast,
        ] {
            assert_eq!(next(&end(e), false), Next::Restart { after: e });
        }
    }

    #[test]
    fn a_usage_limit_waits_for_its_reset_before_anything_else() {
        let limited = End {
            limit: Some(Some(1_700_000_000)),
            failure: Some(failure(FailureKind::Auth)),
            ..end(Ended::Stopped)
        };

        assert_eq!(
            next(&limited, true),
            Next::WaitForReset {
                resets_at: Some(1_700_000_000)
            }
        );
    }

    #[test]
    fn a_fatal_failure_fails_with_its_cause_unless_done_is_written() {
        let failed = End {
            failure: Some(failure(FailureKind::Auth)),
            ..end(Ended::FailedFast)
        };

        assert_eq!(
            next(&failed, false),
            Next::Fail {
                cause: "authentication failed: 401".into()
            }
        );
        assert_eq!(next(&failed, true), Next::Done);
    }

    #[test]
    fn a_transient_failure_is_restarted() {
        let flaky = End {
            failure: Some(failure(FailureKind::Transient)),
            ..end(Ended::Exited)
        };

        assert_eq!(
            next(&flaky, false),
            Next::Restart {
                after: Ended::Exited
            }
        );
    }

    #[test]
    fn a_stop_ends_even_with_done_written() {
        assert_eq!(next(&end(Ended::Stopped), false), Next::Stopped);
        assert_eq!(next(&end(Ended::Stopped), true), Next::Stopped);
    }

    #[test]
    fn only_a_clean_or_stopped_session_is_resumed_and_only_when_enabled() {
        let resumed = |e, enabled| resume(&end(e), enabled);

        assert_eq!(
            resumed(Ended::Exited, true),
            Some(("claude".into(), "s-1".into()))
        );
        assert!(resumed(Ended::Stopped, true).is_some());
        for e in [
            Ended::FailedFast,
            Ended::Stuck,
            Ended::Idle,
            Ended::OutOfTime,
        ] {
            assert_eq!(resumed(e, true), None, "{e:?}");
        }
        assert_eq!(resumed(Ended::Exited, false), None);
        let no_session = End {
            session: Some(""),
            ..end(Ended::Exited)
        };
        assert_eq!(resume(&no_session, true), None);
    }

    #[test]
    fn a_run_that_could_not_start_reads_as_failed_fast() {
        let info = RunInfo {
            agent: "codex".into(),
            session_id: Some("t-1".into()),
            ..RunInfo::default()
        };

        let e = End::recorded(&info);

        assert_eq!((e.ended, e.backend), (Ended::FailedFast, "codex"));
        assert_eq!(resume(&e, true), None);
    }

    #[test]
    fn the_reset_wait_is_the_time_left_a_second_when_passed_the_default_when_unknown() {
        let unknown = Duration::from_secs(300);

        assert_eq!(reset_wait(Some(130), 100, unknown), Duration::from_secs(30));
        assert_eq!(reset_wait(Some(90), 100, unknown), Duration::from_secs(1));
        assert_eq!(reset_wait(None, 100, unknown), unknown);
        assert_eq!(reset_at_ms(Some(130), 100_500, unknown), 130_000);
        assert_eq!(reset_at_ms(None, 100_500, unknown), 400_500);
    }
}
