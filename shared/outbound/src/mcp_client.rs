//! Users' MCP servers (`POST /v1/mcp-servers`): a Model Context Protocol client over
//! streamable HTTP (JSON-RPC 2.0; answers as JSON or as an event stream) through the same
//! SSRF-guarded client as `http_fetch`, and the tools it builds, named `{server}.{tool}`.
//! Every exchange is bounded in time and size; whatever a server answers is untrusted data.
//! It holds no session between calls: each list or call initializes its own.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use longrun_domain::McpServer;
use longrun_ports::{McpConnector, McpToolSpec, Tool, ToolContext};
use serde_json::{Value, json};
use url::Url;

use crate::{EndpointSettings, Guarded, Refusal, fence, read_limited, refusal_in};

/// What we ask for in `initialize`; the server may answer with another version it supports.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
/// `tools/list` pages followed before the listing is cut.
const MAX_PAGES: usize = 10;

#[derive(Clone, Debug)]
pub struct McpSettings {
    /// One whole call, handshake included.
    pub timeout: Duration,
    /// One whole listing, handshake included: shorter, since a stalled server's listing holds
    /// up every iteration that finds its cached listing expired.
    pub list_timeout: Duration,
    pub max_response_bytes: usize,
    /// Result text handed to the planner.
    pub max_chars: usize,
    /// Tools taken from one server's listing.
    pub max_tools: usize,
}

impl Default for McpSettings {
    fn default() -> Self {
        McpSettings {
            timeout: Duration::from_secs(20),
            list_timeout: Duration::from_secs(5),
            max_response_bytes: 1024 * 1024,
            max_chars: 8_000,
            max_tools: 64,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("refused {url}: {refusal}")]
    Refused { url: String, refusal: Refusal },
    #[error("url `{0}` is not valid: {1}")]
    BadUrl(String, url::ParseError),
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("request failed: {0}")]
    Http(String),
    #[error("answered HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("answered more than {0} bytes")]
    TooLarge(usize),
    #[error("answered something that is not MCP: {0}")]
    Garbage(String),
    #[error("answered JSON-RPC error {code}: {message}")]
    Rpc { code: i64, message: String },
}

impl McpError {
    pub fn is_retryable(&self) -> bool {
        match self {
            McpError::Timeout(_) | McpError::Http(_) => true,
            McpError::Status { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }
}

/// What a `tools/call` answered.
#[derive(Clone, Debug, PartialEq)]
pub struct McpCallResult {
    /// The text items of `content` (other items named, not shown), or `structuredContent`.
    pub text: String,
    pub is_error: bool,
}

/// The client for every user's servers; cheap to clone (one connection pool).
pub type HttpMcpClient = Guarded<McpSettings>;

impl EndpointSettings for McpSettings {
    fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl HttpMcpClient {
    /// The server's tools (`tools/list`, following `nextCursor`), at most `max_tools`.
    pub async fn list_tools(&self, server: &McpServer) -> Result<Vec<McpToolSpec>, McpError> {
        self.bounded(self.settings.list_timeout, async {
            let mut session = self.open(server).await?;
            let mut tools = vec![];
            let mut cursor: Option<String> = None;
            for _ in 0..MAX_PAGES {
                let params = match &cursor {
                    Some(c) => json!({"cursor": c}),
                    None => json!({}),
                };
                let page = session.request("tools/list", params).await?;
                let listed = page
                    .get("tools")
                    .and_then(Value::as_array)
                    .ok_or_else(|| McpError::Garbage("tools/list without a tools array".into()))?;
                for t in listed {
                    tools.push(tool_spec(t)?);
                }
                cursor = page
                    .get("nextCursor")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                if cursor.is_none() || tools.len() >= self.settings.max_tools {
                    break;
                }
            }
            tools.truncate(self.settings.max_tools);
            session.close().await;
            Ok(tools)
        })
        .await
    }

    /// Calls one tool with arguments already checked against its schema.
    pub async fn call_tool(
        &self, server: &McpServer, tool: &str, args: &Value,
    ) -> Result<McpCallResult, McpError> {
        self.bounded(self.settings.timeout, async {
            let mut session = self.open(server).await?;
            let result = session
                .request("tools/call", json!({"name": tool, "arguments": args}))
                .await?;
            session.close().await;
            call_result(&result)
        })
        .await
    }

    async fn bounded<T>(
        &self, limit: Duration, work: impl Future<Output = Result<T, McpError>>,
    ) -> Result<T, McpError> {
        tokio::time::timeout(limit, work)
            .await
            .unwrap_or(Err(McpError::Timeout(limit)))
    }

    /// `initialize`, then `notifications/initialized`: the handshake every exchange starts with.
    async fn open<'a>(&'a self, server: &'a McpServer) -> Result<Session<'a>, McpError> {
        let url =
            Url::parse(server.url.trim()).map_err(|e| McpError::BadUrl(server.url.clone(), e))?;
        self.policy
            .check_url(&url)
            .map_err(|refusal| McpError::Refused {
                url: url.to_string(),
                refusal,
            })?;
        let mut session = Session {
            mcp: self,
            url,
            secret: server.secret.as_deref(),
            id: None,
            version: None,
            next_id: 0,
        };
        let init = session
            .request(
                "initialize",
                json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "longrun", "version": env!("CARGO_PKG_VERSION")},
                }),
            )
            .await?;
        let version = init
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| McpError::Garbage("initialize without a protocolVersion".into()))?;
        session.version = Some(version.to_string());
        session.notify("notifications/initialized").await?;
        Ok(session)
    }
}

