//! Agent runs on `longrun serve`: a run that names an agent has coding-agent processes as its
//! iterations (the scripted fake agent here), under the same loop, budgets, waits and cancel
//! as any run.
#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;

const TOKEN: &str = "lr_agent_runs_token";

struct Serve {
    child: Child,
    addr: String,
    client: reqwest::Client,
    projects: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `serve` with a runner config whose backends are fake-agent modes, e.g.
/// `("fake", "command", "done-after 2")`.
fn serve(backends: &[(&str, &str, &str)]) -> Serve {
    let dir = tempfile::tempdir().unwrap();
    let projects = dir.path().join("projects");
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-agent.sh");
    let mut text = format!(
        "projects_root = \"{}\"\nchild_poll_interval = 0.2\nstop_grace = 1\nusage_limit_wait = 1\n",
        projects.display()
    );
    text.push_str(&format!("agent_order = [\"{}\"]\n", backends[0].0));
    for (name, kind, mode) in backends {
        let args: Vec<String> = mode.split(' ').map(|a| format!("\"{a}\"")).collect();
        text.push_str(&format!(
            "backend \"{name}\" {{\n  type = \"{kind}\"\n  command = [\"sh\", \"{}\", {}]\n  prompt = \"stdin\"\n}}\n",
            fake.display(),
            args.join(", ")
        ));
    }
    let config = dir.path().join("config.hcl");
    std::fs::write(&config, text).unwrap();
    let (child, addr) = spawn(dir.path());
    Serve {
        child,
        addr,
        client: reqwest::Client::new(),
        projects,
        _dir: dir,
    }
}

fn spawn(dir: &Path) -> (Child, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_longrun"));
    cmd.args(["serve", "--port", "0", "--data-dir"])
        .arg(dir.join("data"))
        .env("LONGRUN_TOKENS", format!("{TOKEN}:alice"))
        .env("LONGRUN_CONFIG", dir.join("config.hcl"))
        .env_remove("LONGRUN_TASK_DIR")
        .env_remove("LONGRUN_RUN_ID");
    support::spawn_serve(cmd)
}

impl Serve {
    /// `kill -9`, then a new `serve` on the same data and config.
    fn kill9_and_restart(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        let (child, addr) = spawn(self._dir.path());
        self.child = child;
        self.addr = addr;
    }

