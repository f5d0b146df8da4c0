//! `make bench-llm` (second part): what prompt caching saves over a 30-iteration run. The
//! real engine runs against canned Anthropic-, Bedrock- and OpenAI-shaped servers that bill the
//! way the providers document it: Anthropic (and Bedrock Converse) reads from cache a prefix
//! ending at a `cache_control` mark (a `cachePoint` block) that was seen before (writes it the
//! first time); OpenAI reads the longest prefix it has seen before, in 128-token steps; all
//! only from 1,024 tokens on. Each provider runs
//! twice: the prompt as it is sent today, and as it was before (one state message holding the
//! objective, no marks). Tokens are estimated at 4 characters each. Updates BENCHMARKS.md.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use aws_config::{BehaviorVersion, Region};
use aws_sdk_bedrockruntime::config::{Credentials, SharedCredentialsProvider};
use axum::Json;
use axum::extract::State;
use axum::routing::post;
use longrun_aws::bedrock::{self, BedrockClient};
use longrun_domain::run::BudgetsInput;
use longrun_http::create_run;
use longrun_llm::{AnthropicClient, OpenAiClient, Secret};
use longrun_ports::ChatMessage;
use longrun_ports::NoFaults;
use longrun_ports::{ChatRequest, ChatResponse, LlmClient, LlmError};
use longrun_tests::{platform_with_llm, replace_section, run_request};
use serde_json::{Value, json};

const SECTION: &str = "## Prompt caching";
const ITERATIONS: u32 = 30;
const MIN_CACHED: u64 = 1_024;

fn tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// What the canned server billed, per call.
#[derive(Default)]
struct Ledger {
    seen: HashSet<String>,
    earlier: Vec<String>,
    calls: Vec<Billed>,
}

#[derive(Clone, Copy, Default)]
struct Billed {
    input: u64,
    cache_read: u64,
    cache_write: u64,
    output: u64,
}

type Shared = Arc<Mutex<Ledger>>;

/// Never done: writes a note every iteration, so the run lasts its 30 iterations.
fn answer(n: usize) -> Value {
    json!({
        "status": {"exit_signal": false, "needs_user_input": false,
                   "progress_summary": format!("wrote note {n}"), "remaining_work": ["more notes"]},
        "plan_updates": [{"id": "s1", "title": "Write the notes", "status": "in_progress"}],
        "tool_calls": [{"name": "doc_write", "args": {"path": format!("notes/{n}.md"),
            "title": format!("Note {n}"), "content": format!("Note {n}: {}", "tea ".repeat(40))}}],
    })
}

/// Anthropic: the prompt as blocks in cache order (tools, system, messages); a marked block
/// ends a prefix that is read if seen before and written otherwise.
async fn anthropic(State(ledger): State<Shared>, Json(body): Json<Value>) -> Json<Value> {
    let mut blocks: Vec<(String, bool)> = vec![(body["tools"].to_string(), false)];
    let mut push = |content: &Value| match content {
        Value::String(s) => blocks.push((s.clone(), false)),
        Value::Array(items) => {
            for b in items {
                let text = b["text"].as_str().unwrap_or_default().to_string();
                blocks.push((text, b.get("cache_control").is_some()));
            }
        }
        _ => {}
    };
    push(&body["system"]);
    for m in body["messages"].as_array().unwrap() {
        push(&m["content"]);
    }
    let (n, out, b) = bill_marked(&ledger, &blocks);
    Json(json!({
        "id": format!("msg_{n}"), "type": "message", "role": "assistant", "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": format!("toolu_{n}"), "name": "answer", "input": out}],
        "usage": {"input_tokens": b.input, "output_tokens": b.output,
                  "cache_read_input_tokens": b.cache_read, "cache_creation_input_tokens": b.cache_write},
    }))
}

