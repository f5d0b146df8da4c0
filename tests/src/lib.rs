//! Shared helpers for the workspace integration tests.
#![allow(clippy::unwrap_used)]

pub mod aws;
pub mod journaled;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use longrun_domain::run::Run;
use longrun_domain::{Budgets, Thresholds};
use longrun_engine::EngineConfig;
use longrun_http::{AppConfig, Platform, Tokens};
use longrun_llm::{Backoff, ModelRouter, Script, ScriptedLlm};
use longrun_ports::{ChatRequest, ChatResponse, LlmClient, LlmError};
use longrun_ports::{Clock, FaultPoint, Faults, ManualClock, Store};
use longrun_service::WorkerConfig;
use longrun_wiring::{Embedded, Running};

pub const MODEL: &str = "script:test.json";

/// The name test webhook receivers are reached by: it resolves to loopback, and test
/// deployments trust it as a private host (nothing else on loopback is reachable).
pub const HOOKS_HOST: &str = "hooks.test";

pub fn hooks_lookup() -> Arc<dyn longrun_outbound::HostLookup> {
    Arc::new(longrun_outbound::StaticLookup(
        std::collections::HashMap::from([(
            HOOKS_HOST.to_string(),
            vec![std::net::IpAddr::from([127, 0, 0, 1])],
        )]),
    ))
}

/// Five working iterations (a doc, an executor task each), then a valid completion.
pub const NOTES_SCRIPT: &str = r#"{
  "planner": [
    {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "wrote notes/{{iteration}}.md", "remaining_work": ["more"]},
                 "tool_calls": [{"name": "doc_write", "args": {"path": "notes/{{iteration}}.md", "content": "note {{iteration}}"}}],
                 "executor_tasks": [{"title": "expand {{iteration}}", "instructions": "write exec/{{iteration}}.md", "tools": ["doc_write"]}]},
     "usage": {"input_tokens": 100, "output_tokens": 20}},
    {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "wrote notes/{{iteration}}.md", "remaining_work": ["more"]},
                 "tool_calls": [{"name": "doc_write", "args": {"path": "notes/{{iteration}}.md", "content": "note {{iteration}}"}}],
                 "executor_tasks": [{"title": "expand {{iteration}}", "instructions": "write exec/{{iteration}}.md", "tools": ["doc_write"]}]},
     "usage": {"input_tokens": 100, "output_tokens": 20}},
    {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "wrote notes/{{iteration}}.md", "remaining_work": ["more"]},
                 "tool_calls": [{"name": "doc_write", "args": {"path": "notes/{{iteration}}.md", "content": "note {{iteration}}"}}]},
     "usage": {"input_tokens": 100, "output_tokens": 20}},
    {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "wrote notes/{{iteration}}.md", "remaining_work": ["more"]},
                 "tool_calls": [{"name": "doc_write", "args": {"path": "notes/{{iteration}}.md", "content": "note {{iteration}}"}}]},
     "usage": {"input_tokens": 100, "output_tokens": 20}},
    {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "wrote notes/{{iteration}}.md", "remaining_work": ["more"]},
                 "tool_calls": [{"name": "doc_write", "args": {"path": "notes/{{iteration}}.md", "content": "note {{iteration}}"}}]},
     "usage": {"input_tokens": 100, "output_tokens": 20}},
    {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "done", "remaining_work": [], "completion_evidence": ["final.md"]},
                 "tool_calls": [{"name": "doc_write", "args": {"path": "final.md", "content": "final"}}]},
     "usage": {"input_tokens": 100, "output_tokens": 20}}
  ],
  "executor": [
    {"content": {"tool_calls": [{"name": "doc_write", "args": {"path": "exec/{{iteration}}.md", "content": "e"}}], "summary": "ok"},
     "usage": {"input_tokens": 50, "output_tokens": 10}}
  ]
}"#;

/// A `POST /v1/runs` body with these budgets, everything else the server's default.
pub fn run_request(
    objective: &str, budgets: longrun_domain::BudgetsInput,
) -> longrun_http::CreateRun {
    longrun_http::CreateRun {
        objective: objective.into(),
        completion_criteria: vec![],
        grading: None,
        budgets,
        thresholds: None,
        model: None,
        agent: None,
        models: vec![],
        permission_mode: None,
        allowed_tools: None,
        context: None,
        scope: None,
        project_ids: None,
    }
}

