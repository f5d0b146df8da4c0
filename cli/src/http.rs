//! The HTTP server of `longrun serve`: one HTTP/1 connection task per client, at most
//! `max_connections` of them, with a header timeout and a whole-request deadline so a client
//! that drips its request (or opens a connection and sends nothing) cannot hold a socket and a
//! task for longer than that, and a graceful shutdown.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use longrun_http::error::RequestDeadline;
use tokio::io::AsyncWriteExt;
use tokio::sync::Semaphore;
use tokio::time::Sleep;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use longrun_http::api::Draining;
use tokio::net::TcpListener;
use tower_http::timeout::RequestBodyTimeoutLayer;

/// How long a connection may take to send a request's headers (and how long an idle
/// keep-alive connection stays open), and then its body: between two pieces, and in all.
#[derive(Clone, Copy, Debug)]
pub struct ReadTimeouts {
    pub header: Duration,
    pub body: Duration,
    pub request: Duration,
}

/// A request body that fails once the request's deadline passes, however steadily it drips.
struct DeadlineBody {
    body: Body,
    deadline: Pin<Box<Sleep>>,
}

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>, cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(axum::Error::new(RequestDeadline))));
        }
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

fn with_deadline(req: Request, within: Duration) -> Request {
    let (parts, body) = req.into_parts();
    let deadline = Box::pin(tokio::time::sleep(within));
    Request::from_parts(parts, Body::new(DeadlineBody { body, deadline }))
}

/// The body of the answer past `max_connections`, written straight to the socket: the router
/// is not run.
const REFUSAL: &str = r#"{"type":"https://longrun.dev/problems/unavailable","title":"Temporarily unavailable","status":503,"detail":"too many open connections; retry shortly"}"#;

fn refusal() -> String {
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{REFUSAL}",
        REFUSAL.len()
    )
}

/// The largest request line and headers hyper reads, together. Above the API's own bounds on
/// the target and the headers (`longrun_http::error::head_limits`), so a head the API refuses
/// is still read in full and gets its problem+json; only a head past this gets hyper's 431,
/// which has no body.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
const _: () = assert!(
    MAX_HEAD_BYTES
        > longrun_http::error::MAX_URI_BYTES + longrun_http::error::MAX_HEADER_BYTES + 1024
);

/// Connections still open at shutdown (an SSE stream, a long-poll) get this long to finish.
const DRAIN: Duration = Duration::from_secs(5);

/// `serve` on a runtime of its own, on its own thread, until `stop` resolves; returns that
/// runtime, to be dropped only once the caller is done (tasks the API spawned, such as a group
/// commit a request's write leads, keep running on it until then).
///
/// Why a runtime apart: with thousands of iterations in flight the engine's runtime has a long
/// queue of ready tasks, and a request served on it waited behind them (a `GET` p99 of
/// ~300 ms at 10,000 runs). On its own thread the operating system schedules it beside them.
pub async fn serve_apart(
    listener: TcpListener, app: Router, timeouts: ReadTimeouts, max_connections: usize,
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
        serve(listener, app, timeouts, max_connections, stop).await;
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
    listener: TcpListener, app: Router, timeouts: ReadTimeouts, max_connections: usize,
    stop: impl Future<Output = ()>,
) {
    let (draining, drain_rx) = tokio::sync::watch::channel(false);
    let within = timeouts.request;
    let app = app
        .layer(RequestBodyTimeoutLayer::new(timeouts.body))
        .layer(axum::middleware::map_request(
            move |req: Request| async move { with_deadline(req, within) },
        ))
        .layer(axum::Extension(Draining(drain_rx)));
    let slots = Arc::new(Semaphore::new(max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(timeouts.header)
        // Bounds a request's head (hyper's default lets one header be ~400 KB): past it hyper
        // answers 431 itself, with no body; below it the API's own limits answer problem+json.
        .max_buf_size(MAX_HEAD_BYTES);
    tokio::pin!(stop);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: wait instead of spinning or exiting.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            // A clear refusal, written in the background so a client that does not read cannot
            // stall the accept loop.
            tokio::spawn(async move {
                let (mut stream, answer) = (stream, refusal());
                let write = stream.write_all(answer.as_bytes());
                let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
            });
            continue;
        };
        let _ = stream.set_nodelay(true);
        let conn =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection closed");
            }
            drop(slot);
        });
    }
    drop(listener);
    // Long-polls answer and event streams end now, so their connections close within DRAIN.
    let _ = draining.send(true);
    let _ = tokio::time::timeout(DRAIN, graceful.shutdown()).await;
}