/// Bedrock Converse: the same billing as Anthropic, a `cachePoint` block marking the end of
/// the block before it (tools, then system, then the messages' content).
async fn converse(State(ledger): State<Shared>, Json(body): Json<Value>) -> Json<Value> {
    let mut blocks: Vec<(String, bool)> = vec![(body["toolConfig"].to_string(), false)];
    let mut push = |content: &Value| {
        for b in content.as_array().into_iter().flatten() {
            if b.get("cachePoint").is_some() {
                if let Some(last) = blocks.last_mut() {
                    last.1 = true;
                }
            } else {
                blocks.push((b["text"].as_str().unwrap_or_default().to_string(), false));
            }
        }
    };
    push(&body["system"]);
    for m in body["messages"].as_array().unwrap() {
        push(&m["content"]);
    }
    let (n, out, b) = bill_marked(&ledger, &blocks);
    Json(json!({
        "output": {"message": {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": format!("tooluse_{n}"), "name": "answer", "input": out}}]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": b.input, "outputTokens": b.output,
                  "totalTokens": b.input + b.cache_read + b.cache_write + b.output,
                  "cacheReadInputTokens": b.cache_read, "cacheWriteInputTokens": b.cache_write},
        "metrics": {"latencyMs": 1},
    }))
}

/// Bills a prompt of blocks in cache order, some marked as ends of cacheable prefixes: the
/// longest marked prefix seen before is read, what follows up to the last mark is written.
fn bill_marked(ledger: &Shared, blocks: &[(String, bool)]) -> (usize, Value, Billed) {
    let total: u64 = blocks.iter().map(|(t, _)| tokens(t.len())).sum();
    let mut l = ledger.lock().unwrap();
    let mut prefix = String::new();
    let (mut read, mut write) = (0, 0);
    for (text, marked) in blocks {
        prefix.push_str(text);
        let size = tokens(prefix.len());
        if !*marked || size < MIN_CACHED {
            continue;
        }
        if l.seen.contains(&prefix) {
            read = size;
            write = 0;
        } else {
            write = size - read;
            l.seen.insert(prefix.clone());
        }
    }
    let n = l.calls.len() + 1;
    let out = answer(n);
    let billed = Billed {
        input: total - read - write,
        cache_read: read,
        cache_write: write,
        output: tokens(out.to_string().len()),
    };
    l.calls.push(billed);
    (n, out, billed)
}

/// OpenAI: the longest prefix of this prompt seen in an earlier one, in 128-token steps.
async fn openai(State(ledger): State<Shared>, Json(body): Json<Value>) -> Json<Value> {
    let mut prompt = body["tools"].to_string();
    for m in body["messages"].as_array().unwrap() {
        prompt.push_str(m["content"].as_str().unwrap_or_default());
    }
    let total = tokens(prompt.len());
    let mut l = ledger.lock().unwrap();
    let common = l
        .earlier
        .iter()
        .map(|e| {
            e.bytes()
                .zip(prompt.bytes())
                .take_while(|(a, b)| a == b)
                .count()
        })
        .max()
        .unwrap_or(0);
    let common = tokens(common).saturating_sub(1);
    let cached = if common >= MIN_CACHED {
        common / 128 * 128
    } else {
        0
    };
    l.earlier.push(prompt);
    let n = l.calls.len() + 1;
    let out = answer(n).to_string();
    let output = tokens(out.len());
    l.calls.push(Billed {
        input: total - cached,
        cache_read: cached,
        cache_write: 0,
        output,
    });
    Json(json!({
        "id": format!("c{n}"), "object": "chat.completion", "model": "gpt-4.1",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": format!("call_{n}"), "type": "function",
                            "function": {"name": "answer", "arguments": out}}]}}],
        "usage": {"prompt_tokens": total, "completion_tokens": output, "total_tokens": total + output,
                  "prompt_tokens_details": {"cached_tokens": cached}},
    }))
}

/// The prompt as it was sent before caching: the objective inside the one state message,
/// nothing marked.
struct AsBefore(Arc<dyn LlmClient>);

#[async_trait]
impl LlmClient for AsBefore {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut req = req.clone();
        let mut messages: Vec<ChatMessage> = vec![];
        let mut objective: Option<Value> = None;
        for m in &req.messages {
            let parsed: Option<Value> = serde_json::from_str(&m.content).ok();
            match parsed {
                Some(Value::Object(o))
                    if m.role == "user" && o.len() == 1 && o.contains_key("objective") =>
                {
                    objective = o.get("objective").cloned();
                }
                Some(Value::Object(mut o)) if m.role == "user" && objective.is_some() => {
                    o.insert("objective".into(), objective.take().unwrap_or_default());
                    messages.push(ChatMessage::user(Value::Object(o).to_string()));
                }
                _ => messages.push(ChatMessage {
                    cache: false,
                    ..m.clone()
                }),
            }
        }
        req.messages = messages;
        self.0.chat(&req).await
    }
}

struct Row {
    provider: &'static str,
    layout: &'static str,
    calls: usize,
    input_per_iteration: f64,
    read_share: f64,
    cost: f64,
}

/// List prices per 1M tokens: (input, cache read, cache write, output).
const SONNET: (f64, f64, f64, f64) = (3.0, 0.30, 3.75, 15.0);
const GPT_41: (f64, f64, f64, f64) = (2.0, 0.50, 2.0, 8.0);

