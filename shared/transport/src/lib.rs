//! Why an outbound request got no answer, for every client that sends one (the model
//! providers, `http_fetch`, users' tools and MCP servers, webhooks): reqwest's own message is
//! "error sending request for url (…)" whatever happened, and the cause that tells a user what
//! to do next — nothing listens there, it never answered, its certificate is not trusted — is
//! further down the error's source chain. Describes; decides nothing (retrying is the caller's).
//! Also the one reader of `Retry-After`, the answer's own word on when to come back.

use std::error::Error;
use std::fmt;
use std::io;

/// The cause of a failed request, as far down its source chain as it is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// Nothing accepted the connection: the address is right but no server listens there.
    Refused,
    /// No answer within the client's connect or request timeout.
    TimedOut,
    /// The TLS handshake failed (an untrusted certificate, a server that does not speak TLS);
    /// rustls's reason.
    Tls(String),
    /// The connection was reset or closed before the answer was complete.
    Reset,
    /// The connection could not be made for another reason (an unreachable network, a name
    /// that did not resolve); the innermost reason.
    Connect(String),
    /// Anything else: the innermost reason.
    Other(String),
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Refused => f.write_str("connection refused"),
            Cause::TimedOut => f.write_str("timed out"),
            Cause::Tls(why) => write!(f, "TLS handshake failed: {why}"),
            Cause::Reset => f.write_str("connection reset before the answer was complete"),
            Cause::Connect(why) => write!(f, "could not connect: {why}"),
            Cause::Other(why) => f.write_str(why),
        }
    }
}

/// The cause of `err` (a `reqwest::Error`, or anything that has one in its source chain).
/// TLS wins over the rest, as its reason is the most specific; then a timeout, then how the
/// connection failed.
pub fn cause(err: &(dyn Error + 'static)) -> Cause {
    let chain = chain(err);
    if let Some(tls) = chain.iter().find_map(|e| e.downcast_ref::<rustls::Error>()) {
        return Cause::Tls(tls.to_string());
    }
    let reqwest = || {
        chain
            .iter()
            .filter_map(|e| e.downcast_ref::<reqwest::Error>())
    };
    let io_kinds = || {
        chain
            .iter()
            .filter_map(|e| e.downcast_ref::<io::Error>())
            .map(io::Error::kind)
    };
    if reqwest().any(reqwest::Error::is_timeout) || io_kinds().any(|k| k == io::ErrorKind::TimedOut)
    {
        return Cause::TimedOut;
    }
    if io_kinds().any(|k| k == io::ErrorKind::ConnectionRefused) {
        return Cause::Refused;
    }
    if io_kinds().any(|k| {
        matches!(
            k,
            io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::UnexpectedEof
        )
    }) {
        return Cause::Reset;
    }
    let innermost = chain.last().map(|e| e.to_string()).unwrap_or_default();
    match reqwest().any(reqwest::Error::is_connect) {
        true => Cause::Connect(innermost),
        false => Cause::Other(innermost),
    }
}

/// [`cause`] in words, without the URL (which may carry a user's secret in its path).
pub fn describe(err: &(dyn Error + 'static)) -> String {
    cause(err).to_string()
}

/// `err` and its sources, outermost first. An `io::Error` that wraps another error answers
/// `source()` with that error's source, skipping the error itself (rustls's, say): it is taken
/// from `get_ref()` instead.
fn chain<'a>(err: &'a (dyn Error + 'static)) -> Vec<&'a (dyn Error + 'static)> {
    let mut out = vec![];
    let mut next = Some(err);
    while let Some(e) = next {
        out.push(e);
        next = match e.downcast_ref::<io::Error>().and_then(io::Error::get_ref) {
            Some(inner) => Some(inner as &(dyn Error + 'static)),
            None => e.source(),
        };
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    fn client() -> reqwest::Client {
        reqwest::Client::builder()
            .timeout(Duration::from_millis(300))
            .build()
            .unwrap()
    }

    async fn failed(url: &str) -> reqwest::Error {
        client().get(url).send().await.unwrap_err()
    }

    #[tokio::test]
    async fn a_closed_loopback_port_is_a_refused_connection() {
        // Arrange: a port that was just free, with nothing listening on it now.
        let port = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap()
            .port();

        // Act
        let err = failed(&format!("http://127.0.0.1:{port}/")).await;

        // Assert
        assert_eq!(cause(&err), Cause::Refused);
        assert_eq!(describe(&err), "connection refused");
        assert!(err.to_string().contains("error sending request"), "{err}");
    }

    #[tokio::test]
    async fn a_server_that_never_answers_is_a_timeout() {
        // Arrange: a server that takes the connection and the request, and says nothing.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let silent = tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = conn.read(&mut buf).await;
            tokio::time::sleep(Duration::from_secs(3600)).await;
        });

        // Act
        let err = failed(&format!("http://{addr}/")).await;

        // Assert
        assert_eq!(describe(&err), "timed out");
        silent.abort();
    }

    #[tokio::test]
    async fn a_server_that_does_not_speak_tls_fails_the_handshake_with_rustls_s_reason() {
        // Arrange: plain HTTP where the client expects TLS.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let plain = tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = conn.read(&mut buf).await;
            let _ = conn.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
        });

        // Act
        let err = failed(&format!("https://{addr}/")).await;

        // Assert
        let described = describe(&err);
        assert!(matches!(cause(&err), Cause::Tls(_)), "{described}");
        assert!(
            described.starts_with("TLS handshake failed: "),
            "{described}"
        );
        plain.abort();
    }

    #[test]
    fn an_error_with_nothing_known_below_it_says_what_it_says() {
        let err = io::Error::other("the disk is on fire");
        assert_eq!(describe(&err), "the disk is on fire");
    }
}

/// A `Retry-After` value as milliseconds from `now_ms` (epoch ms): delay-seconds (fractions
/// allowed, as some providers send) or an HTTP-date; `None` for anything else. A date in the
/// past means now.
pub fn parse_retry_after(value: &str, now_ms: i64) -> Option<u64> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| (secs * 1000.0).min(u64::MAX as f64) as u64);
    }
    let at = httpdate::parse_http_date(v).ok()?;
    let at_ms = at.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis();
    let at_ms = i64::try_from(at_ms).ok()?;
    Some(u64::try_from(at_ms.saturating_sub(now_ms)).unwrap_or(0))
}

/// The `Retry-After` of a response's headers, as milliseconds from now.
pub fn retry_after_ms(headers: &reqwest::header::HeaderMap) -> Option<u64> {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    parse_retry_after(
        headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?,
        now_ms,
    )
}

#[cfg(test)]
mod retry_after_tests {
    use super::parse_retry_after;

    #[test]
    fn seconds_with_or_without_a_fraction_become_milliseconds() {
        assert_eq!(parse_retry_after("7", 0), Some(7_000));
        assert_eq!(parse_retry_after(" 1.5 ", 0), Some(1_500));
    }

    #[test]
    fn an_http_date_is_the_time_until_it_and_a_past_one_is_now() {
        // Wed, 21 Oct 2015 07:28:00 GMT = 1445412480 s.
        let at = 1_445_412_480_000;
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        assert_eq!(parse_retry_after(date, at - 3_000), Some(3_000));
        assert_eq!(parse_retry_after(date, at + 60_000), Some(0));
    }

    #[test]
    fn anything_else_is_no_answer() {
        for v in ["", "soon", "-1", "NaN", "inf"] {
            assert_eq!(parse_retry_after(v, 0), None, "{v}");
        }
    }
}