/// A run row as the API would create it.
pub fn new_run(id: &str, user: &str, created_at: i64) -> Run {
    Run::new(
        id,
        user,
        "objective",
        MODEL,
        Budgets::default(),
        Thresholds::default(),
        created_at,
    )
}

/// Wraps a model and counts what was actually answered, to check the books against.
pub struct CountingLlm {
    inner: Arc<dyn LlmClient>,
    pub calls: AtomicU64,
    pub tokens: AtomicU64,
    /// (run id, iteration, every message's text) of each planner call.
    pub planner_prompts: Mutex<Vec<(String, u32, String)>>,
    /// (run id, iteration, role) of each call answered.
    pub answered: Mutex<Vec<(String, u32, longrun_ports::LlmRole)>>,
}

impl CountingLlm {
    pub fn new(inner: Arc<dyn LlmClient>) -> Self {
        CountingLlm {
            inner,
            calls: AtomicU64::new(0),
            tokens: AtomicU64::new(0),
            planner_prompts: Mutex::new(vec![]),
            answered: Mutex::new(vec![]),
        }
    }

    /// How many calls of `role` were answered for `run_id`.
    pub fn answered(&self, run_id: &str, role: longrun_ports::LlmRole) -> usize {
        let answered = self.answered.lock().unwrap();
        answered
            .iter()
            .filter(|(r, _, k)| r == run_id && *k == role)
            .count()
    }

    /// The last planner prompt of iteration `n` of `run_id`.
    pub fn planner_prompt(&self, run_id: &str, n: u32) -> Option<String> {
        let prompts = self.planner_prompts.lock().unwrap();
        prompts
            .iter()
            .rev()
            .find(|(r, i, _)| r == run_id && *i == n)
            .map(|(_, _, p)| p.clone())
    }
}

#[async_trait]
impl LlmClient for CountingLlm {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if req.role == longrun_ports::LlmRole::Planner {
            let text: Vec<&str> = req.messages.iter().map(|m| m.content.as_str()).collect();
            self.planner_prompts.lock().unwrap().push((
                req.run_id.clone(),
                req.iteration,
                text.join("\n"),
            ));
        }
        let resp = self.inner.chat(req).await?;
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.answered
            .lock()
            .unwrap()
            .push((req.run_id.clone(), req.iteration, req.role));
        let u = &resp.usage;
        self.tokens.fetch_add(
            u.input_tokens + u.cache_read_tokens + u.cache_write_tokens + u.output_tokens,
            Ordering::SeqCst,
        );
        Ok(resp)
    }
}

/// A router serving one scripted model under `MODEL`.
pub fn scripted(script_json: &str) -> Arc<dyn LlmClient> {
    let script = Script::parse(script_json, "test.json").unwrap();
    Arc::new(
        ModelRouter::build(&[], &Default::default())
            .unwrap()
            .with_client(
                MODEL,
                Arc::new(ScriptedLlm::new("test.json", script)),
                Backoff::SIMULATED,
            ),
    )
}

/// Crashes once at `point` for each listed iteration.
pub struct CrashOnce {
    pub points: Vec<(FaultPoint, u32)>,
    fired: Mutex<HashSet<(FaultPoint, u32)>>,
}

impl CrashOnce {
    pub fn new(points: Vec<(FaultPoint, u32)>) -> Self {
        CrashOnce {
            points,
            fired: Mutex::default(),
        }
    }

    pub fn fired(&self) -> usize {
        self.fired.lock().unwrap().len()
    }
}

impl Faults for CrashOnce {
    fn crash_at(&self, point: FaultPoint, _run: &str, iteration: u32) -> bool {
        self.points.contains(&(point, iteration))
            && self.fired.lock().unwrap().insert((point, iteration))
    }
}

pub struct TestPlatform {
    pub running: Running,
    pub clock: Arc<ManualClock>,
    pub llm: Arc<CountingLlm>,
    pub dir: tempfile::TempDir,
}

impl TestPlatform {
    pub fn p(&self) -> &Platform {
        &self.running.platform
    }

