//! What the `longrun serve` process tests share.
#![allow(clippy::unwrap_used, dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Starts `serve` as configured by `cmd` (on `--port 0`) and returns it with the address it
/// printed; its stdout keeps being drained so it never blocks on a full pipe.
pub fn spawn_serve(cmd: Command) -> (Child, String) {
    let (child, addr, _) = spawn_serve_printing(cmd);
    (child, addr)
}

/// `spawn_serve`, also returning what it printed up to the line that it is listening.
pub fn spawn_serve_printing(mut cmd: Command) -> (Child, String, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (addr, printed) = listening(&mut child);
    (child, addr, printed)
}

/// The address a `serve` started with its stdout piped says it listens on, and what it
/// printed up to that line; its stdout keeps being drained so it never blocks on a full pipe.
pub fn listening(child: &mut Child) -> (String, String) {
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = String::new();
    let addr = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            printed.push_str(&l);
            printed.push('\n');
            l.split_once("listening on http://")
                .and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_string))
        })
        .expect("the server never said it was listening");
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    (addr, printed)
}

/// Creates a run with `objective` (`POST` to `url`, the server's `/v1/runs`); its JSON.
pub async fn create_run(
    client: &reqwest::Client, url: impl reqwest::IntoUrl, token: &str, objective: &str,
) -> serde_json::Value {
    client
        .post(url)
        .bearer_auth(token)
        .json(&serde_json::json!({ "objective": objective }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}
