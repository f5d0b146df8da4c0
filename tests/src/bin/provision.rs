//! Creates a table, step queue and outcome topic on the configured endpoint (the emulator) and
//! prints them as `export` lines for the Lambda functions' environment.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use longrun_aws::{AwsClients, load_config, provision};

#[tokio::main]
async fn main() {
    let prefix = std::env::args().nth(1).unwrap_or_else(|| "longrun".into());
    let c = AwsClients::new(&load_config().await);
    provision::create_table(&c, &prefix).await.unwrap();
    let (queue, _dlq) = provision::create_step_queue(&c, &format!("{prefix}-steps"), 900, 10)
        .await
        .unwrap();
    let topic = provision::create_topic(&c, &format!("{prefix}-outcomes"))
        .await
        .unwrap();
    let seal = provision::create_seal_secret(&c, &format!("{prefix}-seal"))
        .await
        .unwrap();
    println!("export LONGRUN_TABLE={prefix}");
    println!("export LONGRUN_SEAL_KEY_SECRET={seal}");
    println!("export LONGRUN_QUEUE_URL={queue}");
    println!("export LONGRUN_TOPIC_ARN={topic}");
}
