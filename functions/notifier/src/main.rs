use lambda_runtime::{LambdaEvent, service_fn};
use longrun_fn_notifier::NotifierHandler;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    longrun_wiring::init_tracing(true, "info");
    let platform = longrun_wiring::aws::from_env().await?;
    let handler = NotifierHandler::new(&platform);
    let handler = &handler;
    lambda_runtime::run(service_fn(move |ev: LambdaEvent<_>| async move {
        handler
            .handle(ev.payload)
            .await
            .map_err(lambda_runtime::Error::from)
    }))
    .await
    .map_err(|e| anyhow::anyhow!(e))
}