/// One initialized conversation with a server.
struct Session<'a> {
    mcp: &'a HttpMcpClient,
    url: Url,
    secret: Option<&'a str>,
    /// `Mcp-Session-Id`, when the server keeps sessions.
    id: Option<String>,
    /// The negotiated protocol version, sent on every request after `initialize`.
    version: Option<String>,
    next_id: u64,
}

impl Session<'_> {
    async fn send(&self, body: &Value) -> Result<reqwest::Response, McpError> {
        let mut req = self
            .mcp
            .client
            .post(self.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .body(body.to_string());
        if let Some(secret) = self.secret {
            req = req.bearer_auth(secret);
        }
        if let Some(id) = &self.id {
            req = req.header(SESSION_HEADER, id);
        }
        if let Some(v) = &self.version {
            req = req.header(VERSION_HEADER, v);
        }
        req.send().await.map_err(|e| match refusal_in(&e) {
            Some(refusal) => McpError::Refused {
                url: self.url.to_string(),
                refusal,
            },
            None if e.is_timeout() => McpError::Timeout(self.mcp.settings.timeout),
            None => McpError::Http(longrun_transport::describe(&e)),
        })
    }

    /// Ends a server-kept session (DELETE with its id) so servers do not pile up sessions we
    /// never reuse; a server that refuses is left to expire it.
    async fn close(&self) {
        let Some(id) = &self.id else { return };
        let mut req = self
            .mcp
            .client
            .delete(self.url.clone())
            .header(SESSION_HEADER, id);
        if let Some(secret) = self.secret {
            req = req.bearer_auth(secret);
        }
        if let Some(v) = &self.version {
            req = req.header(VERSION_HEADER, v);
        }
        let _ = req.send().await;
    }

    async fn notify(&self, method: &str) -> Result<(), McpError> {
        let resp = self
            .send(&json!({"jsonrpc": "2.0", "method": method}))
            .await?;
        let status = resp.status();
        if !status.is_success() {
            return Err(McpError::Status {
                status: status.as_u16(),
                body: String::new(),
            });
        }
        Ok(())
    }

    /// One JSON-RPC request; its `result`, or the server's error as [`McpError::Rpc`].
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, McpError> {
        self.next_id += 1;
        let id = self.next_id;
        let resp = self
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        let status = resp.status();
        if let Some(sid) = resp
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            self.id = Some(sid.to_string());
        }
        let event_stream = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.to_ascii_lowercase().starts_with("text/event-stream"));
        let limit = self.mcp.settings.max_response_bytes;
        let (bytes, truncated) = read_limited(resp, limit)
            .await
            .map_err(|e| McpError::Http(longrun_transport::describe(&e)))?;
        let text = String::from_utf8_lossy(&bytes);
        if !status.is_success() {
            return Err(McpError::Status {
                status: status.as_u16(),
                body: longrun_domain::clip(&text, 300),
            });
        }
        if truncated {
            return Err(McpError::TooLarge(limit));
        }
        let message = if event_stream {
            sse_messages(&text)
                .into_iter()
                .find(|m| m.get("id") == Some(&json!(id)))
        } else {
            serde_json::from_str::<Value>(&text).ok()
        }
        .ok_or_else(|| {
            McpError::Garbage(format!(
                "no JSON-RPC answer to {method}: {}",
                longrun_domain::clip(&text, 200)
            ))
        })?;
        rpc_result(message)
    }
}

