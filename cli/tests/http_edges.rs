//! `longrun serve` at the edges of HTTP: one client's idle sockets do not lock the others out,
//! and every answer the server gives to a head or a body it will not take, however far past
//! its bounds, is problem+json with the status that names what was wrong.
//!
//! Loopback routes all of 127/8 to `lo`, so a socket bound to 127.0.0.2 is another client.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

mod support;

const TOKEN: &str = "lr_http_edges_token";
const ME: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);
/// Comfortably past what a refusal takes to arrive, and well under the 30 s read timeout a
/// client that is not refused would wait for.
const PATIENCE: Duration = Duration::from_secs(10);

/// A `longrun serve` on a free loopback port, killed when dropped.
struct Serve {
    child: Child,
    addr: SocketAddr,
}

impl Serve {
    fn start(data_dir: &Path, flags: &[&str]) -> Serve {
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
        .args(flags)
        .env("LONGRUN_TOKENS", format!("{TOKEN}:alice"));
        let (child, addr) = support::spawn_serve(cmd);
        Serve {
            child,
            addr: addr.parse().unwrap(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// A client whose connections come from `from`.
    fn client(from: Ipv4Addr) -> reqwest::Client {
        reqwest::Client::builder()
            .local_address(IpAddr::V4(from))
            .timeout(PATIENCE)
            .build()
            .unwrap()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn connect_from(from: Ipv4Addr, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(IpAddr::V4(from), 0)).unwrap();
    socket.connect(to).await.unwrap()
}

/// Reads until the server closes `stream`: `Some(what it sent)` if it did within `within`,
/// `None` if the connection was still open then. A reset counts as closed.
async fn read_until_closed(stream: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let read = tokio::time::timeout(within, stream.read_to_end(&mut got)).await;
    read.is_ok().then_some(got)
}

/// Sends `request` from `from` (a write the server cuts short is fine: it may answer before it
/// has read everything) and reads the answer up to the server's close.
async fn exchange(from: Ipv4Addr, to: SocketAddr, request: &[u8]) -> Option<Vec<u8>> {
    let mut stream = connect_from(from, to).await;
    let _ = stream.write_all(request).await;
    read_until_closed(&mut stream, PATIENCE).await
}

/// A whole answer's status, content type and JSON body.
struct Answer {
    status: u16,
    content_type: String,
    body: Value,
}

fn answer(raw: Option<Vec<u8>>) -> Answer {
    let raw = raw.expect("the server kept the connection open without answering");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let content_type = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-type")
                .then(|| value.trim().to_string())
        })
        .unwrap_or_default();
    Answer {
        status,
        content_type,
        body: serde_json::from_str(body).unwrap_or(Value::Null),
    }
}

/// `answer` is a problem+json of `status`, in the shape every API error has.
fn assert_problem(answer: &Answer, status: u16) {
    assert_eq!(answer.status, status, "{}", answer.body);
    assert_eq!(answer.content_type, "application/problem+json");
    assert_eq!(answer.body["status"], status);
    for field in ["type", "title", "detail"] {
        assert!(
            answer.body[field].is_string(),
            "no {field}: {}",
            answer.body
        );
    }
}

fn get(path: &str, headers: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n").into_bytes()
}

/// A request whose head stops short of its end: the server waits for the rest until its read
/// timeout, so the connection stays open and holds a slot.
const HALF_A_HEAD: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: x\r\n";

/// Opens `count` connections from `from`, each sending half a head, and sorts them into those
/// the server holds open and the answers of those it refused and closed.
async fn hold_half_heads(
    from: Ipv4Addr, to: SocketAddr, count: usize,
) -> (Vec<TcpStream>, Vec<Answer>) {
    let mut streams = Vec::new();
    for _ in 0..count {
        let mut stream = connect_from(from, to).await;
        stream.write_all(HALF_A_HEAD).await.unwrap();
        streams.push(stream);
    }
    let sorted = futures_util::future::join_all(streams.into_iter().map(|mut s| async move {
        match read_until_closed(&mut s, Duration::from_millis(1500)).await {
            Some(raw) => Err(answer(Some(raw))),
            None => Ok(s),
        }
    }))
    .await;
    let (held, refused): (Vec<_>, Vec<_>) = sorted.into_iter().partition(Result::is_ok);
    (
        held.into_iter().filter_map(Result::ok).collect(),
        refused.into_iter().filter_map(Result::err).collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_at_its_connection_cap_leaves_another_clients_requests_and_healthz_answered() {
    // Arrange: room for 16 connections, 4 of them per client; one client opens all 16 and
    // holds each with half a head.
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(
        dir.path(),
        &[
            "--max-connections",
            "16",
            "--max-connections-per-client",
            "4",
        ],
    );
    let hog = Ipv4Addr::new(127, 0, 0, 2);
    let (held, refused) = hold_half_heads(hog, server.addr, 16).await;
    let other = Serve::client(ME);

    // Act: the other client creates and reads runs, and probes /healthz.
    let mut statuses = Vec::new();
    for i in 0..10 {
        let created = other
            .post(server.url("/v1/runs"))
            .bearer_auth(TOKEN)
            .json(&json!({"objective": format!("edge run {i}")}))
            .send()
            .await
            .unwrap();
        statuses.push(created.status().as_u16());
        let run: Value = created.json().await.unwrap();
        let id = run["id"].as_str().unwrap_or("missing");
        let read = other
            .get(server.url(&format!("/v1/runs/{id}")))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        statuses.push(read.status().as_u16());
        let health = other.get(server.url("/healthz")).send().await.unwrap();
        statuses.push(health.status().as_u16());
    }

    // Assert: the hog got its 4 and a 429 problem for each connection past them; the other
    // client was answered every time.
    assert_eq!(held.len(), 4, "refused: {}", refused.len());
    assert_eq!(refused.len(), 12);
    for r in &refused {
        assert_problem(r, 429);
    }
    assert_eq!(statuses, [201, 200, 200].repeat(10));
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_is_answered_when_every_connection_slot_is_taken() {
    // Arrange: 4 connections in all, 2 per client, and two clients holding 2 each.
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(
        dir.path(),
        &[
            "--max-connections",
            "4",
            "--max-connections-per-client",
            "2",
        ],
    );
    let (mut held, _) = hold_half_heads(Ipv4Addr::new(127, 0, 0, 2), server.addr, 2).await;
    let (more, _) = hold_half_heads(Ipv4Addr::new(127, 0, 0, 3), server.addr, 2).await;
    held.extend(more);
    let prober = Ipv4Addr::new(127, 0, 0, 4);

    // Act
    let health = exchange(prober, server.addr, &get("/healthz", "")).await;
    let api = exchange(prober, server.addr, &get("/v1/openapi.json", "")).await;

    // Assert: the probe is answered as ever; anything else gets the 503 problem.
    assert_eq!(held.len(), 4);
    let health = answer(health);
    assert_eq!(health.status, 200);
    assert_eq!(health.body, json!({"status": "ok"}));
    assert_problem(&answer(api), 503);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_sends_nothing_is_closed_at_the_first_byte_deadline_and_frees_its_slot() {
    // Arrange: 2 connections in all, a 1 s first-byte deadline, the 30 s read timeout.
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(
        dir.path(),
        &["--max-connections", "2", "--first-byte-timeout", "1"],
    );
    let mut silent = vec![
        connect_from(ME, server.addr).await,
        connect_from(ME, server.addr).await,
    ];

    // Act
    let mut closed = Vec::new();
    for s in &mut silent {
        closed.push(read_until_closed(s, PATIENCE).await);
    }
    let after = exchange(ME, server.addr, &get("/v1/openapi.json", "")).await;

    // Assert: both were closed, with nothing said, long before the read timeout; their slots
    // serve again.
    assert_eq!(closed, [Some(vec![]), Some(vec![])]);
    assert_eq!(answer(after).status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_and_fifty_headers_are_served_and_a_thousand_get_a_problem_json_431() {
    // Arrange: both far under the API's 32 KiB of headers; hyper alone counts more than 100.
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(dir.path(), &[]);
    let headers = |n: usize| (0..n).map(|i| format!("x-h{i}: v\r\n")).collect::<String>();

    // Act
    let some = exchange(ME, server.addr, &get("/healthz", &headers(150))).await;
    let many = exchange(ME, server.addr, &get("/healthz", &headers(1000))).await;

    // Assert
    assert_eq!(answer(some).status, 200);
    let many = answer(many);
    assert_problem(&many, 431);
    assert_eq!(
        many.body["type"],
        "https://longrun.dev/problems/headers-too-large"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heads_past_what_the_server_reads_get_problem_json_414_and_431() {
    // Arrange: a 100 KiB target, and a 100 KiB header; the server reads 64 KiB of a head.
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(dir.path(), &[]);
    let long_target = get(&format!("/v1/runs/{}", "r".repeat(100 * 1024)), "");
    let long_header = get(
        "/healthz",
        &format!("x-padding: {}\r\n", "a".repeat(100 * 1024)),
    );

    // Act
    let target = exchange(ME, server.addr, &long_target).await;
    let header = exchange(ME, server.addr, &long_header).await;
    let after = exchange(ME, server.addr, &get("/healthz", "")).await;

    // Assert
    let target = answer(target);
    assert_problem(&target, 414);
    assert_eq!(
        target.body["type"],
        "https://longrun.dev/problems/uri-too-long"
    );
    assert_problem(&answer(header), 431);
    assert_eq!(answer(after).status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_that_is_not_http_gets_a_problem_json_400() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(dir.path(), &[]);

    // Act: a header line with no colon.
    let raw = exchange(ME, server.addr, &get("/healthz", "no colon here\r\n")).await;

    // Assert
    assert_problem(&answer(raw), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stalls_gets_a_problem_json_408_from_the_api_and_from_mcp() {
    // Arrange: 1 s for each piece of a body; two bodies that send 10 of their 100 bytes.
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(dir.path(), &["--read-timeout", "1"]);
    let stalled = |path: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"objecti",
            server.addr
        )
        .into_bytes()
    };

    // Act
    let api = exchange(ME, server.addr, &stalled("/v1/runs")).await;
    let mcp = exchange(ME, server.addr, &stalled("/mcp")).await;

    // Assert
    let api = answer(api);
    assert_problem(&api, 408);
    assert_eq!(api.body["type"], "https://longrun.dev/problems/timeout");
    assert_problem(&answer(mcp), 408);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_body_over_the_limit_is_refused_with_a_problem_json_413_before_it_is_sent() {
    // Arrange: a head announcing 2 MB (the limit is 1 MiB), and no body yet; 30 s to send it.
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(dir.path(), &[]);
    let head = format!(
        "POST /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 2000000\r\n\r\n"
    );

    // Act
    let raw = exchange(ME, server.addr, head.as_bytes()).await;

    // Assert
    let refused = answer(raw);
    assert_problem(&refused, 413);
    assert!(
        refused.body["detail"].as_str().unwrap().contains("1048576"),
        "{}",
        refused.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_path_with_an_encoded_nul_is_a_problem_json_400() {
    // Arrange: a run of alice's.
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(dir.path(), &[]);
    let client = Serve::client(ME);
    let run: Value =
        support::create_run(&client, server.url("/v1/runs"), TOKEN, "a run with docs").await;
    let id = run["id"].as_str().unwrap();

    // Act
    let raw = exchange(
        ME,
        server.addr,
        &get(
            &format!("/v1/runs/{id}/docs/a%00b"),
            &format!("Authorization: Bearer {TOKEN}\r\n"),
        ),
    )
    .await;

    // Assert
    let refused = answer(raw);
    assert_problem(&refused, 400);
    assert!(
        refused.body["detail"]
            .as_str()
            .unwrap()
            .contains("control characters"),
        "{}",
        refused.body
    );
}
