//! The HTTP server of `longrun serve`: one HTTP/1 connection task per client, at most
//! `total` of them and `per_client` from one client, with a first-byte deadline, a header
//! timeout and a whole-request deadline so a client that opens sockets and sends nothing, or
//! drips its request, cannot hold a socket and a task for longer than that; `/healthz` answered
//! even when every slot is taken; every answer the server gives itself, problem+json; and a
//! graceful shutdown. What a request may be is the router's business (`longrun_http`), not
//! this module's.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv6Addr};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use longrun_http::ApiError;
use longrun_http::api::Draining;
use longrun_http::error::{MAX_HEADER_BYTES, MAX_URI_BYTES, RequestDeadline};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Sleep;
use tower_http::timeout::{TimeoutBody, TimeoutError};

/// How long a new connection may take to send its first byte; then how long a connection may
/// take to send a request's headers (and how long an idle keep-alive connection stays open),
/// and then its body: between two pieces, and in all.
#[derive(Clone, Copy, Debug)]
pub struct ReadTimeouts {
    pub first_byte: Duration,
    pub header: Duration,
    pub body: Duration,
    pub request: Duration,
}

/// How many connections may be open at once: in all, and from one client.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    pub total: usize,
    pub per_client: usize,
}

/// The largest request line and headers hyper reads, together. Above the API's own bounds on
/// the target and the headers (`longrun_http::error::head_limits`), so a head the API refuses
/// is still read in full and gets the API's problem+json; a head past this gets hyper's own
/// answer, which `ProblemIo` turns into problem+json.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
const _: () = assert!(MAX_HEAD_BYTES > MAX_URI_BYTES + MAX_HEADER_BYTES + 1024);
/// The most headers hyper parses in one request (its default, 100, refused heads of 1.3 KB).
/// Past its inline 100, hyper allocates 64 bytes of parser state per header for each head it
/// parses: 16 KiB at 256.
pub const MAX_HEADERS: usize = 256;

/// Connections still open at shutdown (an SSE stream, a long-poll) get this long to finish.
const DRAIN: Duration = Duration::from_secs(5);
/// How long an answer the server writes straight to a socket (a refusal, the overflow's) may
/// take, the wait for the client to close after it included.
const RAW_ANSWER: Duration = Duration::from_secs(1);
/// Connections past the pool that still get a reading: enough for an orchestrator's probes.
const OVERFLOW: usize = 32;
/// How long a connection past the pool may take to send its head, and how much of it is read.
const OVERFLOW_READ: Duration = Duration::from_secs(2);
const OVERFLOW_HEAD: usize = 4096;
/// After an answer to a head hyper would not take, how long and how much of what the client
/// still sends is read and dropped before the socket closes.
const LINGER: Duration = Duration::from_secs(1);
const LINGER_BYTES: usize = 1024 * 1024;

/// Why a request's body was cut short.
#[derive(Clone, Copy, Debug)]
enum Cut {
    Deadline,
    Stalled,
}

/// A request body that fails once the request's deadline passes, however steadily it drips, or
/// once the body timeout beneath it (`TimeoutBody`) finds it stalled; it records which.
struct DeadlineBody {
    body: Body,
    deadline: Pin<Box<Sleep>>,
    cut: Arc<OnceLock<Cut>>,
}

impl DeadlineBody {
    fn cut_short(&self, why: Cut) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let _ = self.cut.set(why);
        Poll::Ready(Some(Err(axum::Error::new(RequestDeadline))))
    }
}

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>, cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            return self.cut_short(Cut::Deadline);
        }
        match ready!(Pin::new(&mut self.body).poll_frame(cx)) {
            Some(Err(e)) if stalled(&e) => self.cut_short(Cut::Stalled),
            frame => Poll::Ready(frame),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

fn stalled(e: &axum::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.is::<TimeoutError>() {
            return true;
        }
        cause = c.source();
    }
    false
}

/// Gives a request's body its deadlines, and answers a request whose body one of them cut with
/// a 408 problem, whatever the handler made of the failed read (`ApiJson` says 408 itself; a
/// `Bytes` extractor's rejection, as MCP's, is a 400).
async fn with_deadlines(timeouts: ReadTimeouts, req: Request, next: Next) -> Response {
    let cut = Arc::new(OnceLock::new());
    let (parts, body) = req.into_parts();
    let body = DeadlineBody {
        body: Body::new(TimeoutBody::new(timeouts.body, body)),
        deadline: Box::pin(tokio::time::sleep(timeouts.request)),
        cut: cut.clone(),
    };
    let resp = next.run(Request::from_parts(parts, Body::new(body))).await;
    let failed_read = matches!(
        resp.status(),
        StatusCode::BAD_REQUEST | StatusCode::REQUEST_TIMEOUT
    );
    let Some(why) = cut.get().filter(|_| failed_read) else {
        return resp;
    };
    let detail = match why {
        Cut::Deadline => format!(
            "the request was not sent in full within its {} s deadline",
            timeouts.request.as_secs()
        ),
        Cut::Stalled => format!(
            "the request body stopped arriving: nothing came for {} s",
            timeouts.body.as_secs()
        ),
    };
    ApiError::RequestTimeout(detail).into_response()
}

