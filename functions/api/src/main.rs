use longrun_http::Platform;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    longrun_http::init_tracing(true, "info");
    let platform = Platform::aws_from_env().await?;
    lambda_http::run(longrun_fn_api::app(platform))
        .await
        .map_err(|e| anyhow::anyhow!(e))
}