    /// One request through the API router as the holder of `token`: status, content type and
    /// the JSON body (null when there is none).
    pub async fn api(
        &self, token: &str, method: &str, path: &str, body: Option<serde_json::Value>,
    ) -> (axum::http::StatusCode, String, serde_json::Value) {
        use http_body_util::BodyExt;
        use tower::ServiceExt;
        let mut req = axum::http::Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {token}"));
        let body = match body {
            Some(b) => {
                req = req.header("content-type", "application/json");
                axum::body::Body::from(b.to_string())
            }
            None => axum::body::Body::empty(),
        };
        let resp = longrun_http::router(self.p().clone())
            .oneshot(req.body(body).unwrap())
            .await
            .unwrap();
        let status = resp.status();
        let content_type = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let json = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
        (status, content_type, json)
    }

    /// Drives the worker until the run settles; when nothing is visible the manual clock jumps
    /// past the lease and visibility timeouts, as time would pass after a crash.
    pub async fn drive(&self, run_id: &str, max_polls: usize) -> Run {
        for _ in 0..max_polls {
            let run = self.p().store.get_run(run_id).await.unwrap().unwrap();
            if (run.status.is_ended() || run.status.is_waiting()) && run.notified {
                return run;
            }
            let stats = self.running.worker.poll_once().await.unwrap();
            if stats.received == 0 {
                self.clock.advance(31_000);
            }
        }
        panic!("run {run_id} did not settle within {max_polls} polls");
    }
}

/// An embedded platform on a SQLite file with a manual clock, a scripted model and faults.
pub fn platform(
    script_json: &str, faults: Arc<dyn Faults>, tokens: &[(&str, &str)], active_limit: u32,
) -> TestPlatform {
    platform_with(script_json, faults, tokens, active_limit, |_| {})
}

/// [`platform`] with a last say over the configuration (fetch policy, resolver, …).
pub fn platform_with(
    script_json: &str, faults: Arc<dyn Faults>, tokens: &[(&str, &str)], active_limit: u32,
    configure: impl FnOnce(&mut AppConfig),
) -> TestPlatform {
    platform_with_llm(
        scripted(script_json),
        faults,
        tokens,
        active_limit,
        configure,
    )
}

/// [`platform_with`] over any model client.
pub fn platform_with_llm(
    model: Arc<dyn LlmClient>, faults: Arc<dyn Faults>, tokens: &[(&str, &str)], active_limit: u32,
    configure: impl FnOnce(&mut AppConfig),
) -> TestPlatform {
    let engine = EngineConfig {
        lease_ms: 30_000,
        ..Default::default()
    };
    platform_with_engine(model, faults, tokens, active_limit, configure, engine)
}

/// [`platform_with_llm`] with the engine's settings given.
pub fn platform_with_engine(
    model: Arc<dyn LlmClient>, faults: Arc<dyn Faults>, tokens: &[(&str, &str)], active_limit: u32,
    configure: impl FnOnce(&mut AppConfig), engine: EngineConfig,
) -> TestPlatform {
    let adapters = longrun_wiring::Adapters::default();
    platform_with_adapters(
        model,
        faults,
        tokens,
        active_limit,
        configure,
        engine,
        adapters,
    )
}

/// [`platform_with_engine`] with the adapters' settings given (a search provider, …).
pub fn platform_with_adapters(
    model: Arc<dyn LlmClient>, faults: Arc<dyn Faults>, tokens: &[(&str, &str)], active_limit: u32,
    configure: impl FnOnce(&mut AppConfig), engine: EngineConfig,
    adapters: longrun_wiring::Adapters,
) -> TestPlatform {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let llm = Arc::new(CountingLlm::new(model));
    let mut t = Tokens::default();
    for (token, user) in tokens {
        t.insert(token, user);
    }
    let mut config = AppConfig::new(t, vec![MODEL.to_string()]).unwrap();
    config.active_limit = active_limit;
    configure(&mut config);
    let running = longrun_wiring::embedded(
        Some(dir.path()),
        config,
        Embedded {
            llm: Some(llm.clone()),
            clock: clock.clone() as Arc<dyn Clock>,
            faults,
            engine,
            worker: WorkerConfig {
                visibility_ms: 30_000,
                ..Default::default()
            },
            outbox: Default::default(),
            agents: None,
            adapters,
        },
    )
    .unwrap();
    TestPlatform {
        running,
        clock,
        llm,
        dir,
    }
}

