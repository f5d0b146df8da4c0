//! Waiting for a model's shared capacity: shown on the run, never charged to its running time.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use async_trait::async_trait;
use longrun_domain::{BudgetsInput, EventKind, RunStatus};
use longrun_http::create_run;
use longrun_ports::{ChatRequest, ChatResponse, LlmClient, LlmError};
use longrun_ports::{ManualClock, NoFaults};
use longrun_tests::{NOTES_SCRIPT, platform_with_llm, run_request, scripted};

/// A model behind a saturated limit: every call first waits `wait_ms` of (manual) time.
struct Saturated {
    inner: Arc<dyn LlmClient>,
    /// The platform's clock, known once the platform is built.
    clock: std::sync::OnceLock<Arc<ManualClock>>,
    wait_ms: u64,
}

#[async_trait]
impl LlmClient for Saturated {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if let Some(clock) = self.clock.get() {
            clock.advance(self.wait_ms as i64);
        }
        match self.inner.chat(req).await {
            Ok(mut resp) => {
                resp.queued_ms += self.wait_ms;
                Ok(resp)
            }
            Err(mut e) => {
                e.queued_ms += self.wait_ms;
                Err(e)
            }
        }
    }
}

#[tokio::test]
async fn waiting_for_capacity_is_shown_and_not_charged_to_running_time() {
    // Arrange: each call waits 5 s for capacity; the run may run 3 s in all.
    let model = Arc::new(Saturated {
        inner: scripted(NOTES_SCRIPT),
        clock: std::sync::OnceLock::new(),
        wait_ms: 5_000,
    });
    let t = platform_with_llm(model.clone(), Arc::new(NoFaults), &[], 3, |_| {});
    model.clock.set(t.clock.clone()).unwrap();
    let req = run_request(
        "write notes",
        BudgetsInput {
            max_running_ms: Some(3_000),
            ..Default::default()
        },
    );
    let id = create_run(t.p(), "alice", req).await.unwrap().id;

    // Act
    let run = t.drive(&id, 400).await;

    // Assert: the run completed; its waits show as events and are not in its running time.
    assert_eq!(
        run.status,
        RunStatus::Completed,
        "{:?}",
        run.stopping_reason
    );
    assert!(run.metrics.running_ms < 3_000, "{}", run.metrics.running_ms);
    let events = t.p().store.events(&id, 0, 10_000).await.unwrap();
    let waits: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventKind::WaitingForCapacity)
        .collect();
    assert_eq!(waits.len() as u64, run.metrics.llm_calls);
    assert_eq!(waits[0].payload["waited_ms"], 5_000);
}
