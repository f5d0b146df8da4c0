//! The HTTP server of `longrun serve`: one HTTP/1 connection task per client, with read
//! timeouts so a client that stops sending mid-request (or opens a connection and sends
//! nothing) cannot hold a socket and a task forever, and a graceful shutdown.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use longrun_http::api::Draining;
use tokio::net::TcpListener;
use tower_http::timeout::RequestBodyTimeoutLayer;

/// How long a connection may take to send a request's headers (and how long an idle
/// keep-alive connection stays open), and then its body.
#[derive(Clone, Copy, Debug)]
pub struct ReadTimeouts {
    pub header: Duration,
    pub body: Duration,
}

/// Connections still open at shutdown (an SSE stream, a long-poll) get this long to finish.
const DRAIN: Duration = Duration::from_secs(5);

pub async fn serve(
    listener: TcpListener, app: Router, timeouts: ReadTimeouts, stop: impl Future<Output = ()>,
) {
    let (draining, drain_rx) = tokio::sync::watch::channel(false);
    let app = app
        .layer(RequestBodyTimeoutLayer::new(timeouts.body))
        .layer(axum::Extension(Draining(drain_rx)));
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(timeouts.header);
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
        let _ = stream.set_nodelay(true);
        let conn =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection closed");
            }
        });
    }
    drop(listener);
    // Long-polls answer and event streams end now, so their connections close within DRAIN.
    let _ = draining.send(true);
    let _ = tokio::time::timeout(DRAIN, graceful.shutdown()).await;
}
