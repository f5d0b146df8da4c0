//! The worker: each SQS record is one iteration step. Records of one run (one FIFO message
//! group) are handled in order, groups concurrently; a record that must be retried fails its
//! group's later records too, so a run's steps are never reordered.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use futures_util::future::join_all;
use longrun_engine::Engine;
use longrun_service::{Settle, retry_later, step_body};

/// A CloudWatch metric in Embedded Metric Format: one JSON line on stdout.
#[allow(clippy::print_stdout)]
pub fn emit_metric(name: &str, value: u64) {
    let ts = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    println!(
        "{}",
        serde_json::json!({
            "_aws": {"Timestamp": ts, "CloudWatchMetrics": [{
                "Namespace": "longrun", "Dimensions": [[]],
                "Metrics": [{"Name": name, "Unit": "Count"}]}]},
            name: value,
        })
    );
}

/// Time kept back from the invocation's deadline for the commit and the next send.
pub const COMMIT_MARGIN_MS: i64 = 10_000;

/// `deadline_ms`: the invocation's deadline (epoch ms), from the Lambda context.
pub async fn handle(
    engine: &Engine, owner: &str, event: SqsEvent, deadline_ms: Option<i64>,
) -> SqsBatchResponse {
    let until = deadline_ms.map(|d| d - COMMIT_MARGIN_MS);
    let mut groups: Vec<(String, Vec<&SqsMessage>)> = vec![];
    for r in &event.records {
        let group = r
            .attributes
            .get("MessageGroupId")
            .cloned()
            .or_else(|| r.message_id.clone())
            .unwrap_or_default();
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, records)) => records.push(r),
            None => groups.push((group, vec![r])),
        }
    }
    let failed = join_all(groups.iter().map(|(_, records)| async move {
        let mut failed = vec![];
        for r in records {
            let id = r.message_id.clone().unwrap_or_default();
            if !failed.is_empty() || !handle_record(engine, owner, r, until).await {
                failed.push(id);
            }
        }
        failed
    }))
    .await;
    let mut response = SqsBatchResponse::default();
    for id in failed.into_iter().flatten() {
        response.add_failure(id);
    }
    response
}

/// True when the record is finished with and may be deleted; the fate comes from the trigger
/// policy `serve` uses too.
async fn handle_record(
    engine: &Engine, owner: &str, r: &SqsMessage, deadline_ms: Option<i64>,
) -> bool {
    let message_id = r.message_id.as_deref().unwrap_or("?");
    let body = r.body.as_deref().unwrap_or_default();
    let handled = step_body(engine, body, message_id, owner, deadline_ms).await;
    match handled.settle {
        Settle::Ack => {
            if handled.msg.is_none() {
                emit_metric("UnparseableStepMessage", 1);
            }
            true
        }
        Settle::RetryAfter(delay_ms) => {
            if let Some(receipt) = r.receipt_handle.as_deref() {
                retry_later(
                    engine.follow_up.queue.as_ref(),
                    receipt,
                    delay_ms,
                    message_id,
                )
                .await;
            }
            false
        }
        Settle::Leave => false,
    }
}