/// A whole answer written straight to a socket, which closes after it.
fn raw_answer(status: StatusCode, content_type: &str, body: &str) -> Vec<u8> {
    let retry = match status {
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => "retry-after: 1\r\n",
        _ => "",
    };
    format!(
        "HTTP/1.1 {} {}\r\ncontent-type: {content_type}\r\n{retry}connection: close\r\n\
         content-length: {}\r\n\r\n{body}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes()
}

fn raw_problem(e: &ApiError) -> Vec<u8> {
    let (status, body) = e.problem();
    raw_answer(status, "application/problem+json", &body)
}

fn pool_full() -> ApiError {
    ApiError::Unavailable("too many open connections; retry shortly".into())
}

/// Writes `answer`, then reads and drops what the client still sends until it closes: closing
/// a socket with unread bytes resets the connection, and a reset can destroy the answer before
/// the client reads it. All within `RAW_ANSWER`, so a client that does neither costs a second.
async fn answer_and_close(mut stream: TcpStream, answer: &[u8]) {
    let _ = tokio::time::timeout(RAW_ANSWER, async {
        stream.write_all(answer).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<_, io::Error>(())
    })
    .await;
}

/// A refusal, written in the background so a client that does not read cannot stall the
/// accept loop.
fn refuse(stream: TcpStream, why: &ApiError) {
    let answer = raw_problem(why);
    tokio::spawn(async move { answer_and_close(stream, &answer).await });
}

/// The key a client's connections are counted under: its address, or for IPv6 its /64, which
/// one host usually holds whole.
fn client_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

/// The connections open per client.
#[derive(Clone, Default)]
struct Clients(Arc<Mutex<HashMap<IpAddr, usize>>>);

impl Clients {
    /// One more connection for `ip`'s client, unless it has `cap` open.
    fn admit(&self, ip: IpAddr, cap: usize) -> Option<ClientSlot> {
        let client = client_of(ip);
        let mut open = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let n = open.entry(client).or_default();
        if *n >= cap {
            return None;
        }
        *n += 1;
        Some(ClientSlot {
            clients: self.clone(),
            client,
        })
    }
}

/// One of a client's open connections, given back when dropped.
struct ClientSlot {
    clients: Clients,
    client: IpAddr,
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = self
            .clients
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = open.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.client);
            }
        }
    }
}

/// What an open connection holds until it closes.
type Held = (OwnedSemaphorePermit, ClientSlot);

/// Past the pool a connection still gets an answer: `GET /healthz` the router's, so a probe
/// does not take a server that is only full for a dead one; anything else the 503.
async fn answer_past_the_pool(mut stream: TcpStream, held: Held) {
    let head = tokio::time::timeout(OVERFLOW_READ, read_head(&mut stream))
        .await
        .unwrap_or_default();
    let healthz = head.starts_with(b"GET /healthz ") || head.starts_with(b"GET /healthz?");
    let answer = if healthz && head.ends_with(b"\r\n\r\n") {
        // What the router's /healthz answers.
        raw_answer(StatusCode::OK, "application/json", r#"{"status":"ok"}"#)
    } else {
        raw_problem(&pool_full())
    };
    answer_and_close(stream, &answer).await;
    drop(held);
}

/// A request's head, up to its blank line (or `OVERFLOW_HEAD` bytes, or the client's close).
async fn read_head(stream: &mut TcpStream) -> Vec<u8> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while head.len() < OVERFLOW_HEAD && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    head
}

/// A connection's socket as hyper sees it. hyper answers a head it will not take (past
/// `MAX_HEAD_BYTES` or `MAX_HEADERS`, a target over 64 KiB, a line it cannot parse) itself,
/// with a bodiless 400, 414 or 431, and closes; this writes a problem+json in its place, then
/// reads what the client still sends for a while, so closing does not reset the connection
/// before the client has read the answer.
struct ProblemIo {
    io: TcpStream,
    /// Whether the first line of what was read since the server last wrote (the request line,
    /// unless the client pipelines) has yet to end: if so, a head too large is a target too long.
    in_first_line: bool,
    /// The problem still to be written, from `.1` on.
    pending: Option<(Vec<u8>, usize)>,
    /// Once a problem is written in hyper's place: until when the client's bytes are dropped.
    linger: Option<Linger>,
}

