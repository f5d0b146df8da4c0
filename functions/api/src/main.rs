#[tokio::main]
async fn main() -> anyhow::Result<()> {
    longrun_wiring::init_tracing(true, "info");
    let platform = longrun_wiring::aws::from_env().await?;
    lambda_http::run(longrun_fn_api::app(platform))
        .await
        .map_err(|e| anyhow::anyhow!(e))
}
