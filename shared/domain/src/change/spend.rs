//! Live spend: each model call's cost lands on the run as soon as the call returns.

use super::RunChange;
use crate::events::RunEvent;
use crate::run::{Run, Spend};

/// Calls remembered by key: more than an iteration's calls can have in flight at once.
const SPEND_KEYS: usize = 16;

/// `record_spend` for the call `key`, once: a retry of a write that landed adds nothing.
pub fn record_spend_once(run: &Run, n: u32, spend: &Spend, key: &str, now: i64) -> RunChange {
    let key = digest(key);
    if run.spend_keys.contains(&key) {
        return RunChange::of(run.clone(), vec![]);
    }
    let mut change = record_spend(run, n, spend, now);
    let keys = std::sync::Arc::make_mut(&mut change.run.spend_keys);
    keys.push(key);
    if keys.len() > SPEND_KEYS {
        keys.remove(0);
    }
    change
}

/// A call's key as the run keeps it: 16 hex digits (FNV-1a, 64 bits) instead of the worker,
/// run and call ids (about 90 bytes), since the run's row is rewritten on every write. Sixteen
/// keys of one run colliding is out of reach.
fn digest(key: &str) -> String {
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// Adds one LLM call's real spend. Not fenced: money spent by a crashed or superseded attempt
/// was still spent, and budgets must see it.
pub fn record_spend(run: &Run, n: u32, spend: &Spend, now: i64) -> RunChange {
    let mut next = run.clone();
    next.metrics.add_spend(spend);
    next.updated_at = now;
    let mut events = vec![
        RunEvent::IterationCostUpdate {
            iteration: n,
            role: spend.role.clone(),
            model: spend.model.clone(),
            input_tokens: spend.input_tokens,
            output_tokens: spend.output_tokens,
            cached_tokens: spend.cached_tokens,
            cost_usd: spend.cost_usd,
            latency_ms: spend.latency_ms,
            run_tokens: next.metrics.tokens(),
            run_cost_usd: next.metrics.cost_usd,
        }
        .into(),
    ];
    // Waits under a second are the normal jitter of a shared limit, not worth an event.
    if spend.queued_ms >= 1_000 {
        events.push(
            RunEvent::WaitingForCapacity {
                iteration: n,
                role: spend.role.clone(),
                model: spend.model.clone(),
                waited_ms: spend.queued_ms,
            }
            .into(),
        );
    }
    if spend.cost_usd.is_none() && !run.metrics.by_model.contains_key(&spend.model) {
        events.push(
            RunEvent::Warning {
                message: format!(
                    "no price known for model {}; its cost is recorded as unknown",
                    spend.model
                ),
            }
            .into(),
        );
    }
    RunChange::of(next, events)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::record::EventKind;
    use crate::testing::sample_run;

    fn planner_spend() -> Spend {
        Spend {
            model: "m".into(),
            role: "planner".into(),
            input_tokens: 10,
            output_tokens: 5,
            cached_tokens: 0,
            cost_usd: Some(0.01),
            latency_ms: 1,
            queued_ms: 0,
        }
    }

    #[test]
    fn spend_is_recorded_even_without_the_lease() {
        let run = sample_run();
        let spend = planner_spend();
        let change = record_spend(&run, 1, &spend, 0);
        assert_eq!(change.run.metrics.tokens(), 15);
        assert_eq!(change.events[0].kind, EventKind::IterationCostUpdate);
    }

    #[test]
    fn a_spend_write_retried_after_it_landed_counts_once() {
        let run = sample_run();
        let spend = planner_spend();

        let landed = record_spend_once(&run, 1, &spend, "w1#run-1#1#1", 0).run;
        let retried = record_spend_once(&landed, 1, &spend, "w1#run-1#1#1", 0);
        let next_call = record_spend_once(&retried.run, 1, &spend, "w1#run-1#1#2", 0);

        assert_eq!(retried.run.metrics.tokens(), 15);
        assert!(retried.events.is_empty());
        assert_eq!(next_call.run.metrics.tokens(), 30);
    }

    #[test]
    fn the_run_keeps_a_short_digest_of_each_of_its_last_sixteen_calls() {
        // Arrange
        let spend = planner_spend();
        let key = |i: u32| format!("worker-{:032x}#run_{:032x}#{i}#1", 7, 9);
        let mut run = sample_run();

        // Act
        for i in 0..20 {
            run = record_spend_once(&run, i, &spend, &key(i), 0).run;
        }

        // Assert: sixteen distinct 16-digit keys; the oldest are forgotten, the newest still count once.
        assert_eq!(run.spend_keys.len(), SPEND_KEYS);
        assert!(run.spend_keys.iter().all(|k| k.len() == 16));
        let distinct: std::collections::HashSet<_> = run.spend_keys.iter().collect();
        assert_eq!(distinct.len(), SPEND_KEYS);
        let again = record_spend_once(&run, 19, &spend, &key(19), 0);
        assert!(again.events.is_empty());
        let forgotten = record_spend_once(&run, 0, &spend, &key(0), 0);
        assert_eq!(forgotten.events.len(), 1);
    }

    #[test]
    fn an_unpriced_call_that_waited_is_costed_as_unknown_and_its_wait_logged() {
        // Arrange
        let spend = Spend {
            cost_usd: None,
            queued_ms: 1_500,
            ..planner_spend()
        };

        // Act
        let change = record_spend(&sample_run(), 2, &spend, 0);

        // Assert: the payloads clients read, key for key.
        let payloads: Vec<_> = change.events.iter().map(|e| &e.payload).collect();
        assert_eq!(
            payloads,
            vec![
                &json!({"iteration": 2, "role": "planner", "model": "m", "input_tokens": 10,
                        "output_tokens": 5, "cached_tokens": 0, "cost_usd": null,
                        "latency_ms": 1, "run_tokens": 15, "run_cost_usd": 0.0}),
                &json!({"iteration": 2, "role": "planner", "model": "m", "waited_ms": 1_500}),
                &json!({"message":
                        "no price known for model m; its cost is recorded as unknown"}),
            ]
        );
    }
}
