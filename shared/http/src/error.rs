//! RFC 7807 problem+json for every API failure. A 500 never says what broke inside.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use longrun_domain::clip;
use longrun_service::ServiceError;
use serde::de::DeserializeOwned;
use serde_json::json;
use tracing::error;

use crate::strict::StrictValue;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("missing or invalid bearer token")]
    Unauthorized,
    #[error("{0}")]
    Forbidden(String),
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Unprocessable(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("{0}")]
    RequestTimeout(String),
    #[error("{0}")]
    UriTooLong(String),
    #[error("{0}")]
    HeadersTooLarge(String),
    #[error("{0}")]
    TooManyRequests(String),
    #[error("{0}")]
    TooManyConnections(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ApiError {
    pub fn internal(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        ApiError::Internal(Box::new(e))
    }

    /// The problem's short title, as in its problem+json body.
    pub fn title(&self) -> &'static str {
        self.parts().2
    }

    fn parts(&self) -> (StatusCode, &'static str, &'static str) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad-request", "Bad request"),
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized", "Unauthorized"),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden", "Forbidden"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not-found", "Not found"),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, "conflict", "Conflict"),
            ApiError::Unprocessable(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "validation",
                "Invalid request",
            ),
            ApiError::RequestTimeout(_) => {
                (StatusCode::REQUEST_TIMEOUT, "timeout", "Request timeout")
            }
            ApiError::PayloadTooLarge(_) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload-too-large",
                "Request body too large",
            ),
            ApiError::UriTooLong(_) => (
                StatusCode::URI_TOO_LONG,
                "uri-too-long",
                "Request target too long",
            ),
            ApiError::HeadersTooLarge(_) => (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "headers-too-large",
                "Request headers too large",
            ),
            ApiError::TooManyRequests(_) => (
                StatusCode::TOO_MANY_REQUESTS,
                "limit-exceeded",
                "Too many active runs",
            ),
            ApiError::TooManyConnections(_) => (
                StatusCode::TOO_MANY_REQUESTS,
                "too-many-connections",
                "Too many connections",
            ),
            ApiError::Unavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "Temporarily unavailable",
            ),
            ApiError::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "Internal error",
            ),
        }
    }
}

impl ApiError {
    /// The problem's status and its problem+json body, as `into_response` sends them; also
    /// what a server writes straight to a socket where no router runs.
    pub fn problem(&self) -> (StatusCode, String) {
        let (status, kind, title) = self.parts();
        let body = json!({
            "type": format!("https://longrun.dev/problems/{kind}"),
            "title": title,
            "status": status.as_u16(),
            "detail": self.to_string(),
        });
        (status, body.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(cause) = &self {
            error!(error = %cause, "request failed");
        }
        let (status, body) = self.problem();
        let mut resp = (status, body).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

/// The one mapping from a use case's answer to an HTTP problem.
impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Invalid(m) => ApiError::Unprocessable(m),
            ServiceError::NotFound(m) => ApiError::NotFound(m),
            ServiceError::Conflict(m) => ApiError::Conflict(m),
            ServiceError::LimitExceeded(m) => ApiError::TooManyRequests(m),
            ServiceError::Unavailable(m) => ApiError::Unavailable(m),
            ServiceError::Internal(e) => ApiError::Internal(e),
        }
    }
}

/// `Json` whose rejections are problem+json: syntax → 400, shape (unknown or mistyped
/// fields) → 422.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<StrictValue>::from_request(req, state).await {
            Ok(axum::Json(StrictValue(mut v))) => {
                integral_floats_to_ints(&mut v);
                serde_path_to_error::deserialize(v)
                    .map(ApiJson)
                    .map_err(|e| {
                        ApiError::Unprocessable(format!(
                            "Failed to deserialize the JSON body into the target type: {e}"
                        ))
                    })
            }
            Err(JsonRejection::JsonDataError(e)) => Err(ApiError::Unprocessable(e.body_text())),
            Err(JsonRejection::JsonSyntaxError(e)) => Err(ApiError::BadRequest(e.body_text())),
            Err(JsonRejection::MissingJsonContentType(_)) => Err(ApiError::BadRequest(
                "send the body as JSON with Content-Type: application/json".into(),
            )),
            Err(e) if past_deadline(&e) => Err(ApiError::RequestTimeout(
                "the request was not sent in full before its deadline".into(),
            )),
            Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::PayloadTooLarge(format!(
                    "the body is larger than {} bytes",
                    crate::api::BODY_LIMIT
                )))
            }
            Err(e) => Err(ApiError::BadRequest(e.body_text())),
        }
    }
}

/// The error a server's request deadline puts in a body it cuts: a handler reading that body
/// answers 408.
#[derive(Debug, thiserror::Error)]
#[error("the request was not sent in full before its deadline")]
pub struct RequestDeadline;

fn past_deadline(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if c.is::<RequestDeadline>() {
            return true;
        }
        cause = c.source();
    }
    false
}

/// JSON Schema counts `3.0` as an integer, so clients and generators may send one where the
/// API takes an integer; serde would refuse it.
fn integral_floats_to_ints(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 9_007_199_254_740_992.0
            {
                // Exact: |f| < 2^53.
                #[allow(clippy::cast_possible_truncation)]
                let i = f as i64;
                *v = serde_json::Value::from(i);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(integral_floats_to_ints),
        serde_json::Value::Object(map) => map.values_mut().for_each(integral_floats_to_ints),
        _ => {}
    }
}

