//! What `longrun serve` writes to a log it is redirected into: text without colour escapes,
//! or JSON lines with `--log-format json`.
#![allow(clippy::unwrap_used)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;

const TOKEN: &str = "lr_logs_test_token";

/// A `longrun serve` process, killed when dropped.
struct Serve(Child);

impl Serve {
    /// SIGTERM, and the exit it makes by itself: the log is whole when this returns.
    fn stop(mut self) {
        let pid = self.0.id().to_string();
        assert!(Command::new("kill").arg(&pid).status().unwrap().success());
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.0.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `serve` with its stderr redirected to `log` (and `RUST_LOG=info`, so each iteration's
/// commit is logged), and the address it listens on.
fn serve_logging_to(data_dir: &Path, log: &Path, extra: &[&str]) -> (Serve, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_longrun"))
        .args(extra)
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(data_dir)
        .env("LONGRUN_TOKENS", format!("{TOKEN}:alice"))
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .env_remove("LONGRUN_LOG_FORMAT")
        .stdout(Stdio::piped())
        .stderr(File::create(log).unwrap())
        .spawn()
        .unwrap();
    let (addr, _) = support::listening(&mut child);
    (Serve(child), addr)
}

/// Runs the built-in demo script to its end on a server logging to a file; what it logged.
async fn log_of_a_run(extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let log: PathBuf = dir.path().join("serve.log");
    let (server, addr) = serve_logging_to(&dir.path().join("data"), &log, extra);
    let client = reqwest::Client::new();
    let created: Value = support::create_run(
        &client,
        format!("http://{addr}/v1/runs"),
        TOKEN,
        "a tea guide",
    )
    .await;
    let id = created["id"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run: Value = client
            .get(format!("http://{addr}/v1/runs/{id}"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if !run["ended_at"].is_null() {
            break;
        }
        assert!(Instant::now() < deadline, "the run never ended: {run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.stop();
    std::fs::read_to_string(&log).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_writes_no_colour_escapes_into_a_log_redirected_to_a_file() {
    // Act
    let log = log_of_a_run(&[]).await;

    // Assert: the commits were logged, as plain text.
    assert!(log.contains("iteration committed"), "{log}");
    assert!(!log.contains("\x1b["), "escape codes in the log: {log:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_log_format_json_writes_one_json_object_a_line() {
    // Act
    let log = log_of_a_run(&["--log-format", "json"]).await;

    // Assert
    let lines: Vec<Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(lines.iter().all(Value::is_object));
    assert!(
        lines
            .iter()
            .any(|l| l["fields"]["message"] == "iteration committed" && l["level"] == "INFO"),
        "{log}"
    );
}
