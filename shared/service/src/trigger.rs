//! The one trigger policy: what becomes of a step message once the engine has handled it.
//! The worker Lambda (SQS event source) and `serve`'s in-process loop both settle a delivery
//! here, so they retry alike.

use longrun_domain::Backoff;
use longrun_engine::{Engine, EngineError, StepOutcome};
use longrun_ports::{StepMessage, StepQueue};
use tracing::{Instrument, error, info_span, warn};

/// A retryable failure (store or queue busy, a model's transient error) comes back this soon
/// instead of after the whole visibility timeout.
pub const RETRYABLE_DELAY_MS: u64 = Backoff::STEP.first_ms;

/// What to do with a delivered step message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settle {
    /// Finished with (done, dropped, or never parseable): delete it.
    Ack,
    /// Make it visible again after this many ms.
    RetryAfter(u64),
    /// Touch nothing: it comes back when its visibility timeout ends (a crash, or an error a
    /// quick retry would not fix; the redrive policy dead-letters it after enough receives).
    Leave,
}

/// The mapping from a step's result to the message's fate.
pub fn settle(result: &Result<StepOutcome, EngineError>) -> Settle {
    match result {
        Ok(StepOutcome::Done) | Ok(StepOutcome::Dropped(_)) => Settle::Ack,
        // The next step goes out with the ack (`Handled::next`).
        Ok(StepOutcome::Next(_)) => Settle::Ack,
        // A deferred iteration (the engine turns `EngineError::Deferred` into this).
        Ok(StepOutcome::Retry { delay_ms }) => Settle::RetryAfter(*delay_ms),
        Err(EngineError::Crashed(_)) => Settle::Leave,
        Err(e) if e.is_retryable() => Settle::RetryAfter(RETRYABLE_DELAY_MS),
        Err(_) => Settle::Leave,
    }
}

/// One handled delivery.
#[derive(Clone, Debug)]
pub struct Handled {
    pub settle: Settle,
    /// The step stopped dead at a fault point, as a crashed process would.
    pub crashed: bool,
    /// `None` when the body was not a step message.
    pub msg: Option<StepMessage>,
    /// The run's next step, handed back unsent (`hand_back`): to be sent with the ack.
    pub next: Option<StepMessage>,
}

/// Parses and steps one message body; `deadline_ms` (epoch ms) bounds the work, as a Lambda
/// invocation's deadline does.
pub async fn step_body(
    engine: &Engine, body: &str, message_id: &str, owner: &str, deadline_ms: Option<i64>,
) -> Handled {
    step_body_handing_back(engine, body, message_id, owner, deadline_ms, false).await
}

/// `step_body`; with `hand_back`, a run that goes on hands its next step back in
/// `Handled::next` instead of sending it.
pub async fn step_body_handing_back(
    engine: &Engine, body: &str, message_id: &str, owner: &str, deadline_ms: Option<i64>,
    hand_back: bool,
) -> Handled {
    let msg = match StepMessage::parse(body) {
        Ok(m) => m,
        Err(e) => {
            // It would never succeed; retrying would only block its run's group.
            warn!(message_id, error = %e, metric = "unparseable_step_message", "acknowledging an unparseable step message");
            return Handled {
                settle: Settle::Ack,
                crashed: false,
                msg: None,
                next: None,
            };
        }
    };
    let span = info_span!("step", run_id = %msg.run_id, iteration = msg.iteration, message_id);
    let result = engine
        .step_handing_back(&msg, owner, deadline_ms, hand_back)
        .instrument(span)
        .await;
    match &result {
        Ok(StepOutcome::Retry { delay_ms }) => {
            warn!(run_id = %msg.run_id, delay_ms, "step returned to the queue; retrying later")
        }
        Err(EngineError::Crashed(point)) => {
            warn!(run_id = %msg.run_id, ?point, "step crashed (fault injection)")
        }
        Err(e) => {
            error!(run_id = %msg.run_id, iteration = msg.iteration, error = %e, retryable = e.is_retryable(), "step failed")
        }
        Ok(_) => {}
    }
    Handled {
        settle: settle(&result),
        crashed: matches!(result, Err(EngineError::Crashed(_))),
        msg: Some(msg),
        next: match result {
            Ok(StepOutcome::Next(next)) => Some(next),
            _ => None,
        },
    }
}

/// The one "retry after a delay": the message becomes visible again `delay_ms` from now
/// instead of after its whole visibility timeout. Both the worker Lambda and `serve` call it;
/// a failure only costs the delay (the message still comes back when its timeout ends).
pub async fn retry_later(queue: &dyn StepQueue, receipt: &str, delay_ms: u64, message_id: &str) {
    if let Err(e) = queue.extend(receipt, delay_ms).await {
        warn!(message_id, error = %e, "could not shorten the message's visibility");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use longrun_ports::{QueueError, StoreError};

    #[test]
    fn every_step_result_maps_to_one_fate() {
        assert_eq!(settle(&Ok(StepOutcome::Done)), Settle::Ack);
        assert_eq!(
            settle(&Ok(StepOutcome::Retry { delay_ms: 250 })),
            Settle::RetryAfter(250)
        );
        assert_eq!(
            settle(&Err(EngineError::Crashed(
                longrun_ports::FaultPoint::AfterClaim
            ))),
            Settle::Leave
        );
        assert_eq!(
            settle(&Err(EngineError::Store(StoreError::Unavailable(
                "busy".into()
            )))),
            Settle::RetryAfter(RETRYABLE_DELAY_MS)
        );
        assert_eq!(
            settle(&Err(EngineError::Store(StoreError::Corrupt(
                "bad row".into()
            )))),
            Settle::Leave
        );
        assert_eq!(
            settle(&Err(EngineError::Queue(QueueError::Unavailable(
                "down".into()
            )))),
            Settle::RetryAfter(RETRYABLE_DELAY_MS)
        );
    }
}
