//! `longrun serve` as a process: it stops cleanly on SIGTERM, as on SIGINT; it closes
//! connections that stop sending; and `kill -9` under load, again and again, loses nothing.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;

const TOKEN: &str = "lr_serve_test_token";

/// A `longrun serve` child process on a free loopback port.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(data_dir: &Path, extra: &[&str]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_longrun"));
        cmd.args([
            "serve",
            "--port",
            "0",
            "--active-limit",
            "1000",
            "--data-dir",
        ])
        .arg(data_dir)
        .args(extra)
        .env("LONGRUN_TOKENS", format!("{TOKEN}:alice"));
        let (child, addr) = support::spawn_serve(cmd);
        Server { child, addr }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn kill9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `request` and reads until the server closes the connection; `Some(bytes read)` if it
/// did within `limit`, `None` if the connection was still open then.
fn closed_within(addr: &str, request: &[u8], limit: Duration) -> Option<Vec<u8>> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request).unwrap();
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Some(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return None;
            }
            Err(_) => return Some(got),
        }
    }
}

#[test]
#[cfg(unix)]
fn serve_shuts_down_cleanly_on_sigterm() {
    // Arrange: a server on a free port, up and listening.
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_longrun"))
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let listening = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.contains("listening on"));
    assert!(listening, "the server never said it was listening");

    // Act
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());

    // Assert: it exits by itself, with success, not killed by the signal.
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve did not stop within 20 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit status {status:?}");
}

#[test]
#[cfg(unix)]
fn serve_without_tokens_keeps_the_local_token_in_a_private_file_and_out_of_its_output() {
    use std::os::unix::fs::PermissionsExt;
    // Arrange: no LONGRUN_TOKENS, so serve makes a token for user `local`.
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_longrun"));
    cmd.args(["serve", "--port", "0", "--data-dir"])
        .arg(dir.path())
        .env_remove("LONGRUN_TOKENS");

    // Act: start it, then sign in with the token from its file.
    let (mut child, addr, printed) = support::spawn_serve_printing(cmd);
    let token_file = dir.path().join("token");
    let token = std::fs::read_to_string(&token_file).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let status = rt.block_on(async {
        reqwest::Client::new()
            .get(format!("http://{addr}/v1/runs"))
            .bearer_auth(token.trim())
            .send()
            .await
            .unwrap()
            .status()
    });
    let _ = child.kill();
    let _ = child.wait();

    // Assert: the token works, only its owner can read its file, and it was not printed.
    assert_eq!(status, reqwest::StatusCode::OK);
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "token file mode {mode:o}");
    assert!(
        printed.contains(&token_file.display().to_string()),
        "{printed}"
    );
    assert!(
        !printed.contains(token.trim()),
        "the token was printed: {printed}"
    );
}

#[test]
fn serve_closes_connections_that_stop_sending_headers_or_body() {
    // Arrange: a server whose clients get 1 s to send each part of a request.
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--read-timeout", "1"]);
    let addr = server.addr.clone();
    let body_prefix = format!(
        "POST /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"objective\""
    );
    let limit = Duration::from_secs(15);

    // Act: one client sends nothing, one half its headers, one half its body.
    let silent = closed_within(&addr, b"", limit);
    let half_headers = closed_within(&addr, b"GET /healthz HTTP/1.1\r\nHost: x\r\n", limit);
    let half_body = closed_within(&addr, body_prefix.as_bytes(), limit);
    // A complete request on a keep-alive connection is answered, then the idle connection closed.
    let complete = closed_within(&addr, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", limit);

    // Assert
    assert!(
        silent.is_some(),
        "a connection that sent nothing stayed open"
    );
    assert!(
        half_headers.is_some(),
        "half-sent headers kept the connection open"
    );
    let half_body = half_body.expect("a half-sent body kept the connection open");
    let answer = String::from_utf8_lossy(&half_body);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 4"),
        "a half-sent body is refused, not accepted: {answer}"
    );
    let complete = complete.expect("an idle keep-alive connection stayed open");
    assert!(String::from_utf8_lossy(&complete).starts_with("HTTP/1.1 200"));
    let created = reqwest_get_json(&server, "/v1/runs");
    assert_eq!(
        created["runs"],
        json!([]),
        "the half-sent run was not created"
    );
}

