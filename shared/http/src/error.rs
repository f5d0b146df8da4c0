//! RFC 7807 problem+json for every API failure. A 500 never says what broke inside.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use longrun_domain::{DomainError, Rejection};
use longrun_engine::EngineError;
use longrun_ports::StoreError;
use longrun_service::ServiceError;
use serde::de::DeserializeOwned;
use serde_json::json;
use tracing::error;

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
    TooManyRequests(String),
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
            ApiError::PayloadTooLarge(_) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload-too-large",
                "Request body too large",
            ),
            ApiError::TooManyRequests(_) => (
                StatusCode::TOO_MANY_REQUESTS,
                "limit-exceeded",
                "Too many active runs",
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

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, kind, title) = self.parts();
        if let ApiError::Internal(cause) = &self {
            error!(error = %cause, "request failed");
        }
        let body = json!({
            "type": format!("https://longrun.dev/problems/{kind}"),
            "title": title,
            "status": status.as_u16(),
            "detail": self.to_string(),
        });
        let mut resp = (status, body.to_string()).into_response();
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

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        ServiceError::from(e).into()
    }
}

impl From<Rejection> for ApiError {
    fn from(r: Rejection) -> Self {
        ServiceError::from(r).into()
    }
}

impl From<DomainError> for ApiError {
    fn from(e: DomainError) -> Self {
        ServiceError::from(e).into()
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        ServiceError::from(e).into()
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
        match axum::Json::<serde_json::Value>::from_request(req, state).await {
            Ok(axum::Json(mut v)) => {
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

/// A 405 from the router (a known path, another method) as problem+json; its `Allow` header
/// stays.
pub async fn method_not_allowed_as_problem(resp: Response) -> Response {
    if resp.status() != StatusCode::METHOD_NOT_ALLOWED {
        return resp;
    }
    let allow = resp.headers().get(header::ALLOW).cloned();
    let body = json!({
        "type": "https://longrun.dev/problems/method-not-allowed",
        "title": "Method not allowed",
        "status": 405,
        "detail": match allow.as_ref().and_then(|a| a.to_str().ok()) {
            Some(a) => format!("this path answers {a}"),
            None => "this path does not answer that method".to_string(),
        },
    });
    let mut out = (StatusCode::METHOD_NOT_ALLOWED, body.to_string()).into_response();
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    if let Some(a) = allow {
        out.headers_mut().insert(header::ALLOW, a);
    }
    out
}