struct Linger {
    shut: bool,
    until: Pin<Box<Sleep>>,
    dropped: usize,
}

impl ProblemIo {
    fn new(io: TcpStream) -> Self {
        ProblemIo {
            io,
            in_first_line: true,
            pending: None,
            linger: None,
        }
    }

    /// The problem+json for `bytes` if they are one of hyper's own answers: a 400, 414 or 431
    /// head with no body and no content type, which no route answers (the router's errors all
    /// carry problem+json).
    fn problem_for(&self, bytes: &[u8]) -> Option<ApiError> {
        let status = bytes.strip_prefix(b"HTTP/1.1 ")?.get(..4)?;
        let has = |needle: &[u8]| {
            bytes
                .windows(needle.len())
                .any(|w| w.eq_ignore_ascii_case(needle))
        };
        let bodiless = bytes.ends_with(b"\r\n\r\n")
            && has(b"\r\ncontent-length: 0\r\n")
            && !has(b"\r\ncontent-type:");
        if !bodiless {
            return None;
        }
        let target_too_long = || {
            ApiError::UriTooLong(format!(
                "the request target is longer than the {MAX_HEAD_BYTES} bytes this server \
                 reads of a request's head; the API takes at most {MAX_URI_BYTES}"
            ))
        };
        match status {
            b"400 " => Some(ApiError::BadRequest(
                "the request is not HTTP/1.1: its request line or a header could not be parsed"
                    .into(),
            )),
            b"414 " => Some(target_too_long()),
            b"431 " if self.in_first_line => Some(target_too_long()),
            b"431 " => Some(ApiError::HeadersTooLarge(format!(
                "the request head is over the {MAX_HEAD_BYTES} bytes or {MAX_HEADERS} headers \
                 this server reads; the API takes at most {MAX_HEADER_BYTES} bytes of headers"
            ))),
            _ => None,
        }
    }

