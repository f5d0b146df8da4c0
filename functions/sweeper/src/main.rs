use lambda_runtime::{LambdaEvent, service_fn};

/// Stalled = not written for longer than the queue's visibility timeout (15 min) plus slack.
const DEFAULT_STALE_MS: i64 = 16 * 60 * 1000;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    longrun_wiring::init_tracing(true, "info");
    let platform = longrun_wiring::aws::from_env().await?;
    let stale_ms = std::env::var("LONGRUN_SWEEP_STALE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_STALE_MS);
    let sweeper = longrun_fn_sweeper::Sweeper::new(platform, stale_ms);
    let sweeper = &sweeper;
    lambda_runtime::run(service_fn(move |ev: LambdaEvent<_>| async move {
        sweeper
            .handle(ev.payload)
            .await
            .map_err(lambda_runtime::Error::from)
    }))
    .await
    .map_err(|e| anyhow::anyhow!(e))
}