fn reqwest_get_json(server: &Server, path: &str) -> Value {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        reqwest::Client::new()
            .get(server.url(path))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    })
}

/// Creates up to 15 runs, one every 10 ms, until the server stops answering; the ids it
/// accepted.
async fn create_until_killed(client: reqwest::Client, url: String, round: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..15 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let res = client
            .post(&url)
            .bearer_auth(TOKEN)
            .json(&json!({"objective": format!("kill test round {round} run {i}")}))
            .send()
            .await;
        let Ok(res) = res else { break };
        if res.status() != reqwest::StatusCode::CREATED {
            break;
        }
        let Ok(run) = res.json::<Value>().await else {
            break;
        };
        ids.push(run["id"].as_str().unwrap().to_string());
    }
    ids
}

async fn get(client: &reqwest::Client, server: &Server, path: &str) -> Value {
    let res = client
        .get(server.url(path))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "GET {path}: {}", res.status());
    res.json().await.unwrap()
}

async fn all_runs(client: &reqwest::Client, server: &Server) -> Vec<Value> {
    let mut runs = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = get(
            client,
            server,
            &format!("/v1/runs?limit=200&cursor={cursor}"),
        )
        .await;
        runs.extend(page["runs"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = c.to_string(),
            None => return runs,
        }
    }
}