    /// Takes `bytes` (the whole of what hyper is writing) in place of hyper's answer if they
    /// are one; `false` if they are to be written as they are.
    fn replace(&mut self, bytes: &[u8]) -> bool {
        let Some(problem) = self.problem_for(bytes) else {
            self.in_first_line = true;
            return false;
        };
        self.pending = Some((raw_problem(&problem), 0));
        self.linger = Some(Linger {
            shut: false,
            until: Box::pin(tokio::time::sleep(LINGER)),
            dropped: 0,
        });
        true
    }

    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((answer, from)) = &mut self.pending {
            if *from == answer.len() {
                self.pending = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &answer[*from..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *from += n;
        }
        Poll::Ready(Ok(()))
    }

    /// Shuts the writing side, then drops what the client sends until it closes, or for
    /// `LINGER`, or `LINGER_BYTES`.
    fn poll_linger(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(linger) = &mut self.linger else {
            return Poll::Ready(Ok(()));
        };
        if !linger.shut {
            ready!(Pin::new(&mut self.io).poll_shutdown(cx))?;
            linger.shut = true;
        }
        let mut sink = [0u8; 4096];
        while linger.dropped < LINGER_BYTES && linger.until.as_mut().poll(cx).is_pending() {
            let mut buf = ReadBuf::new(&mut sink);
            match Pin::new(&mut self.io).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if !buf.filled().is_empty() => {
                    linger.dropped += buf.filled().len();
                }
                Poll::Ready(_) => break,
                Poll::Pending => return Poll::Pending,
            }
        }
        self.linger = None;
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for ProblemIo {
    fn poll_read(
        self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.io).poll_read(cx, buf))?;
        if this.in_first_line && buf.filled()[before..].contains(&b'\n') {
            this.in_first_line = false;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for ProblemIo {
    fn poll_write(
        self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        if this.replace(buf) {
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut this.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        // hyper's own answer is a head alone, so it is the first piece of what it writes.
        if let Some(first) = bufs.iter().find(|b| !b.is_empty())
            && this.replace(first)
        {
            return Poll::Ready(Ok(first.len()));
        }
        Pin::new(&mut this.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        if this.linger.is_some() {
            return this.poll_linger(cx);
        }
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

/// What serving one connection needs.
struct Connection {
    http: Arc<http1::Builder>,
    app: Router,
    watcher: Watcher,
    first_byte: Duration,
    draining: watch::Receiver<bool>,
}

impl Connection {
    async fn serve(mut self, stream: TcpStream, held: Held) {
        // A connection that has sent nothing by its first-byte deadline is closed, and its
        // slot freed: hyper's header timeout would hold it for the whole read timeout.
        let mut byte = [0u8; 1];
        let first = tokio::select! {
            peeked = tokio::time::timeout(self.first_byte, stream.peek(&mut byte)) => peeked,
            _ = self.draining.wait_for(|d| *d) => return,
        };
        if !matches!(first, Ok(Ok(n)) if n > 0) {
            return;
        }
        let _ = stream.set_nodelay(true);
        let io = TokioIo::new(ProblemIo::new(stream));
        let conn = self
            .http
            .serve_connection(io, TowerToHyperService::new(self.app));
        if let Err(e) = self.watcher.watch(conn).await {
            tracing::debug!(error = %e, "connection closed");
        }
        drop(held);
    }
}

/// `serve` on a runtime of its own, on its own thread, until `stop` resolves; returns that
/// runtime, to be dropped only once the caller is done (tasks the API spawned, such as a group
/// commit a request's write leads, keep running on it until then).
///
/// Why a runtime apart: with thousands of iterations in flight the engine's runtime has a long
/// queue of ready tasks, and a request served on it waited behind them (a `GET` p99 of
/// ~300 ms at 10,000 runs). On its own thread the operating system schedules it beside them.
pub async fn serve_apart(
    listener: TcpListener, app: Router, timeouts: ReadTimeouts, limits: ConnectionLimits,
    stop: impl Future<Output = ()>,
) -> std::io::Result<tokio::runtime::Runtime> {
    let listener = listener.into_std()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("longrun-http")
        .enable_all()
        .build()?;
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let served = runtime.spawn(async move {
        let listener = TcpListener::from_std(listener)?;
        let stop = async move {
            let _ = stop_rx.wait_for(|s| *s).await;
        };
        serve(listener, app, timeouts, limits, stop).await;
        Ok::<_, std::io::Error>(())
    });
    tokio::pin!(served);
    tokio::select! {
        () = stop => {
            let _ = stop_tx.send(true);
            served.await.map_err(std::io::Error::other)??;
        }
        done = &mut served => done.map_err(std::io::Error::other)??,
    }
    Ok(runtime)
}

pub async fn serve(
    listener: TcpListener, app: Router, timeouts: ReadTimeouts, limits: ConnectionLimits,
    stop: impl Future<Output = ()>,
) {
    let (draining, drain_rx) = tokio::sync::watch::channel(false);
    let app = app
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| with_deadlines(timeouts, req, next),
        ))
        .layer(axum::Extension(Draining(drain_rx.clone())));
    let slots = Arc::new(Semaphore::new(limits.total));
    let overflow = Arc::new(Semaphore::new(OVERFLOW));
    let clients = Clients::default();
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(timeouts.header)
        // Bounds a request's head (hyper's default lets one header be ~400 KB).
        .max_buf_size(MAX_HEAD_BYTES)
        .max_headers(MAX_HEADERS);
    let http = Arc::new(http);
    // Silence that outlasts the header timeout is cut by it anyway.
    let first_byte = timeouts.first_byte.min(timeouts.header);
    let too_many_from_one = ApiError::TooManyConnections(format!(
        "this address has {} connections open, the most one client may; close one or retry \
         shortly",
        limits.per_client
    ));
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait instead of spinning or exiting.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        // The per-client cap first: so no one client takes the whole pool, nor the overflow.
        let Some(client) = clients.admit(peer.ip(), limits.per_client) else {
            refuse(stream, &too_many_from_one);
            continue;
        };
        if let Ok(slot) = slots.clone().try_acquire_owned() {
            let conn = Connection {
                http: http.clone(),
                app: app.clone(),
                watcher: graceful.watcher(),
                first_byte,
                draining: drain_rx.clone(),
            };
            tokio::spawn(conn.serve(stream, (slot, client)));
        } else if let Ok(slot) = overflow.clone().try_acquire_owned() {
            tokio::spawn(answer_past_the_pool(stream, (slot, client)));
        } else {
            refuse(stream, &pool_full());
        }
    }
    drop(listener);
    // Long-polls answer and event streams end now, so their connections close within DRAIN.
    let _ = draining.send(true);
    let _ = tokio::time::timeout(DRAIN, graceful.shutdown()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_ipv6_connections_are_counted_by_their_64_and_mapped_ipv4_as_ipv4() {
        let a: IpAddr = "2001:db8:1:2::10".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::1".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::10".parse().unwrap();
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(client_of(a), client_of(b));
        assert_ne!(client_of(a), client_of(other));
        assert_eq!(client_of(mapped), "192.0.2.7".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn a_client_at_its_cap_is_refused_until_one_of_its_connections_closes() {
        let clients = Clients::default();
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let first = clients.admit(ip, 2);
        let second = clients.admit(ip, 2);
        assert!(first.is_some() && second.is_some());
        assert!(clients.admit(ip, 2).is_none());
        assert!(clients.admit("192.0.2.2".parse().unwrap(), 2).is_some());
        drop(first);
        assert!(clients.admit(ip, 2).is_some());
    }
}
