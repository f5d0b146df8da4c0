//! `make bench-llm`: what the OpenAI-compatible client adds to a model call (building the
//! request, serializing it, parsing the answer and its usage) against the model server's own
//! latency, on the real SmolLM2 model that `scripts/with-llm` serves. Updates BENCHMARKS.md.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use longrun_domain::planner::planner_schema;
use longrun_domain::run::{Budgets, Run, Thresholds};
use longrun_engine::prompt::planner_messages;
use longrun_llm::OpenAiClient;
use longrun_llm::openai::{content_of, usage_from};
use longrun_ports::{ChatRequest, LlmClient, LlmRole};

const SECTION: &str = "## Model client overhead";
const CALLS: usize = 7;
const PARSES: u32 = 2_000;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[xs.len() / 2]
}

#[tokio::main]
async fn main() {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "BENCHMARKS.md".into());
    let base = std::env::var("LONGRUN_TEST_LLM_URL")
        .expect("run through scripts/with-llm (make bench-llm): LONGRUN_TEST_LLM_URL is not set");
    let model = std::env::var("LONGRUN_TEST_LLM_MODEL").unwrap_or_else(|_| "smollm2".into());
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .unwrap();
    let client = OpenAiClient::new(http.clone(), &base, None, &model);
    let run = Run::new(
        "run_bench",
        "alice",
        "Write a three-line note about green tea to notes/tea.md.",
        &format!("openai:{model}"),
        Budgets::default(),
        Thresholds::default(),
        0,
    );
    let req = ChatRequest {
        run_id: run.id.clone(),
        iteration: 1,
        role: LlmRole::Planner,
        model: run.model.clone(),
        messages: planner_messages(
            &run,
            1,
            &[],
            "doc_write {path, content, title?}: write a doc",
            None,
        ),
        json_schema: Some(planner_schema()),
        max_output_tokens: Some(128),
        idempotency_key: "run_bench#1#1".into(),
        role_call: 1,
        attempt: 0,
        rotation: vec![],
        deadline_ms: None,
    };
    let body = serde_json::to_vec(&client.body(&req)).unwrap();

    // The server alone: the same bytes posted raw, the answer read and not parsed.
    let mut server_ms = vec![];
    let mut raw = String::new();
    for _ in 0..CALLS {
        let t = Instant::now();
        raw = http
            .post(format!("{base}/chat/completions"))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        server_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // Through the client, end to end.
    let mut client_ms = vec![];
    for _ in 0..CALLS {
        let t = Instant::now();
        client.chat(&req).await.unwrap();
        client_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // The client's own work, isolated: build + serialize the request, parse a real answer.
    let t = Instant::now();
    let mut sink = 0usize;
    for _ in 0..PARSES {
        let bytes = serde_json::to_vec(&client.body(&req)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
        sink += bytes.len() + content_of(&v).unwrap().len() + usage_from(&v).input_tokens as usize;
    }
    let overhead_us = t.elapsed().as_secs_f64() * 1e6 / f64::from(PARSES);
    assert!(sink > 0);
    let server = median(server_ms);
    let client_e2e = median(client_ms);
    let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
    let usage = usage_from(&v);

    let section = format!(
        "{SECTION}\n\n\
         Reproduce with `make bench-llm` (= `scripts/with-llm cargo run --release -p longrun-tests --bin bench_llm -- BENCHMARKS.md`).\n\
         A real planner call (system prompt with the contract, the planner JSON schema as a forced `answer`\n\
         function, max 128 output tokens) to SmolLM2-135M-Instruct (Q4_1) on llama-cpp-python 0.3.36, 2 threads,\n\
         on this 2-core machine; the request is {} bytes, a typical answer used {} prompt + {} completion tokens.\n\n\
         | | per call |\n|---|---|\n\
         | model server (same bytes posted raw, answer not parsed; median of {CALLS}) | {server:.0} ms |\n\
         | through `OpenAiClient::chat`, end to end (median of {CALLS}) | {client_e2e:.0} ms |\n\
         | client work alone: build + serialize the request, parse answer and usage (mean of {PARSES}) | {overhead_us:.0} µs |\n\
         | client work as a share of the server's latency | {:.3} % |\n\n\
         The end-to-end figures differ by the model's own variance (its answers differ call to call); the\n\
         client's share is measured directly, not as their difference.\n",
        body.len(),
        usage.input_tokens + usage.cache_read_tokens,
        usage.output_tokens,
        overhead_us / 1e3 / server * 100.0,
    );
    longrun_tests::replace_section(&out, SECTION, &section);
    println!("{section}");
}