    /// The run's agent processes once `count` of them have started (30 s at most).
    async fn started(
        &self, id: &str, count: usize,
    ) -> Vec<std::collections::BTreeMap<String, String>> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let procs = self.agent_runs(id);
            if procs.len() >= count && procs.iter().all(|i| i.contains_key("pid")) {
                return procs;
            }
            assert!(
                Instant::now() < deadline,
                "the agent never started: {procs:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .client
            .request(method, format!("http://{}{path}", self.addr))
            .bearer_auth(TOKEN);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    async fn create(&self, body: Value) -> String {
        let (status, run) = self
            .send(reqwest::Method::POST, "/v1/runs", Some(body))
            .await;
        assert_eq!(status, 201, "{run}");
        run["id"].as_str().unwrap().to_string()
    }

    async fn run(&self, id: &str) -> Value {
        self.send(reqwest::Method::GET, &format!("/v1/runs/{id}"), None)
            .await
            .1
    }

    /// The run once its status is one of `statuses` (60 s at most).
    async fn until(&self, id: &str, statuses: &[&str]) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let run = self.run(id).await;
            if statuses.contains(&run["status"].as_str().unwrap_or("")) {
                return run;
            }
            assert!(Instant::now() < deadline, "run stuck: {run}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn task_dir(&self, id: &str) -> PathBuf {
        self.projects.join("alice").join(id)
    }

    /// The run-info of each agent process of the run, oldest first, as `key: value` maps.
    fn agent_runs(&self, id: &str) -> Vec<std::collections::BTreeMap<String, String>> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(self.task_dir(id).join("runs"))
            .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        dirs.retain(|d| d.join("run-info.yaml").is_file());
        dirs.sort();
        dirs.iter()
            .map(|d| {
                let text = std::fs::read_to_string(d.join("run-info.yaml")).unwrap();
                text.lines()
                    .filter_map(|l| l.split_once(": "))
                    .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
                    .collect()
            })
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_run_restarts_its_agent_until_done_one_process_per_iteration() {
    // Arrange: an agent that writes DONE at its second start.
    let s = serve(&[("fake", "command", "done-after 2")]);

    // Act
    let id = s
        .create(json!({"objective": "write the notes", "agent": "fake"}))
        .await;
    let run = s.until(&id, &["completed", "stopped", "failed"]).await;

    // Assert: completed in two iterations, each one agent process, chained.
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["iteration"], 2);
    assert_eq!(run["agent"], "fake");
    let procs = s.agent_runs(&id);
    assert_eq!(procs.len(), 2, "{procs:?}");
    assert_eq!(procs[0]["longrun_iteration"], "1");
    assert_eq!(procs[1]["longrun_iteration"], "2");
    assert_eq!(procs[1]["previous_run_id"], procs[0]["run_id"]);
    let task = std::fs::read_to_string(s.task_dir(&id).join("TASK.md")).unwrap();
    assert_eq!(task, "write the notes");
    let (status, doc) = s
        .send(
            reqwest::Method::GET,
            &format!("/v1/runs/{id}/docs/output.md"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    assert!(
        doc["content"]
            .as_str()
            .unwrap()
            .contains("working, start 2")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_check_that_exits_1_blocks_completion_until_the_agent_makes_it_pass() {
    // Arrange: an agent that writes DONE at every start; the check passes only once it has
    // started twice.
    let s = serve(&[("fake", "command", "done-after 1")]);

    // Act
    let id = s
        .create(json!({"objective": "write the notes", "agent": "fake",
            "completion_criteria": [{"check": "command", "run": "test -f FACT-start-2.md"}]}))
        .await;
    let run = s.until(&id, &["completed", "stopped", "failed"]).await;

    // Assert: the first DONE was turned down with the command's exit code, removed, and the
    // agent started again with the reason.
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["iteration"], 2);
    assert_eq!(s.agent_runs(&id).len(), 2);
    let (_, iterations) = s
        .send(
            reqwest::Method::GET,
            &format!("/v1/runs/{id}/iterations"),
            None,
        )
        .await;
    let first = &iterations["iterations"][0];
    assert_eq!(first["criteria"][0]["kind"], "command", "{first}");
    assert_eq!(first["criteria"][0]["passed"], false);
    assert!(
        first["criteria"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("`test -f FACT-start-2.md` exited 1"),
        "{first}"
    );
    assert_eq!(iterations["iterations"][1]["criteria"][0]["passed"], true);
    let bus = std::fs::read_to_string(s.task_dir(&id).join("TASK-MESSAGE-BUS.md")).unwrap();
    assert!(bus.contains("exited 1"), "{bus}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_limit_waits_for_its_reset_uncharged_and_the_reported_cost_is_spend() {
    // Arrange: a claude-type agent whose first start hits its session limit (reset in 1 s) and
    // whose second reports $0.50 and writes DONE.
    let s = serve(&[("claude", "claude", "session-limit")]);

    // Act
    let id = s
        .create(json!({"objective": "limited", "agent": "claude"}))
        .await;
    let run = s.until(&id, &["completed", "stopped", "failed"]).await;

    // Assert: one iteration (the limited attempt is not one), the agent's cost is the run's.
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["iteration"], 1);
    assert_eq!(s.agent_runs(&id).len(), 2);
    assert!(
        (run["metrics"]["cost_usd"].as_f64().unwrap() - 0.5).abs() < 1e-9,
        "{run}"
    );
    assert_eq!(run["metrics"]["input_tokens"], 7, "{run}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_on_the_bus_waits_on_the_user_and_the_answer_reaches_the_agent() {
    // Arrange: an agent that asks a question at its first start, and is done once answered.
    let s = serve(&[("fake", "command", "ask")]);
    let id = s
        .create(json!({"objective": "ask me", "agent": "fake"}))
        .await;
    let waiting = s
        .until(&id, &["waiting_on_user", "completed", "failed"])
        .await;
    assert_eq!(waiting["status"], "waiting_on_user", "{waiting}");
    assert_eq!(waiting["questions"], json!(["which colour?"]));

    // Act
    let (status, body) = s
        .send(
            reqwest::Method::POST,
            &format!("/v1/runs/{id}/respond"),
            Some(json!({"answer": "blue"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let run = s.until(&id, &["completed", "stopped", "failed"]).await;

    // Assert
    assert_eq!(run["status"], "completed", "{run}");
    assert!(s.task_dir(&id).join("DONE").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_objective_is_written_to_task_md_for_the_next_start() {
    // Arrange: an agent run waiting on the user after its first start.
    let s = serve(&[("fake", "command", "ask")]);
    let id = s
        .create(json!({"objective": "ask me", "agent": "fake"}))
        .await;
    s.until(&id, &["waiting_on_user"]).await;

    // Act: the objective edited, then the answer.
    let (patched, body) = s
        .send(
            reqwest::Method::PATCH,
            &format!("/v1/runs/{id}"),
            Some(json!({"objective": "ask me, then paint it"})),
        )
        .await;
    assert_eq!(patched, 200, "{body}");
    s.send(
        reqwest::Method::POST,
        &format!("/v1/runs/{id}/respond"),
        Some(json!({"answer": "blue"})),
    )
    .await;
    s.until(&id, &["completed", "stopped", "failed"]).await;

    // Assert
    let task_md = std::fs::read_to_string(s.task_dir(&id).join("TASK.md")).unwrap();
    assert_eq!(task_md, "ask me, then paint it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canceling_an_agent_run_stops_its_process_group() {
    // Arrange: an agent that works for a minute.
    let s = serve(&[("fake", "command", "slow-done 60")]);
    let id = s
        .create(json!({"objective": "slow", "agent": "fake"}))
        .await;
    s.started(&id, 1).await;

    // Act: tell the agent something while it works, then cancel.
    let (told, body) = s
        .send(
            reqwest::Method::POST,
            &format!("/v1/runs/{id}/messages"),
            Some(json!({"text": "use the blue style"})),
        )
        .await;
    assert_eq!(told, 200, "{body}");
    let bus = std::fs::read_to_string(s.task_dir(&id).join("TASK-MESSAGE-BUS.md")).unwrap();
    let started = Instant::now();
    let (status, body) = s
        .send(
            reqwest::Method::POST,
            &format!("/v1/runs/{id}/cancel"),
            None,
        )
        .await;
    assert!(status == 200 || status == 202, "{status} {body}");
    let run = s.until(&id, &["canceled", "completed", "failed"]).await;

    // Assert: canceled long before the agent would have ended, and its run-info says stopped.
    assert_eq!(run["status"], "canceled", "{run}");
    assert!(started.elapsed() < Duration::from_secs(50));
    let procs = s.agent_runs(&id);
    assert_eq!(procs[0]["ended"], "stopped", "{procs:?}");
    assert!(
        bus.contains("USER") && bus.contains("use the blue style"),
        "{bus}"
    );
    assert!(!s.task_dir(&id).join("DONE").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_fails_authentication_fails_the_run_at_once_with_the_cause() {
    // Arrange: Codex with a wrong key at every start.
    let s = serve(&[("codex", "codex", "codex-auth")]);
    let id = s
        .create(json!({"objective": "never gets going", "agent": "codex"}))
        .await;

    // Act
    let run = s.until(&id, &["completed", "stopped", "failed"]).await;

    // Assert: failed with the cause, after one process, not a restart per iteration.
    assert_eq!(run["status"], "failed", "{run}");
    let detail = run["stopping_reason"]["detail"]
        .as_str()
        .unwrap_or_default();
    assert!(
        detail.contains("authentication failed") && detail.contains("401"),
        "{run}"
    );
    assert_eq!(
        s.agent_runs(&id).len(),
        1,
        "restarted after an auth failure"
    );
    assert_eq!(run["metrics"]["iterations"], 1, "{run}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_the_server_does_not_configure_is_refused_with_the_ones_it_does() {
    // Arrange
    let s = serve(&[("fake", "command", "never")]);

    // Act
    let (status, problem) = s
        .send(
            reqwest::Method::POST,
            "/v1/runs",
            Some(json!({"objective": "x", "agent": "nobody"})),
        )
        .await;

    // Assert
    assert_eq!(status, 422, "{problem}");
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.contains("nobody") && detail.contains("fake"),
        "{detail}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_iteration_adopts_the_live_agent_instead_of_starting_a_second() {
    // Arrange: an agent that works 40 s (longer than the embedded lease) and then writes DONE.
    let mut s = serve(&[("fake", "command", "slow-done 40")]);
    let id = s
        .create(json!({"objective": "slow", "agent": "fake"}))
        .await;
    let first = s.started(&id, 1).await;

    // Act: kill -9 the server while the agent works; a new one takes the run over.
    s.kill9_and_restart();
    let run = s.until(&id, &["completed", "stopped", "failed"]).await;

    // Assert: one agent process for the one iteration, adopted, and the run is done.
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["iteration"], 1);
    let procs = s.agent_runs(&id);
    assert_eq!(procs.len(), 1, "{procs:?}");
    assert_eq!(procs[0]["run_id"], first[0]["run_id"]);
    let bus = std::fs::read_to_string(s.task_dir(&id).join("TASK-MESSAGE-BUS.md")).unwrap();
    assert!(bus.contains("SUPERVISOR_RESTART"), "{bus}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_view_shows_the_chain_the_bus_the_state_and_the_output() {
    // Arrange: a run whose agent is done at its second start.
    let s = serve(&[("fake", "command", "done-after 2")]);
    let id = s
        .create(json!({"objective": "write the notes", "agent": "fake"}))
        .await;
    s.until(&id, &["completed", "stopped", "failed"]).await;

    // Act
    let (status, view) = s
        .send(reqwest::Method::GET, &format!("/v1/runs/{id}/agent"), None)
        .await;

    // Assert
    assert_eq!(status, 200, "{view}");
    let procs = view["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 2, "{view}");
    assert_eq!(procs[0]["iteration"], 1);
    assert_eq!(procs[1]["previous_run_id"], procs[0]["run_id"]);
    assert_eq!(procs[1]["ended"], "exited");
    assert_eq!(view["task_state"], "mode done-after, start 2\n");
    assert!(
        view["output"]
            .as_str()
            .unwrap()
            .contains("working, start 2"),
        "{view}"
    );
    assert!(
        view["tail"].as_str().unwrap().contains("working, start 2"),
        "{view}"
    );
    let said: Vec<String> = view["bus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{} {}",
                m["type"].as_str().unwrap(),
                m["body"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        said.contains(&"OBSERVATION start 1".to_string()),
        "{said:?}"
    );
    assert!(said.contains(&"INFO DONE written".to_string()), "{said:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planner_run_has_no_agent_view() {
    // Arrange
    let s = serve(&[("fake", "command", "never")]);
    let id = s.create(json!({"objective": "plain"})).await;

    // Act
    let (status, problem) = s
        .send(reqwest::Method::GET, &format!("/v1/runs/{id}/agent"), None)
        .await;

    // Assert
    assert_eq!(status, 404, "{problem}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_iteration_resumes_the_cli_session_the_last_one_reported() {
    // Arrange: a claude-type agent that reports session s-<start> and is done at its second.
    let s = serve(&[("claude", "claude", "claude-session")]);

    // Act
    let id = s
        .create(json!({"objective": "resume me", "agent": "claude"}))
        .await;
    let run = s.until(&id, &["completed", "stopped", "failed"]).await;

    // Assert
    assert_eq!(run["status"], "completed", "{run}");
    let dir = s.task_dir(&id);
    let first = std::fs::read_to_string(dir.join(".args-1")).unwrap();
    let second = std::fs::read_to_string(dir.join(".args-2")).unwrap();
    assert!(!first.contains("--resume"), "{first}");
    assert!(second.contains("--resume s-1"), "{second}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_running_time_budget_stops_an_agent_that_outlives_it() {
    // Arrange: an agent that would work a minute, in a run with 2 s of running time.
    let s = serve(&[("fake", "command", "slow-done 60")]);

    // Act
    let id = s
        .create(json!({"objective": "slow", "agent": "fake", "budgets": {"max_running_ms": 2000}}))
        .await;
    let started = Instant::now();
    let run = s.until(&id, &["completed", "stopped", "failed"]).await;

    // Assert: stopped on its budget long before the agent's minute, its process out of time.
    assert_eq!(run["status"], "stopped", "{run}");
    assert!(started.elapsed() < Duration::from_secs(40));
    assert_eq!(s.agent_runs(&id)[0]["ended"], "out_of_time");
    assert!(!s.task_dir(&id).join("DONE").exists());
}