const ENDED: [&str; 4] = ["completed", "failed", "stopped", "canceled"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_killed_with_sigkill_under_load_ten_times_loses_and_doubles_nothing() {
    // Arrange: one data dir that outlives every process.
    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let mut accepted = BTreeSet::new();

    // Act: ten times, start the server on the same data, create runs as fast as it accepts
    // them while earlier ones iterate, and kill -9 it at a different moment each round.
    for round in 0..10 {
        let server = Server::start(dir.path(), &[]);
        let creating = tokio::spawn(create_until_killed(
            client.clone(),
            server.url("/v1/runs"),
            round,
        ));
        tokio::time::sleep(Duration::from_millis(150 + 70 * round as u64)).await;
        tokio::task::spawn_blocking(move || server.kill9())
            .await
            .unwrap();
        accepted.extend(creating.await.unwrap());
    }
    let server = Server::start(dir.path(), &[]);
    let deadline = Instant::now() + Duration::from_secs(120);
    let runs = loop {
        let runs = all_runs(&client, &server).await;
        if runs
            .iter()
            .all(|r| ENDED.contains(&r["status"].as_str().unwrap()))
        {
            break runs;
        }
        assert!(
            Instant::now() < deadline,
            "runs still not ended 120 s after the last restart"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    // Assert: every accepted run is there and ended, with each iteration committed once,
    // a gapless log, a report and exactly one outcome notification.
    assert!(
        accepted.len() >= 20,
        "only {} runs were created",
        accepted.len()
    );
    let listed: BTreeSet<String> = runs
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert!(accepted.is_subset(&listed), "an accepted run was lost");
    let inbox = get(&client, &server, "/v1/notifications?limit=200").await;
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for n in inbox["notifications"].as_array().unwrap() {
        *outcomes
            .entry(n["run_id"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    for summary in &runs {
        let id = summary["id"].as_str().unwrap();
        let run = get(&client, &server, &format!("/v1/runs/{id}")).await;
        let its = get(
            &client,
            &server,
            &format!("/v1/runs/{id}/iterations?limit=500"),
        )
        .await;
        let ns: Vec<u64> = its["iterations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["n"].as_u64().unwrap())
            .collect();
        let iteration = run["iteration"].as_u64().unwrap();
        assert_eq!(
            ns,
            (1..=iteration).collect::<Vec<_>>(),
            "{id}: iterations once each"
        );
        let events = get(
            &client,
            &server,
            &format!("/v1/runs/{id}/events?after=0&limit=1000"),
        )
        .await;
        let events = events["events"].as_array().unwrap();
        let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        let event_seq = run["event_seq"].as_u64().unwrap();
        assert_eq!(
            seqs,
            (1..=event_seq).collect::<Vec<_>>(),
            "{id}: gapless log"
        );
        let committed: Vec<u64> = events
            .iter()
            .filter(|e| e["type"] == "iteration_committed")
            .map(|e| e["payload"]["iteration"].as_u64().unwrap())
            .collect();
        assert_eq!(
            committed,
            (1..=iteration).collect::<Vec<_>>(),
            "{id}: one commit each"
        );
        let report = client
            .get(server.url(&format!("/v1/runs/{id}/report")))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(
            report.status(),
            reqwest::StatusCode::OK,
            "{id}: has a report"
        );
        assert_eq!(outcomes.get(id), Some(&1), "{id}: one outcome notification");
    }
}

#[test]
fn the_binary_cargo_builds_serves_the_console_at_the_root() {
    // Arrange: the binary as `cargo build` made it (cli/build.rs builds web/dist when it is
    // missing and npm is there; `make test` needs Node anyway).
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    // Act
    let page = closed_within(
        &server.addr,
        b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_secs(10),
    )
    .expect("the server answered and closed");
    let page = String::from_utf8_lossy(&page);

    // Assert: the built console (its bundled script), not the page saying it is missing.
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(!page.contains("not in this build"), "{page}");
    assert!(page.contains("<script type=\"module\""), "{page}");
    assert!(page.contains("/assets/"), "{page}");
}

#[test]
fn serve_help_names_the_environment_it_reads() {
    let out = Command::new(env!("CARGO_BIN_EXE_longrun"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for name in [
        "LONGRUN_TOKENS",
        "LONGRUN_APP_BASE_URL",
        "LONGRUN_FETCH_TRUSTED_PRIVATE",
        "LONGRUN_ACTIVE_LIMIT",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "LONGRUN_SEARCH",
    ] {
        assert!(
            help.contains(name),
            "{name} missing from serve --help:\n{help}"
        );
    }
    assert!(help.contains("Without --model"), "{help}");
}

#[test]
fn a_message_from_the_cli_lands_in_the_runs_log_for_its_next_iteration() {
    // Arrange: a run paused before its first iteration.
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let cli = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_longrun"))
            .args(["--json", "--api-url", &server.url("")])
            .args(args)
            .env("LONGRUN_TOKEN", TOKEN)
            .output()
            .unwrap()
    };
    let started = cli(&["run", "Tea notes", "--max-iterations", "50"]);
    let run: Value = serde_json::from_slice(&started.stdout).unwrap();
    let id = run["id"].as_str().unwrap().to_string();
    cli(&["pause", &id]);

    // Act
    let told = cli(&["message", &id, "Only green teas, please."]);
    let blank = cli(&["message", &id, "  "]);

    // Assert
    assert!(
        told.status.success(),
        "{}",
        String::from_utf8_lossy(&told.stderr)
    );
    let events = reqwest_get_json(&server, &format!("/v1/runs/{id}/events"));
    let posted: Vec<&Value> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "message_posted")
        .collect();
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0]["payload"]["text"], "Only green teas, please.");
    assert!(!blank.status.success());
    let err = String::from_utf8_lossy(&blank.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}

#[test]
fn a_follow_up_from_the_cli_sends_an_ended_run_back_to_work_with_the_question() {
    // Arrange: a run of one iteration, ended.
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let cli = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_longrun"))
            .args(["--json", "--api-url", &server.url("")])
            .args(args)
            .env("LONGRUN_TOKEN", TOKEN)
            .output()
            .unwrap()
    };
    let started = cli(&["run", "Tea notes", "--max-iterations", "1"]);
    let run: Value = serde_json::from_slice(&started.stdout).unwrap();
    let id = run["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut ended = Value::Null;
    while Instant::now() < deadline {
        ended = reqwest_get_json(&server, &format!("/v1/runs/{id}"));
        if ["completed", "stopped", "failed"].contains(&ended["status"].as_str().unwrap_or("")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(ended["ended_at"].is_i64(), "the run never ended: {ended}");

    // Act
    let blank = cli(&["follow-up", &id, "  "]);
    let asked = cli(&[
        "follow-up",
        &id,
        "Which tea is cheapest?",
        "--max-iterations",
        "3",
    ]);

    // Assert
    assert!(!blank.status.success());
    let err = String::from_utf8_lossy(&blank.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(
        asked.status.success(),
        "{}",
        String::from_utf8_lossy(&asked.stderr)
    );
    let answer: Value = serde_json::from_slice(&asked.stdout).unwrap();
    assert_eq!(answer["follow_up_question"], "Which tea is cheapest?");
    assert_eq!(answer["budgets"]["max_iterations"], 3);
    let events = reqwest_get_json(&server, &format!("/v1/runs/{id}/events"));
    let follow_ups = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "follow_up_asked")
        .count();
    assert_eq!(follow_ups, 1);
}

#[test]
fn serve_takes_its_settings_from_the_config_file_under_its_flags() {
    // Arrange: a config whose serve block names a model and a data dir.
    let dir = tempfile::tempdir().unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/demo.json");
    let config = dir.path().join("config.hcl");
    std::fs::write(
        &config,
        format!(
            "serve {{\n  models = [\"script:{}\"]\n  data_dir = \"{}\"\n  port = 1\n}}\n",
            demo.display(),
            dir.path().join("from-config").display()
        ),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_longrun"));
    cmd.args(["serve", "--port", "0"])
        .env("LONGRUN_CONFIG", &config)
        .env("LONGRUN_TOKENS", format!("{TOKEN}:alice"));

    // Act: the flag (--port 0) wins over the file's port 1; the rest comes from the file.
    let (child, addr) = support::spawn_serve(cmd);
    let server = Server { child, addr };
    let cfg = reqwest_get_json(&server, "/v1/config");

    // Assert
    let model = format!("script:{}", demo.display());
    assert_eq!(cfg["models"], json!([model]), "{cfg}");
    assert!(dir.path().join("from-config").is_dir());
}

#[test]
fn serve_refuses_to_start_on_a_config_error_and_names_its_line() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.hcl");
    std::fs::write(&config, "serve {\n  port = 8080\n  colour = \"red\"\n}\n").unwrap();

    // Act
    let out = Command::new(env!("CARGO_BIN_EXE_longrun"))
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(dir.path())
        .env("LONGRUN_CONFIG", &config)
        .output()
        .unwrap();

    // Assert
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:3", config.display())) && err.contains("serve.colour"),
        "{err}"
    );
}

/// Opens a connection, sends a POST's headers announcing 1 MB, then one byte every 500 ms for
/// at most `for_how_long`; returns what the server answered (empty if nothing).
async fn drip(addr: String, for_how_long: Duration) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = tokio::net::TcpStream::connect(&addr).await else {
        return String::new();
    };
    let head = format!(
        "POST /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{{"
    );
    if stream.write_all(head.as_bytes()).await.is_err() {
        return String::new();
    }
    let started = Instant::now();
    let mut got = vec![0u8; 4096];
    while started.elapsed() < for_how_long {
        tokio::select! {
            read = stream.read(&mut got) => {
                return match read {
                    Ok(n) => String::from_utf8_lossy(&got[..n]).into_owned(),
                    Err(_) => String::new(),
                };
            }
            () = tokio::time::sleep(Duration::from_millis(500)) => {
                if stream.write_all(b" ").await.is_err() {
                    break;
                }
            }
        }
    }
    String::new()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg(unix)]
async fn a_slow_post_attack_is_cut_at_the_request_deadline_while_healthz_keeps_answering() {
    // Arrange: a 2 s request deadline, and 300 clients dripping a byte every 500 ms (each
    // would take 6 days to send its megabyte) for at most 8 s; all from 127.0.0.1, so the
    // per-client cap is raised to let them all in.
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        dir.path(),
        &[
            "--request-timeout",
            "2",
            "--max-connections-per-client",
            "400",
        ],
    );
    let attack: Vec<_> = (0..300)
        .map(|_| tokio::spawn(drip(server.addr.clone(), Duration::from_secs(8))))
        .collect();
    // A wedged server never answers; 3 s leaves room for a CI machine busy with other tests.
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()
        .unwrap();

    // Act: /healthz every 100 ms while the attack lasts.
    let mut health = vec![];
    let probing = Instant::now();
    while probing.elapsed() < Duration::from_secs(4) {
        let answer = client.get(server.url("/healthz")).send().await;
        health.push(
            answer
                .map(|r| r.status().as_u16())
                .map_err(|e| e.to_string()),
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut answers = vec![];
    for a in attack {
        answers.push(a.await.unwrap());
    }

    // Assert: every probe answered within its 3 s; every dripping client got a 408 problem.
    assert!(health.len() > 10);
    assert!(
        health.iter().all(|h| h == &Ok(200)),
        "healthz failed under the attack: {:?}",
        health
            .iter()
            .filter(|h| h != &&Ok(200))
            .take(5)
            .collect::<Vec<_>>()
    );
    let cut = answers
        .iter()
        .filter(|a| a.starts_with("HTTP/1.1 408") && a.contains("application/problem+json"))
        .count();
    assert_eq!(
        cut,
        answers.len(),
        "not cut: {:?}",
        answers.iter().find(|a| !a.starts_with("HTTP/1.1 408"))
    );
}

#[test]
#[cfg(unix)]
fn past_max_connections_a_connection_gets_a_503_problem_and_is_closed() {
    // Arrange: room for 3 connections, all 3 held open by clients that send nothing.
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--max-connections", "3"]);
    let held: Vec<TcpStream> = (0..3)
        .map(|_| TcpStream::connect(&server.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));

    // Act: not /healthz, which is answered even then.
    let refused = closed_within(
        &server.addr,
        b"GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n",
        Duration::from_secs(5),
    );
    drop(held);
    std::thread::sleep(Duration::from_millis(300));
    let after = closed_within(
        &server.addr,
        b"GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_secs(5),
    );

    // Assert
    let refused =
        String::from_utf8_lossy(&refused.expect("the refused connection was closed")).into_owned();
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("application/problem+json"), "{refused}");
    let body = refused.split("\r\n\r\n").nth(1).unwrap();
    let problem: Value = serde_json::from_str(body).unwrap();
    assert_eq!(problem["status"], 503);
    let after = String::from_utf8_lossy(&after.expect("answered")).into_owned();
    assert!(
        after.starts_with("HTTP/1.1 200"),
        "a freed slot serves again: {after}"
    );
}

/// The status line and the content type and body of a whole answer.
fn answer_parts(raw: &[u8]) -> (String, String, serde_json::Value) {
    let text = String::from_utf8_lossy(raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or("").to_string();
    let content_type = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-type: ")
                .map(str::to_string)
        })
        .unwrap_or_default();
    (
        status,
        content_type,
        serde_json::from_str(body).unwrap_or_default(),
    )
}

#[test]
#[cfg(unix)]
fn a_20_kb_request_target_and_40_kb_of_headers_get_problem_json_414_and_431_on_the_wire() {
    // Arrange: both inside what hyper reads (64 KiB of head), past what the API takes.
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let long_target = format!(
        "GET /v1/runs/{} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "r".repeat(20 * 1024)
    );
    let big_headers = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Padding: {}\r\n\r\n",
        "a".repeat(40 * 1024)
    );

    // Act
    let uri = closed_within(&server.addr, long_target.as_bytes(), Duration::from_secs(5));
    let headers = closed_within(&server.addr, big_headers.as_bytes(), Duration::from_secs(5));

    // Assert
    let (status, content_type, problem) = answer_parts(&uri.expect("answered"));
    assert!(status.starts_with("HTTP/1.1 414"), "{status}");
    assert_eq!(content_type, "application/problem+json");
    assert_eq!(problem["status"], 414);
    assert!(
        problem["detail"].as_str().unwrap().contains("8192"),
        "{problem}"
    );
    let (status, content_type, problem) = answer_parts(&headers.expect("answered"));
    assert!(status.starts_with("HTTP/1.1 431"), "{status}");
    assert_eq!(content_type, "application/problem+json");
    assert_eq!(
        problem["type"],
        "https://longrun.dev/problems/headers-too-large"
    );
}

#[test]
#[cfg(unix)]
fn a_request_with_a_200_kb_header_is_refused_and_a_normal_one_still_served() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let huge = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: {}\r\n\r\n",
        "a".repeat(200 * 1024)
    );

    // Act: the server may close before it has read it all, so a failed write or a reset
    // read is an answer too.
    let refused = {
        let mut stream = TcpStream::connect(&server.addr).unwrap();
        let _ = stream.write_all(huge.as_bytes());
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut got = Vec::new();
        let open = matches!(stream.read_to_end(&mut got), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut);
        (!open).then_some(got)
    };
    let normal = closed_within(
        &server.addr,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_secs(5),
    );

    // Assert
    let refused = String::from_utf8_lossy(&refused.expect("closed")).into_owned();
    assert!(
        refused.is_empty() || refused.starts_with("HTTP/1.1 431"),
        "{refused}"
    );
    let normal = String::from_utf8_lossy(&normal.expect("answered")).into_owned();
    assert!(normal.starts_with("HTTP/1.1 200"), "{normal}");
}
