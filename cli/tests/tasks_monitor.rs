//! `serve` as the monitor of the projects root: the tasks a terminal started with `longrun task`
//! are listed and shown read-only to the one user the server names for them, next to agent
//! runs (whose folders are not taken for tasks), and every agent folder's bus streams over SSE.
#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use serde_json::{Value, json};

mod support;

const ALICE: &str = "lr_tasks_alice_token";
const BOB: &str = "lr_tasks_bob_token";

struct Machine {
    dir: tempfile::TempDir,
    projects: PathBuf,
}

/// A runner config whose one backend is the fake agent in `mode`.
fn machine(mode: &str) -> Machine {
    let dir = tempfile::tempdir().unwrap();
    let projects = dir.path().join("projects");
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-agent.sh");
    let args: Vec<String> = mode.split(' ').map(|a| format!("\"{a}\"")).collect();
    let text = format!(
        "projects_root = \"{}\"\nchild_poll_interval = 0.2\nstop_grace = 1\nmax_restarts = 3\n\
         agent_order = [\"fake\"]\nbackend \"fake\" {{\n  type = \"command\"\n  command = [\"sh\", \"{}\", {}]\n  prompt = \"stdin\"\n}}\n",
        projects.display(),
        fake.display(),
        args.join(", ")
    );
    std::fs::write(dir.path().join("config.hcl"), text).unwrap();
    Machine { dir, projects }
}

impl Machine {
    /// `longrun task <project> <task>` from a terminal, to its end.
    fn task(&self, project: &str, task: &str, objective: &str) {
        let out = Command::new(env!("CARGO_BIN_EXE_longrun"))
            .args(["task", project, task, "--objective", objective])
            .env("LONGRUN_CONFIG", self.dir.path().join("config.hcl"))
            .env_remove("LONGRUN_TASK_DIR")
            .env_remove("LONGRUN_RUN_ID")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn task_in_background(&self, project: &str, task: &str, objective: &str) -> Child {
        Command::new(env!("CARGO_BIN_EXE_longrun"))
            .args(["task", project, task, "--objective", objective])
            .env("LONGRUN_CONFIG", self.dir.path().join("config.hcl"))
            .env_remove("LONGRUN_TASK_DIR")
            .env_remove("LONGRUN_RUN_ID")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    }

    /// `serve` over the same projects root, alice and bob its users, alice the tasks' user.
    fn serve(&self) -> Serve {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_longrun"));
        cmd.args(["serve", "--port", "0", "--data-dir"])
            .arg(self.dir.path().join("data"))
            .env("LONGRUN_TOKENS", format!("{ALICE}:alice,{BOB}:bob"))
            .env("LONGRUN_TASKS_USER", "alice")
            .env("LONGRUN_CONFIG", self.dir.path().join("config.hcl"))
            .env_remove("LONGRUN_TASK_DIR")
            .env_remove("LONGRUN_RUN_ID");
        let (child, addr) = support::spawn_serve(cmd);
        Serve {
            child,
            addr,
            client: reqwest::Client::new(),
        }
    }
}

struct Serve {
    child: Child,
    addr: String,
    client: reqwest::Client,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    async fn get(&self, token: &str, path: &str) -> (u16, Value) {
        let resp = self
            .client
            .get(format!("http://{}{path}", self.addr))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// The SSE stream at `path` read to its end: each event's (id, event name, data).
    async fn stream(
        &self, path: &str, last_event_id: Option<i64>,
    ) -> (u16, Vec<(String, String, Value)>) {
        let mut req = self
            .client
            .get(format!("http://{}{path}", self.addr))
            .bearer_auth(ALICE)
            .timeout(std::time::Duration::from_secs(60));
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id.to_string());
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let events = text
            .split("\n\n")
            .filter_map(|block| {
                let field = |name: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
                };
                let data = field("data:")?;
                Some((
                    field("id:").unwrap_or_default(),
                    field("event:").unwrap_or_default(),
                    serde_json::from_str(&data).unwrap(),
                ))
            })
            .collect();
        (status, events)
    }