/// The JSON messages of an event stream's `data:` fields, one per event.
fn sse_messages(text: &str) -> Vec<Value> {
    let mut out = vec![];
    let mut data = String::new();
    for line in text.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if let Ok(v) = serde_json::from_str::<Value>(&data) {
                out.push(v);
            }
            data.clear();
        } else if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        }
    }
    out
}

fn rpc_result(message: Value) -> Result<Value, McpError> {
    if let Some(err) = message.get("error") {
        return Err(McpError::Rpc {
            code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: longrun_domain::clip(
                err.get("message").and_then(Value::as_str).unwrap_or(""),
                300,
            ),
        });
    }
    match message.get("result") {
        Some(r) if r.is_object() => Ok(r.clone()),
        _ => Err(McpError::Garbage(
            "a JSON-RPC answer without a result".into(),
        )),
    }
}

fn tool_spec(t: &Value) -> Result<McpToolSpec, McpError> {
    let name = t
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::Garbage("a listed tool without a name".into()))?;
    Ok(McpToolSpec {
        name: name.to_string(),
        description: t
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        input_schema: t
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"})),
        read_only: t
            .pointer("/annotations/readOnlyHint")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

fn call_result(result: &Value) -> Result<McpCallResult, McpError> {
    let content = result.get("content").and_then(Value::as_array);
    let structured = result.get("structuredContent");
    if content.is_none() && structured.is_none() {
        return Err(McpError::Garbage(
            "tools/call without content or structuredContent".into(),
        ));
    }
    let parts: Vec<String> = content
        .into_iter()
        .flatten()
        .map(|item| match item.get("type").and_then(Value::as_str) {
            Some("text") => item
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            Some(kind) => format!("({kind} content, not shown)"),
            None => "(untyped content, not shown)".to_string(),
        })
        .collect();
    let text = match structured {
        Some(s) if parts.iter().all(|p| p.trim().is_empty()) => s.to_string(),
        _ => parts.join("\n"),
    };
    Ok(McpCallResult {
        text,
        is_error: result.get("isError").and_then(Value::as_bool) == Some(true),
    })
}

/// A server name is the namespace; a tool name must survive being a model's tool name.
fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[async_trait]
impl McpConnector for HttpMcpClient {
    async fn list(&self, server: &McpServer) -> Result<Vec<McpToolSpec>, String> {
        self.list_tools(server).await.map_err(|e| e.to_string())
    }

    fn build(&self, server: &McpServer, spec: &McpToolSpec) -> Result<Arc<dyn Tool>, String> {
        if !valid_tool_name(&spec.name) {
            return Err(format!(
                "tool name `{}` is not [A-Za-z0-9_-]{{1,64}}",
                spec.name
            ));
        }
        if spec.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(format!("tool `{}` has no object inputSchema", spec.name));
        }
        Ok(Arc::new(McpTool {
            name: format!("{}.{}", server.name, spec.name),
            description: format!(
                "{} (MCP server `{}`{})",
                longrun_domain::clip(spec.description.trim(), 1_000),
                server.name,
                if spec.read_only { ", read-only" } else { "" }
            ),
            server: server.clone(),
            spec: spec.clone(),
            mcp: self.clone(),
        }))
    }
}

/// One tool of one MCP server, as a run sees it.
pub struct McpTool {
    name: String,
    description: String,
    server: McpServer,
    spec: McpToolSpec,
    mcp: HttpMcpClient,
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn schema(&self) -> Value {
        self.spec.input_schema.clone()
    }

    fn writes(&self) -> bool {
        !self.spec.read_only
    }

    async fn call(&self, _ctx: &dyn ToolContext, args: Value) -> Result<Value, String> {
        let name = &self.name;
        let out = self
            .mcp
            .call_tool(&self.server, &self.spec.name, &args)
            .await
            .map_err(|e| format!("{name}: {e}"))?;
        let max = self.mcp.settings.max_chars;
        let truncated = out.text.chars().count() > max;
        let text = longrun_domain::clip(&out.text, max);
        let fenced = fence(&format!("result of MCP tool {name}"), &text);
        if out.is_error {
            return Err(format!("{name} reported an error: {fenced}"));
        }
        Ok(json!({"tool": name, "content": fenced, "truncated": truncated}))
    }

    fn sources(&self, _args: &Value, _result: &Value) -> Vec<String> {
        vec![format!("tool:{}", self.name)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FetchPolicy;

    #[test]
    fn an_event_stream_yields_each_events_json_and_skips_the_rest() {
        let text = "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\n\
                    data: \"result\":{}}\n\n: keep-alive\n\ndata: not json\n\ndata: {\"id\":2}";
        let msgs = sse_messages(text);
        assert_eq!(
            msgs,
            vec![
                json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
                json!({"id": 2})
            ]
        );
    }

    #[test]
    fn a_call_result_keeps_text_names_other_content_and_flags_errors() {
        let r = call_result(&json!({"content": [{"type": "text", "text": "green"},
            {"type": "image", "data": "…"}], "isError": true}))
        .unwrap();
        assert_eq!(r.text, "green\n(image content, not shown)");
        assert!(r.is_error);
        let s = call_result(&json!({"content": [], "structuredContent": {"t": 70}})).unwrap();
        assert_eq!(s.text, "{\"t\":70}");
        assert!(call_result(&json!({"answer": 42})).is_err());
    }

    #[test]
    fn a_json_rpc_error_or_a_missing_result_is_an_error() {
        let e = rpc_result(json!({"id": 1, "error": {"code": -32602, "message": "bad"}}));
        assert!(matches!(e, Err(McpError::Rpc { code: -32602, .. })));
        assert!(matches!(
            rpc_result(json!({"id": 1})),
            Err(McpError::Garbage(_))
        ));
    }

    #[tokio::test]
    async fn a_server_at_the_metadata_address_is_refused_before_any_request() {
        let mcp = HttpMcpClient::new(
            FetchPolicy::default(),
            Arc::new(crate::SystemLookup),
            McpSettings::default(),
        )
        .unwrap();
        let server = McpServer {
            name: "meta".into(),
            url: "http://169.254.169.254/mcp".into(),
            secret: None,
            created_at: 0,
        };

        let listed = mcp.list_tools(&server).await;
        let called = mcp.call_tool(&server, "x", &json!({})).await;

        assert!(
            matches!(listed, Err(McpError::Refused { .. })),
            "{listed:?}"
        );
        assert!(
            matches!(called, Err(McpError::Refused { .. })),
            "{called:?}"
        );
    }

    #[test]
    fn a_tool_is_read_only_only_when_the_server_says_so() {
        let ro = tool_spec(&json!({"name": "a", "annotations": {"readOnlyHint": true}})).unwrap();
        let rw = tool_spec(&json!({"name": "b", "inputSchema": {"type": "object"}})).unwrap();
        assert!(ro.read_only && !rw.read_only);
        assert_eq!(ro.input_schema, json!({"type": "object"}));
    }
}
