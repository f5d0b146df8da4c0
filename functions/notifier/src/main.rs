use lambda_runtime::{LambdaEvent, service_fn};
use longrun_fn_notifier::NotifierHandler;
use longrun_service::Platform;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    longrun_service::init_tracing(true, "info");
    let platform = Platform::aws_from_env().await?;
    let handler = NotifierHandler::new(&platform)?;
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