    async fn create(&self, body: Value) -> String {
        let resp = self
            .client
            .post(format!("http://{}/v1/runs", self.addr))
            .bearer_auth(ALICE)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 201);
        let run: Value = resp.json().await.unwrap();
        run["id"].as_str().unwrap().to_string()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_task_is_listed_and_shown_to_the_tasks_user_beside_agent_runs() {
    // Arrange: a task done from a terminal, and an agent run of alice's on the server.
    let m = machine("done-after 2");
    m.task("notes", "draft", "# Draft the notes\n\nTwo passes.");
    let s = m.serve();
    let run = s
        .create(json!({"objective": "an agent run", "agent": "fake"}))
        .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while s.get(ALICE, &format!("/v1/runs/{run}")).await.1["status"] != "completed" {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent run never completed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // Act
    let (status, list) = s.get(ALICE, "/v1/tasks").await;
    let (view_status, view) = s.get(ALICE, "/v1/tasks/notes/draft").await;

    // Assert: the task alone (the agent run's folder under projects/alice is not one).
    assert_eq!(status, 200, "{list}");
    let tasks = list["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{list}");
    assert!(m.projects.join("alice").join(&run).is_dir());
    let t = &tasks[0];
    assert_eq!(
        (t["project"].as_str(), t["task"].as_str()),
        (Some("notes"), Some("draft"))
    );
    assert_eq!(t["status"], "done", "{t}");
    assert_eq!(t["title"], "Draft the notes");
    assert_eq!(t["processes"], 2, "{t}");
    assert_eq!(t["agent"], "fake");
    assert_eq!(view_status, 200, "{view}");
    assert!(view["objective"].as_str().unwrap().contains("Two passes."));
    let procs = view["folder"]["processes"].as_array().unwrap();
    assert_eq!(procs[1]["previous_run_id"], procs[0]["run_id"], "{view}");
    assert_eq!(view["folder"]["task_state"], "mode done-after, start 2\n");
    let bus: Vec<&str> = view["folder"]["bus"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["body"].as_str())
        .collect();
    assert!(bus.contains(&"DONE written"), "{bus:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_user_sees_no_terminal_task_and_a_named_one_is_not_found() {
    // Arrange
    let m = machine("done-after 1");
    m.task("notes", "draft", "Draft the notes.");
    let s = m.serve();

    // Act
    let (list_status, list) = s.get(BOB, "/v1/tasks").await;
    let (view_status, view) = s.get(BOB, "/v1/tasks/notes/draft").await;
    let (stream_status, _) = s.get(BOB, "/v1/tasks/notes/draft/stream").await;

    // Assert
    assert_eq!((list_status, list), (200, json!({"tasks": []})));
    assert_eq!(view_status, 404, "{view}");
    assert_eq!(view["status"], 404);
    assert_eq!(stream_status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_leave_the_projects_root_are_not_found() {
    // Arrange: a file beside the projects root that a traversal would reach.
    let m = machine("done-after 1");
    m.task("notes", "draft", "Draft the notes.");
    std::fs::create_dir_all(m.dir.path().join("outside/runs")).unwrap();
    std::fs::write(m.dir.path().join("outside/TASK.md"), "secret").unwrap();
    let s = m.serve();

    // Act / Assert
    for path in [
        "/v1/tasks/%2E%2E/outside",
        "/v1/tasks/notes/%2E%2E",
        "/v1/tasks/notes%2Fdraft/x",
        "/v1/tasks/.longrun-backends.json/x",
        "/v1/tasks/notes/nothing",
    ] {
        let (status, body) = s.get(ALICE, path).await;
        assert_eq!(status, 404, "{path}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_bus_streams_every_message_once_and_resumes_after_last_event_id() {
    // Arrange
    let m = machine("done-after 2");
    m.task("notes", "draft", "Draft the notes.");
    let s = m.serve();

    // Act: the whole bus of the ended task, then again after its second message.
    let (status, all) = s.stream("/v1/tasks/notes/draft/stream", None).await;
    let second: i64 = all[1].0.parse().unwrap();
    let (_, rest) = s.stream("/v1/tasks/notes/draft/stream", Some(second)).await;

    // Assert: seqs gapless from 1, each event named by its type, the resume picks up after.
    assert_eq!(status, 200);
    let seqs: Vec<i64> = all.iter().map(|(id, _, _)| id.parse().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>(), "{all:?}");
    assert!(
        all.iter()
            .all(|(_, name, data)| data["type"] == name.as_str())
    );
    assert!(
        all.iter().any(|(_, _, d)| d["body"] == "DONE written"),
        "{all:?}"
    );
    assert_eq!(rest.len(), all.len() - 2);
    assert_eq!(rest[0].2, all[2].2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_task_streams_live_until_it_ends() {
    // Arrange: a task whose agent works 3 s, its stream opened while it runs.
    let m = machine("slow-done 3");
    let mut task = m.task_in_background("notes", "slow", "Take your time.");
    let s = m.serve();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while s.get(ALICE, "/v1/tasks").await.1["tasks"][0]["status"] != "running" {
        assert!(std::time::Instant::now() < deadline, "the task never ran");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // Act: read the stream to its end.
    let (status, events) = s.stream("/v1/tasks/notes/slow/stream", None).await;

    // Assert: it carried the loop's end, and ended only once the task had.
    assert_eq!(status, 200);
    assert!(task.wait().unwrap().success());
    let bodies: Vec<&str> = events
        .iter()
        .filter_map(|(_, _, d)| d["body"].as_str())
        .collect();
    assert!(
        bodies.iter().any(|b| b.starts_with("task complete")),
        "{bodies:?}"
    );
    assert_eq!(
        s.get(ALICE, "/v1/tasks").await.1["tasks"][0]["status"],
        "done"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_runs_bus_streams_until_the_run_settles() {
    // Arrange
    let m = machine("done-after 2");
    let s = m.serve();
    let run = s
        .create(json!({"objective": "two passes", "agent": "fake"}))
        .await;

    // Act: opened at once, read to its end.
    let (status, events) = s
        .stream(&format!("/v1/runs/{run}/agent/stream"), None)
        .await;

    // Assert: both starts' messages, though no process ran between the iterations.
    assert_eq!(status, 200);
    let bodies: Vec<&str> = events
        .iter()
        .filter_map(|(_, _, d)| d["body"].as_str())
        .collect();
    assert!(bodies.contains(&"start 1"), "{bodies:?}");
    assert!(bodies.contains(&"start 2"), "{bodies:?}");
    assert!(bodies.contains(&"DONE written"), "{bodies:?}");
    let (other, _) = s.get(BOB, &format!("/v1/runs/{run}/agent/stream")).await;
    assert_eq!(other, 404);
}