/// Asserts the run's event log is exactly seqs 1..=event_seq.
pub async fn assert_gapless(store: &dyn Store, run: &Run) {
    let events = store.events(&run.id, 0, 100_000).await.unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = (1..=run.event_seq).collect();
    assert_eq!(seqs, expected, "event log must be gapless");
}

/// Asserts iterations 1..=run.iteration are each committed exactly once.
pub async fn assert_iterations_once(store: &dyn Store, run: &Run) {
    let its = store.iterations(&run.id, 0, 100_000).await.unwrap();
    let ns: Vec<u32> = its.iter().map(|i| i.n).collect();
    assert_eq!(
        ns,
        (1..=run.iteration).collect::<Vec<_>>(),
        "each iteration committed once"
    );
    let events = store.events(&run.id, 0, 100_000).await.unwrap();
    let committed: Vec<u64> = events
        .iter()
        .filter(|e| e.kind == longrun_domain::EventKind::IterationCommitted)
        .map(|e| e.payload["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(committed, (1..=run.iteration as u64).collect::<Vec<_>>());
    assert_eq!(run.metrics.iterations, run.iteration);
}

/// Runs this bench binary again as `--scenario <args>` with `env`, in its own process so its
/// peak RSS is its own, and returns the JSON it prints.
pub fn bench_scenario(args: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .arg("--scenario")
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// This process's peak resident memory (VmHWM), in MB, for the benchmarks.
pub fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

pub fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// The line after which a section's hand-written notes start: `replace_section` keeps them
/// (what the generator writes goes above it).
pub const KEPT_NOTES: &str =
    "<!-- Notes below this line are kept when the section is regenerated. -->";

/// Replaces one `## heading` section of a markdown file (appending it when absent); the
/// sections around it belong to other benchmarks, and its notes below `KEPT_NOTES` stay.
pub fn replace_section(path: &str, heading: &str, section: &str) {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    std::fs::write(path, with_section(&old, heading, section)).unwrap();
}

fn with_section(old: &str, heading: &str, section: &str) -> String {
    let (before, notes, after) = match old.find(heading) {
        Some(i) => {
            let rest = &old[i + heading.len()..];
            let end = rest.find("\n## ").unwrap_or(rest.len());
            let notes = rest[..end].find(KEPT_NOTES).map_or(String::new(), |j| {
                format!("\n{}\n", rest[j..end].trim_end())
            });
            (&old[..i], notes, &rest[end..])
        }
        None => (old, String::new(), ""),
    };
    format!("{}\n\n{section}{notes}{after}", before.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regenerated_section_keeps_its_notes_and_the_sections_around_it() {
        // Arrange: a generated section with notes, between two others.
        let old = format!(
            "# Benchmarks\n\n## A\n\nold table\n\n{KEPT_NOTES}\nwhy it moved\n\n## B\n\nb table\n"
        );

        // Act
        let md = with_section(&old, "## A", "## A\n\nnew table\n");
        let again = with_section(&md, "## A", "## A\n\nnewer table\n");

        // Assert
        let expected = |table: &str| {
            format!(
                "# Benchmarks\n\n## A\n\n{table}\n\n{KEPT_NOTES}\nwhy it moved\n\n## B\n\nb table\n"
            )
        };
        assert_eq!(md, expected("new table"));
        assert_eq!(again, expected("newer table"));
    }

    #[test]
    fn a_section_without_notes_is_replaced_whole_and_a_new_one_appended() {
        // Arrange
        let old = "## A\n\nold\n\n## B\n\nb\n";

        // Act
        let replaced = with_section(old, "## A", "## A\n\nnew\n");
        let appended = with_section(old, "## C", "## C\n\nc\n");

        // Assert
        assert_eq!(replaced, "\n\n## A\n\nnew\n\n## B\n\nb\n");
        assert_eq!(appended, "## A\n\nold\n\n## B\n\nb\n\n## C\n\nc\n");
    }
}
