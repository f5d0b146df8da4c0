//! The web console (`web/`, built by Vite) served beside the API: static files, `/config.json`,
//! and `index.html` for every other non-API path so deep links like `/runs/{id}` open the app.

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::platform::Platform;

/// One built file: its path under the build output (`index.html`, `assets/index-3f2a.js`).
pub type Asset = (&'static str, &'static [u8]);

const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const NOT_BUILT: &str = "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>longrun</title>\
<body style=\"font-family:system-ui;max-width:40rem;margin:3rem auto\"><h1>The console is not in this build</h1>\
<p>This <code>longrun</code> binary was built without the web console. Build it with <code>make web</code> \
(Node 20), then rebuild the binary. The API under <code>/v1</code> works either way.</p></body></html>";

#[derive(Clone)]
pub struct Console {
    assets: &'static [Asset],
    config: Value,
}

impl Console {
    /// Same-origin API, bearer-token sign-in and SSE: what `longrun serve` offers.
    pub fn local(assets: &'static [Asset]) -> Console {
        Console {
            assets,
            config: json!({"apiUrl": "", "auth": {"mode": "token"}, "live": "sse"}),
        }
    }

    /// The response to a request no API route took.
    pub fn respond(&self, method: &Method, uri: &Uri) -> Response {
        let path = uri.path();
        if path == "/v1"
            || path.starts_with("/v1/")
            || (method != Method::GET && method != Method::HEAD)
        {
            return ApiError::NotFound("route".into()).into_response();
        }
        if path == "/config.json" {
            return file(
                self.config.to_string().into_bytes(),
                "application/json",
                "no-cache",
            );
        }
        let wanted = path.trim_start_matches('/');
        if let Some((_, bytes)) = self
            .assets
            .iter()
            .find(|(p, _)| *p == wanted && !wanted.is_empty())
        {
            // Vite puts a content hash in every name under assets/, so those never change.
            let cache = if wanted.starts_with("assets/") {
                "public, max-age=31536000, immutable"
            } else {
                "no-cache"
            };
            return file(bytes.to_vec(), content_type(wanted), cache);
        }
        let last = wanted.rsplit('/').next().unwrap_or_default();
        if last.contains('.') {
            // A missing file, not a page: a 404 keeps a stale script from becoming HTML.
            return (StatusCode::NOT_FOUND, "not found").into_response();
        }
        match self.assets.iter().find(|(p, _)| *p == "index.html") {
            Some((_, index)) => file(index.to_vec(), "text/html; charset=utf-8", "no-cache"),
            None => file(
                NOT_BUILT.as_bytes().to_vec(),
                "text/html; charset=utf-8",
                "no-cache",
            ),
        }
    }
}

fn file(bytes: Vec<u8>, ctype: &'static str, cache: &'static str) -> Response {
    let mut r = Response::new(Body::from(bytes));
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if ctype.starts_with("text/html") {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        );
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    r
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or_default() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The API, and the console for every path the API does not own.
pub fn router_with_console(p: Platform, console: Console) -> Router {
    crate::api::with_head_limits(
        crate::api::routes(p).fallback(move |method: Method, uri: Uri| {
            let console = console.clone();
            async move { console.respond(&method, &uri) }
        }),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    static BUILT: &[Asset] = &[
        ("index.html", b"<!doctype html><title>app</title>"),
        ("assets/index-abc123.js", b"console.log(1)"),
    ];

    fn get(c: &Console, path: &str) -> Response {
        c.respond(&Method::GET, &path.parse().unwrap())
    }

    fn header(r: &Response, name: header::HeaderName) -> &str {
        r.headers()
            .get(name)
            .map(|v| v.to_str().unwrap())
            .unwrap_or("")
    }

    async fn body(r: Response) -> String {
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn a_deep_link_to_a_run_gets_the_app_page_with_a_strict_policy() {
        let r = get(&Console::local(BUILT), "/runs/run_0123abc");
        assert_eq!(r.status(), StatusCode::OK);
        assert!(header(&r, header::CONTENT_SECURITY_POLICY).contains("script-src 'self'"));
        assert_eq!(header(&r, header::CACHE_CONTROL), "no-cache");
        assert_eq!(body(r).await, "<!doctype html><title>app</title>");
    }

    #[tokio::test]
    async fn hashed_assets_are_served_with_their_type_and_cached_for_good() {
        let r = get(&Console::local(BUILT), "/assets/index-abc123.js");
        assert_eq!(
            header(&r, header::CONTENT_TYPE),
            "text/javascript; charset=utf-8"
        );
        assert!(header(&r, header::CACHE_CONTROL).contains("immutable"));
        assert_eq!(body(r).await, "console.log(1)");
    }

    #[tokio::test]
    async fn a_missing_file_is_a_404_not_the_app_page() {
        let r = get(&Console::local(BUILT), "/assets/index-old.js");
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn unknown_api_paths_and_other_methods_stay_problem_json_404s() {
        let c = Console::local(BUILT);
        for r in [
            get(&c, "/v1/nope"),
            c.respond(&Method::POST, &"/runs/x".parse().unwrap()),
        ] {
            assert_eq!(r.status(), StatusCode::NOT_FOUND);
            assert_eq!(header(&r, header::CONTENT_TYPE), "application/problem+json");
        }
    }

    #[tokio::test]
    async fn the_local_config_asks_for_a_token_and_streams() {
        let r = get(&Console::local(BUILT), "/config.json");
        let v: Value = serde_json::from_str(&body(r).await).unwrap();
        assert_eq!(v["auth"]["mode"], "token");
        assert_eq!(v["live"], "sse");
        assert_eq!(v["apiUrl"], "");
    }

    #[tokio::test]
    async fn a_binary_built_without_the_console_says_how_to_build_it() {
        let r = get(&Console::local(&[]), "/");
        assert_eq!(r.status(), StatusCode::OK);
        assert!(body(r).await.contains("make web"));
    }
}
