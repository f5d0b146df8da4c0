use lambda_runtime::{LambdaEvent, service_fn};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    longrun_wiring::init_tracing(true, "info");
    let platform = longrun_wiring::aws::from_env().await?;
    let engine = platform.engine.clone();
    // One identity per execution environment: a lease names the instance that holds it.
    let owner = format!("lambda-{}", uuid_like());
    lambda_runtime::run(service_fn(|ev: LambdaEvent<_>| {
        let engine = engine.clone();
        let owner = owner.clone();
        async move {
            Ok::<_, lambda_runtime::Error>(
                longrun_fn_worker::handle(
                    &engine,
                    &owner,
                    ev.payload,
                    i64::try_from(ev.context.deadline).ok(),
                )
                .await,
            )
        }
    }))
    .await
    .map_err(|e| anyhow::anyhow!(e))
}

fn uuid_like() -> String {
    format!(
        "{:x}{:x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    )
}