/// A query parameter the document does not give the route is a 400 naming it, never ignored:
/// `?since_seq=10` on a stream that reads `after` would otherwise replay from the start.
pub async fn known_query(
    matched: Option<axum::extract::MatchedPath>, req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let (Some(route), Some(_)) = (matched, req.uri().query()) else {
        return next.run(req).await;
    };
    let method = req.method().as_str().to_ascii_lowercase();
    let Some(known) = crate::openapi::query_names(&method, route.as_str()) else {
        return next.run(req).await;
    };
    // Names as the handlers' `Query` will decode them (a pair it cannot decode is its 400).
    let pairs = axum::extract::Query::<Vec<(String, String)>>::try_from_uri(req.uri())
        .map(|axum::extract::Query(v)| v)
        .unwrap_or_default();
    let mut unknown: Vec<String> = pairs
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| !known.contains(&k.as_str()))
        .collect();
    unknown.dedup();
    if unknown.is_empty() {
        return next.run(req).await;
    }
    let takes = match known.is_empty() {
        true => "takes no query parameters".to_string(),
        false => format!("takes {}", known.join(", ")),
    };
    ApiError::BadRequest(format!(
        "unknown query parameter{} {}: {} {takes}",
        if unknown.len() == 1 { "" } else { "s" },
        unknown
            .iter()
            .map(|k| format!("`{}`", clip(k, 64)))
            .collect::<Vec<_>>()
            .join(", "),
        route.as_str()
    ))
    .into_response()
}

/// `Query` whose rejections are problem+json 400s naming what was wrong.
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(v)| ApiQuery(v))
            .map_err(|e| ApiError::BadRequest(e.body_text()))
    }
}

/// An error the router or an extractor answered by itself (a 405, a path that is not UTF-8, a
/// body over the limit: plain text or nothing) as problem+json, its text as the detail; a 405
/// keeps its `Allow` header.
pub async fn plain_errors_as_problems(resp: Response) -> Response {
    let status = resp.status();
    let plain = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|t| t.starts_with("text/plain"));
    if !(status.is_client_error() || status.is_server_error()) || !plain {
        return resp;
    }
    let allow = resp.headers().get(header::ALLOW).cloned();
    let text = axum::body::to_bytes(resp.into_body(), 4096)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let (kind, title) = match status {
        StatusCode::METHOD_NOT_ALLOWED => ("method-not-allowed", "Method not allowed"),
        StatusCode::NOT_FOUND => ("not-found", "Not found"),
        StatusCode::PAYLOAD_TOO_LARGE => ("payload-too-large", "Request body too large"),
        StatusCode::REQUEST_TIMEOUT => ("timeout", "Request timeout"),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ("unsupported-media-type", "Unsupported media type"),
        s if s.is_server_error() => ("internal", "Internal error"),
        _ => ("bad-request", "Bad request"),
    };
    let detail = match (status, allow.as_ref().and_then(|a| a.to_str().ok())) {
        (StatusCode::METHOD_NOT_ALLOWED, Some(a)) => format!("this path answers {a}"),
        (StatusCode::METHOD_NOT_ALLOWED, None) => "this path does not answer that method".into(),
        _ if text.is_empty() => title.to_string(),
        _ => text,
    };
    let body = json!({
        "type": format!("https://longrun.dev/problems/{kind}"),
        "title": title,
        "status": status.as_u16(),
        "detail": detail,
    });
    let mut out = (status, body.to_string()).into_response();
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    if let Some(a) = allow {
        out.headers_mut().insert(header::ALLOW, a);
    }
    out
}

/// The longest request target (path and query) the API takes: its ids, paths and cursors are
/// far shorter.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// The most header bytes (names and values, all headers together) the API takes in a request.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// Refuses a request whose target or headers are larger than the API takes, with a
/// problem+json 414 or 431, and one that declares a body over the limit with a 413, before any
/// route or extractor reads it (so a client is not kept waiting while it sends a body that
/// will be refused, nor the server while it does not). Below the HTTP server's own bound on a
/// request's head (`serve`: 64 KiB), so this answer is what a client sees for anything the
/// server could read.
pub async fn head_limits(req: Request, next: axum::middleware::Next) -> Response {
    let target = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if target > MAX_URI_BYTES {
        return ApiError::UriTooLong(format!(
            "the request target is {target} bytes; at most {MAX_URI_BYTES} are taken"
        ))
        .into_response();
    }
    let headers: usize = req
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if headers > MAX_HEADER_BYTES {
        return ApiError::HeadersTooLarge(format!(
            "the request headers are {headers} bytes; at most {MAX_HEADER_BYTES} are taken"
        ))
        .into_response();
    }
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let limit = crate::api::BODY_LIMIT;
    if let Some(length) = declared
        && length > limit as u64
    {
        return ApiError::PayloadTooLarge(format!(
            "the body is {length} bytes; at most {limit} are taken"
        ))
        .into_response();
    }
    next.run(req).await
}