async fn measure(
    provider: &'static str, layout: &'static str, client: Arc<dyn LlmClient>, ledger: &Shared,
    prices: (f64, f64, f64, f64),
) -> Row {
    ledger.lock().unwrap().calls.clear();
    let t = platform_with_llm(client, Arc::new(NoFaults), &[], 5, |_| {});
    let req = run_request(
        &"Keep a set of notes on green tea: varieties, brewing, history. ".repeat(4),
        BudgetsInput {
            max_iterations: Some(i64::from(ITERATIONS)),
            ..Default::default()
        },
    );
    let id = create_run(t.p(), "alice", req).await.unwrap().id;
    let run = t.drive(&id, 2_000).await;
    assert_eq!(run.iteration, ITERATIONS, "{:?}", run.stopping_reason);
    let calls = ledger.lock().unwrap().calls.clone();
    let later = &calls[1..];
    let prompt = |b: &Billed| b.input + b.cache_read + b.cache_write;
    let all_in: u64 = later.iter().map(prompt).sum();
    let read: u64 = later.iter().map(|b| b.cache_read).sum();
    let (pi, pr, pw, po) = prices;
    let cost: f64 = calls
        .iter()
        .map(|b| {
            (b.input as f64 * pi
                + b.cache_read as f64 * pr
                + b.cache_write as f64 * pw
                + b.output as f64 * po)
                / 1e6
        })
        .sum();
    Row {
        provider,
        layout,
        calls: calls.len(),
        input_per_iteration: calls.iter().map(prompt).sum::<u64>() as f64 / f64::from(ITERATIONS),
        read_share: read as f64 / all_in as f64,
        cost,
    }
}

#[tokio::main]
async fn main() {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "BENCHMARKS.md".into());
    let ledger: Shared = Arc::default();
    let app = axum::Router::new()
        .route("/v1/messages", post(anthropic))
        .route("/v1/chat/completions", post(openai))
        .route("/model/{model}/converse", post(converse))
        .with_state(ledger.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let claude: Arc<dyn LlmClient> = Arc::new(AnthropicClient::new(
        http.clone(),
        &base,
        Some(Secret::new("sk-ant-bench")),
        "claude-sonnet-4-5",
    ));
    let aws = aws_config::defaults(BehaviorVersion::latest())
        .http_client(longrun_aws::https_client())
        .region(Region::new("us-east-1"))
        .endpoint_url(&base)
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            "AKIDBENCH",
            "bench-secret",
            None,
            None,
            "bench",
        )))
        .load()
        .await;
    let converse: Arc<dyn LlmClient> = Arc::new(BedrockClient::new(
        bedrock::runtime_client(&aws, Duration::from_secs(30)),
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
    ));
    let gpt: Arc<dyn LlmClient> = Arc::new(OpenAiClient::new(
        http,
        &format!("{base}/v1"),
        Some(Secret::new("sk-bench")),
        "gpt-4.1",
    ));
    let rows = vec![
        measure(
            "Anthropic",
            "before",
            Arc::new(AsBefore(claude.clone())),
            &ledger,
            SONNET,
        )
        .await,
        measure("Anthropic", "stable first, marked", claude, &ledger, SONNET).await,
        measure(
            "Bedrock (Claude)",
            "before",
            Arc::new(AsBefore(converse.clone())),
            &ledger,
            SONNET,
        )
        .await,
        measure(
            "Bedrock (Claude)",
            "stable first, cachePoint",
            converse,
            &ledger,
            SONNET,
        )
        .await,
        measure(
            "OpenAI",
            "before",
            Arc::new(AsBefore(gpt.clone())),
            &ledger,
            GPT_41,
        )
        .await,
        measure("OpenAI", "stable first", gpt, &ledger, GPT_41).await,
    ];
    let mut section = format!(
        "{SECTION}\n\nReproduce with `make bench-llm` (its second part: `cargo run -p longrun-tests --bin bench_cache -- BENCHMARKS.md`).\n\
         A {ITERATIONS}-iteration run of the real engine (planner only, one doc written an iteration) against canned\n\
         Anthropic-, Bedrock Converse- and OpenAI-shaped servers that bill as the providers document: Anthropic\n\
         (Bedrock) reads a prefix ending at a `cache_control` mark (`cachePoint` block) from cache when it saw it\n\
         before (and writes it the first time), OpenAI the longest prefix it saw before in 128-token steps; all\n\
         from 1,024 tokens on. The Bedrock client is the real one (AWS SDK, SigV4) through an endpoint override. Tokens are\n\
         estimated at 4 characters. \"before\" sends the prompt as it was: the objective inside the one state\n\
         message, nothing marked. Costs at list prices: Claude Sonnet 4.5 on Anthropic and on Bedrock ($3 in,\n\
         $0.30 cache read, $3.75 cache write, $15 out per 1M), GPT-4.1 ($2 in, $0.50 cached, $8 out).\n\n\
         | provider | prompt | calls | prompt tokens / iteration | billed as cache reads (iteration 2 on) | model cost of the run |\n\
         |---|---|---|---|---|---|\n"
    );
    for r in &rows {
        section.push_str(&format!(
            "| {} | {} | {} | {:.0} | {:.0} % | ${:.4} |\n",
            r.provider,
            r.layout,
            r.calls,
            r.input_per_iteration,
            r.read_share * 100.0,
            r.cost
        ));
        println!(
            "{} {}: {:.0} tokens/iteration, {:.0} % cache reads, ${:.4}",
            r.provider,
            r.layout,
            r.input_per_iteration,
            r.read_share * 100.0,
            r.cost
        );
    }
    section.push_str(
        "\nTarget (issue): ≥ 60 % of input tokens billed as cache reads from iteration 2 on.\n",
    );
    replace_section(&out, SECTION, &section);
}
