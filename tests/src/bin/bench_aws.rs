//! `make bench-aws`: AWS calls and capacity units per iteration on the emulator, priced at
//! us-east-1 list prices; replaces the serverless section of BENCHMARKS.md.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::sync::Arc;

use longrun_aws::CallCounter;
use longrun_domain::run::BudgetsInput;
use longrun_http::{CreateRun, create_run};
use longrun_ports::NoFaults;
use longrun_tests::aws::stack_with;

pub const SECTION: &str = "## Serverless (AWS) cost per iteration";

/// One planner call and one doc write per iteration, never finishing: the budget stops it.
const SCRIPT: &str = r#"{"planner": [{"content": {"status": {"exit_signal": false, "needs_user_input": false,
  "progress_summary": "wrote notes/{{iteration}}.md", "remaining_work": ["more"]},
  "tool_calls": [{"name": "doc_write", "args": {"path": "notes/{{iteration}}.md", "content": "note {{iteration}}: the quick brown fox jumps over the lazy dog"}}]},
  "usage": {"input_tokens": 1000, "output_tokens": 200}}]}"#;

const ITERATIONS: u32 = 50;
// us-east-1 list prices (USD), on-demand.
const DDB_PER_MILLION_WRU: f64 = 0.625;
const DDB_PER_MILLION_RRU: f64 = 0.125;
const SQS_FIFO_PER_MILLION: f64 = 0.50;
const SNS_PER_MILLION: f64 = 0.50;

#[tokio::main]
async fn main() {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "BENCHMARKS.md".into());
    let counter = CallCounter::default();
    let s = stack_with(SCRIPT, Arc::new(NoFaults), 30_000, Some(counter.clone())).await;
    let req = CreateRun {
        agent: None,
        objective: "benchmark".into(),
        completion_criteria: vec![],
        grading: None,
        budgets: BudgetsInput {
            max_iterations: Some(ITERATIONS as i64),
            ..Default::default()
        },
        thresholds: None,
        permission_mode: None,
        models: vec![],
        model: None,
        allowed_tools: None,
        context: None,
        scope: None,
        project_ids: None,
    };
    let run = create_run(s.p(), "bench", req).await.unwrap();
    let run = s.drive(&run.id, 2_000).await;
    assert_eq!(run.iteration, ITERATIONS, "{:?}", run.stopping_reason);
    let t = counter.snapshot();
    let run_bytes = serde_json::to_string(&run).unwrap().len();
    let n = f64::from(ITERATIONS);

    let per = |k: &str| *t.calls.get(k).unwrap_or(&0) as f64 / n;
    let group = |prefix: &str| -> f64 {
        t.calls
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(_, v)| *v as f64)
            .sum::<f64>()
            / n
    };
    let sqs = group("sqs:");
    let sns = group("sns:");
    let wru = t.write_units as f64 / n;
    let rru = t.read_units as f64 / n;
    let cost_ddb_w = wru * 1_000.0 * DDB_PER_MILLION_WRU / 1e6;
    let cost_ddb_r = rru * 1_000.0 * DDB_PER_MILLION_RRU / 1e6;
    let cost_sqs = sqs * 1_000.0 * SQS_FIFO_PER_MILLION / 1e6;
    let cost_sns = sns * 1_000.0 * SNS_PER_MILLION / 1e6;
    let total = cost_ddb_w + cost_ddb_r + cost_sqs + cost_sns;
    let send = per("sqs:SendMessage");
    let issue_total = total - cost_sqs + send * 1_000.0 * SQS_FIFO_PER_MILLION / 1e6;

    let mut rows = String::new();
    for (op, count) in &t.calls {
        rows += &format!("| `{op}` | {count} | {:.2} |\n", *count as f64 / n);
    }
    let section = format!(
        "{SECTION}\n\n\
         Reproduce with `make bench-aws` (= `scripts/with-moto cargo run -p longrun-tests --bin bench_aws -- BENCHMARKS.md`;\n\
         counts do not depend on the build profile, so it reuses the test build).\n\
         One run of {ITERATIONS} iterations through the real adapters on the moto emulator: the API creates it,\n\
         the worker handler takes each SQS message (one planner call and one doc write per iteration), the\n\
         outcome goes to SNS. A counting interceptor on every SDK client, the stand-in for Lambda's SQS\n\
         poller included, records each request. DynamoDB capacity units are modelled from the requests\n\
         (`shared/aws/src/capacity.rs`): item sizes by DynamoDB's rules (names plus values, binaries by\n\
         their raw bytes); a write costs 1 WRU per started KB of the larger of the old and new item, 2\n\
         inside a transaction, plus the writes of each index whose entry changes (a moved index key is a\n\
         delete and a put; index writes are not doubled by transactions); a consistent read 1 RRU per\n\
         started 4 KB of response. The run's JSON at the end (its report included): {run_bytes} bytes.\n\n\
         | request | total | per iteration |\n|---|---|---|\n{rows}\n\
         Per iteration: {:.2} DynamoDB transactions (the commit), {:.2} single-item puts (the claim with\n\
         the spend of the one model call), {:.2} reads (the run and the scratchpad for the prompt; the\n\
         `doc_write` tool's own read of the doc it replaces), {:.2} SQS requests (send, and Lambda's\n\
         poller's receive and delete), {:.2} SNS publishes.\n\n\
         | cost per 1,000 iterations (us-east-1 list prices) | arithmetic | USD |\n|---|---|---|\n\
         | DynamoDB writes | {wru:.1} WRU × 1,000 × $0.625/M | {cost_ddb_w:.5} |\n\
         | DynamoDB reads | {rru:.1} RRU × 1,000 × $0.125/M | {cost_ddb_r:.5} |\n\
         | SQS FIFO | {sqs:.2} requests × 1,000 × $0.50/M | {cost_sqs:.5} |\n\
         | SNS | {sns:.2} publishes × 1,000 × $0.50/M | {cost_sns:.5} |\n\
         | **orchestration total** | | **{total:.5}** |\n\n\
         Target (issue): ≤ 1 SQS send, ≤ 2 reads, 1 transaction + at most 1 metrics write per LLM call,\n\
         ≤ $0.006 per 1,000 iterations. Counted the issue's way, the SQS send alone ({send:.2} per iteration):\n\
         **{issue_total:.5}** USD per 1,000 iterations. Lambda's poller makes the receive and the delete;\n\
         with one run they carry one message each (the table above); with many runs in flight one\n\
         receive can carry up to 10 messages and deletes can be batched, which would bring them toward\n\
         0.2 requests per iteration (not measured here). {:.1} items per iteration in transactions: the commit writes the run item, the\n\
         iteration's log item (record, scratchpad entry and the events of the claim, spend and commit,\n\
         deflated together) and the doc, each under 1 KB, so 2 WRU each; the claim and spend is one\n\
         conditional put of the run item (1 WRU), its events kept in the item until the commit.\n",
        per("dynamodb:TransactWriteItems"),
        per("dynamodb:PutItem"),
        per("dynamodb:GetItem") + per("dynamodb:Query"),
        sqs,
        sns,
        t.transact_items as f64 / n,
    );
    longrun_tests::replace_section(&out, SECTION, &section);
    println!("{section}");
}
