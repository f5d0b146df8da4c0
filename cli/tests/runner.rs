//! `longrun task|job|bus|stop|config` end to end with a scripted fake agent
//! (`tests/fixtures/fake-agent.sh`): each test writes its own config with short thresholds and
//! its own projects root, and runs the real `longrun` binary.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_longrun");

struct Env {
    _dir: tempfile::TempDir,
    config: PathBuf,
    root: PathBuf,
}

fn fake() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fake-agent.sh")
        .display()
        .to_string()
}

/// A config whose backends are fake-agent modes: `("root", "done-after 3")`; the first is the
/// only one in `agent_order` unless `settings` sets it.
fn setup(settings: &str, backends: &[(&str, &str)]) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("projects");
    let mut text = format!(
        "projects_root = \"{}\"\nrestart_pause = 0.1\nchild_poll_interval = 0.2\nstop_grace = 1\n{settings}\n",
        root.display()
    );
    if !settings.contains("agent_order") {
        text.push_str(&format!("agent_order = [\"{}\"]\n", backends[0].0));
    }
    for (name, mode) in backends {
        let args: Vec<String> = mode.split(' ').map(|a| format!("\"{a}\"")).collect();
        text.push_str(&format!(
            "backend \"{name}\" {{\n  type = \"command\"\n  command = [\"sh\", \"{}\", {}]\n  prompt = \"stdin\"\n}}\n",
            fake(),
            args.join(", ")
        ));
    }
    let config = dir.path().join("config.hcl");
    std::fs::write(&config, text).unwrap();
    Env {
        _dir: dir,
        config,
        root,
    }
}

impl Env {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("LONGRUN_CONFIG", &self.config)
            .env_remove("LONGRUN_TASK_DIR")
            .env_remove("LONGRUN_RUN_ID")
            .env_remove("LONGRUN_PROJECTS_ROOT")
            .env_remove("LONGRUN_MAX_RESTARTS")
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn task_dir(&self) -> PathBuf {
        self.root.join("p").join("t")
    }

    /// Starts task p/t with `objective` as TASK.md.
    fn task(&self, extra: &[&str]) -> Output {
        let mut args = vec!["task", "p", "t", "--objective", "Do the thing."];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    /// (type, body) of every bus message, in order.
    fn bus(&self) -> Vec<(String, String)> {
        let dir = self.task_dir().display().to_string();
        let out = self.run(&["--json", "bus", "poll", "--task-dir", &dir]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (
                    v["type"].as_str().unwrap().to_string(),
                    v["body"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    /// The run-info of the first run whose agent has started (it has a pgid).
    fn wait_for_root(&self) -> std::collections::BTreeMap<String, String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(r) = self.runs().into_iter().find(|r| r.contains_key("pgid")) {
                return r;
            }
            assert!(Instant::now() < deadline, "the root never started");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn has(&self, kind: &str, needle: &str) -> bool {
        self.bus()
            .iter()
            .any(|(k, b)| k == kind && b.contains(needle))
    }

    /// Every run's run-info as key → value, oldest first.
    fn runs(&self) -> Vec<std::collections::BTreeMap<String, String>> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(self.task_dir().join("runs"))
            .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        dirs.retain(|d| d.join("run-info.yaml").is_file());
        dirs.sort();
        dirs.iter()
            .map(|d| {
                std::fs::read_to_string(d.join("run-info.yaml"))
                    .unwrap()
                    .lines()
                    .filter_map(|l| l.split_once(": "))
                    .map(|(k, v)| {
                        let v = serde_json::from_str::<serde_json::Value>(v)
                            .map(|j| match j {
                                serde_json::Value::String(s) => s,
                                other => other.to_string(),
                            })
                            .unwrap_or_else(|_| v.to_string());
                        (k.to_string(), v)
                    })
                    .collect()
            })
            .collect()
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn a_task_whose_done_exists_before_start_completes_without_starting_an_agent() {
    let env = setup("", &[("root", "never")]);
    std::fs::create_dir_all(env.task_dir()).unwrap();
    std::fs::write(env.task_dir().join("DONE"), "").unwrap();

    let out = env.task(&[]);

    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env.runs().is_empty());
}

#[test]
fn an_empty_task_md_is_refused_with_one_line_and_a_nonzero_exit() {
    let env = setup("", &[("root", "never")]);
    std::fs::create_dir_all(env.task_dir()).unwrap();
    std::fs::write(env.task_dir().join("TASK.md"), "  \n").unwrap();

    let out = env.run(&["task", "p", "t"]);

    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("TASK.md"));
}

#[test]
fn the_root_is_restarted_until_it_writes_done_and_each_run_points_at_the_one_before() {
    let env = setup("max_restarts = 5", &[("root", "done-after 3")]);

    let out = env.task(&[]);

    assert!(out.status.success(), "{}", stderr(&out));
    let runs = env.runs();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0]["previous_run_id"], "");
    assert_eq!(runs[1]["previous_run_id"], runs[0]["run_id"]);
    assert_eq!(runs[2]["previous_run_id"], runs[1]["run_id"]);
    assert!(env.task_dir().join("FACT-start-3.md").is_file());
    assert!(env.task_dir().join("TASK-MESSAGE-BUS.md").is_file());
    assert_eq!(env.bus().iter().filter(|(k, _)| k == "START").count(), 3);
}

#[test]
fn a_task_without_done_stops_at_max_restarts_with_a_nonzero_exit() {
    let env = setup("max_restarts = 2", &[("root", "never")]);

    let out = env.task(&[]);

    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(env.runs().len(), 3);
    assert!(env.has("WARNING", "max_restarts 2"));
}

#[test]
fn pattern_a_the_root_waits_for_its_children_aggregates_and_writes_done() {
    let env = setup("", &[("root", "pattern-a 2"), ("child", "child")]);

    let out = env.task(&[]);

    assert!(out.status.success(), "{}", stderr(&out));
    let runs = env.runs();
    let root = runs.iter().find(|r| r["parent_run_id"].is_empty()).unwrap();
    let children: Vec<_> = runs
        .iter()
        .filter(|r| r["parent_run_id"] == root["run_id"])
        .collect();
    assert_eq!(children.len(), 2);
    assert!(children.iter().all(|c| c["depth"] == "1"));
    let output = std::fs::read_to_string(Path::new(&root["output_path"])).unwrap();
    for c in &children {
        assert!(output.contains(&c["run_id"]), "{output}");
    }
    assert_eq!(
        env.bus().iter().filter(|(k, _)| k == "CHILD_DONE").count(),
        2
    );
}

#[test]
fn pattern_b_done_at_once_makes_the_task_wait_for_its_children() {
    let env = setup("", &[("root", "pattern-b 2"), ("slow-child", "slow-child")]);

    let out = env.task(&[]);

    assert!(out.status.success(), "{}", stderr(&out));
    let finished = std::fs::read_dir(env.task_dir())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("child-finished-")
        })
        .count();
    assert_eq!(finished, 2);
    assert!(env.has("INFO", "Waiting for"));
    assert_eq!(
        env.runs()
            .iter()
            .filter(|r| r["parent_run_id"].is_empty())
            .count(),
        1
    );
}

#[test]
fn children_still_running_after_the_wait_timeout_are_orphaned_with_a_warning() {
    let env = setup(
        "child_wait_timeout = 1",
        &[("root", "orphan"), ("hang", "hang")],
    );

    let out = env.task(&[]);

    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env.has("WARNING", "orphaned"));
    // Clean up the orphan through the command under test.
    let deadline = Instant::now() + Duration::from_secs(10);
    let child = loop {
        if let Some(c) = env
            .runs()
            .into_iter()
            .find(|r| !r["parent_run_id"].is_empty())
        {
            break c;
        }
        assert!(Instant::now() < deadline, "the orphan never registered");
        std::thread::sleep(Duration::from_millis(100));
    };
    let stop = env.run(&["stop", &child["run_id"]]);
    assert!(stop.status.success(), "{}", stderr(&stop));
}

#[test]
fn stop_escalates_to_sigkill_when_the_agent_ignores_sigterm() {
    let env = setup("", &[("stubborn", "stubborn")]);
    let mut job = env
        .cmd(&["job", "--project", "p", "--task", "t", "hold on"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let run = loop {
        let started = env.runs().into_iter().find(|r| r.contains_key("pgid"));
        let announced = env.has("START", "stubborn");
        if let (Some(r), true) = (started, announced) {
            break r;
        }
        assert!(Instant::now() < deadline, "the job never started");
        std::thread::sleep(Duration::from_millis(100));
    };
    // The agent installs its SIGTERM trap after its first line of output.
    while std::fs::metadata(&run["stdout_path"])
        .map(|m| m.len())
        .unwrap_or(0)
        == 0
    {
        std::thread::sleep(Duration::from_millis(50));
    }

    let out = env.run(&["stop", &run["run_id"]]);

    assert!(out.status.success(), "{}", stderr(&out));
    let status = job.wait().unwrap();
    assert!(!status.success());
    let info = env
        .runs()
        .into_iter()
        .find(|r| r["run_id"] == run["run_id"])
        .unwrap();
    assert_eq!(info["stop_signal"], "SIGKILL");
    assert!(!info["end_time"].is_empty());
    assert!(env.has("STOP", "SIGKILL"));
}

#[test]
fn a_stuck_agent_is_killed_and_the_loop_recovers() {
    let env = setup("stuck_threshold = 1", &[("root", "stuck-once")]);

    let out = env.task(&[]);

    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env.has("WARNING", "stuck"));
    let runs = env.runs();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["ended"], "stuck");
}

#[test]
fn a_config_error_names_the_file_the_line_and_the_key() {
    let env = setup("max_restarts = \"many\"", &[("root", "never")]);

    let out = env.task(&[]);

    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}:5: max_restarts:", env.config.display())),
        "{err}"
    );
}

#[test]
fn a_session_limit_waits_for_the_reset_without_costing_a_restart() {
    let env = setup("max_restarts = 0", &[("root", "session-limit")]);

    let out = env.task(&[]);

    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env.has("WARNING", "usage limit"));
    let runs = env.runs();
    assert_eq!(runs.len(), 2);
    assert!(
        runs[1]["usage"].contains("\"cost_usd\":0.5"),
        "{:?}",
        runs[1]
    );
    assert!(env.has("INFO", "usage in 7, out 3 tokens, $0.5000"));
}

#[test]
fn text_that_merely_mentions_a_limit_is_an_ordinary_failure() {
    let env = setup("max_restarts = 0", &[("root", "echo-limit")]);

    let out = env.task(&[]);

    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(!env.has("WARNING", "usage limit"));
    assert!(env.has("CRASH", "exit 1"));
}

#[test]
fn a_backend_that_fails_fast_is_degraded_and_the_next_one_runs() {
    let env = setup(
        "agent_order = [\"broken\", \"good\"]",
        &[("broken", "crash-fast"), ("good", "done-after 1")],
    );

    let out = env.task(&[]);

    assert!(out.status.success(), "{}", stderr(&out));
    let runs = env.runs();
    assert_eq!(runs.len(), 2);
    assert_eq!(
        (runs[0]["agent"].as_str(), runs[1]["agent"].as_str()),
        ("broken", "good")
    );
    assert_eq!(runs[1]["previous_run_id"], runs[0]["run_id"]);
    assert!(env.has("WARNING", "failed before any output"));
}

#[test]
fn a_job_deeper_than_the_delegation_limit_is_refused() {
    let env = setup("max_delegation_depth = 2", &[("root", "child")]);
    std::fs::create_dir_all(env.task_dir()).unwrap();

    let out = env
        .cmd(&["job", "go deeper"])
        .env("LONGRUN_TASK_DIR", env.task_dir())
        .env("LONGRUN_RUN_ID", "20260101-0000000000-1")
        .env("LONGRUN_DEPTH", "2")
        .output()
        .unwrap();

    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("max_delegation_depth 2"),
        "{}",
        stderr(&out)
    );
    assert!(env.runs().is_empty());
}

#[test]
fn stopping_the_root_ends_the_task_instead_of_restarting_it() {
    let env = setup("max_restarts = 5", &[("root", "hang")]);
    let mut task = env
        .cmd(&["task", "p", "t", "--objective", "Wait."])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let root = env.wait_for_root();

    let out = env.run(&["stop", &root["run_id"]]);

    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(task.wait().unwrap().code(), Some(5));
    assert_eq!(env.runs().len(), 1);
    assert!(env.has("STOP", "SIGTERM"));
}

#[test]
fn a_question_left_on_the_bus_holds_the_restart_until_it_is_answered() {
    let env = setup("max_restarts = 1", &[("root", "ask")]);
    let mut task = env
        .cmd(&["task", "p", "t", "--objective", "Ask first."])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !env.has("INFO", "waiting for an answer") {
        assert!(Instant::now() < deadline, "the loop never waited");
        std::thread::sleep(Duration::from_millis(100));
    }
    let dir = env.task_dir().display().to_string();

    let post = env.run(&[
        "bus",
        "post",
        "--type",
        "ANSWER",
        "--task-dir",
        &dir,
        "blue",
    ]);

    assert!(post.status.success(), "{}", stderr(&post));
    assert_eq!(task.wait().unwrap().code(), Some(0));
    assert_eq!(env.runs().len(), 2);
}

#[test]
fn the_command_line_beats_the_environment_which_beats_the_config_file() {
    let env = setup("max_restarts = 5", &[("root", "never")]);

    let from_env = env
        .cmd(&["task", "p", "t", "--objective", "x"])
        .env("LONGRUN_MAX_RESTARTS", "1")
        .output()
        .unwrap();
    let after_env = env.runs().len();
    let from_cli = env
        .cmd(&["task", "p", "t", "--max-restarts", "0"])
        .env("LONGRUN_MAX_RESTARTS", "1")
        .output()
        .unwrap();

    assert_eq!(from_env.status.code(), Some(3));
    assert_eq!(after_env, 2);
    assert_eq!(from_cli.status.code(), Some(3));
    assert_eq!(env.runs().len(), after_env + 1);
}

#[test]
fn a_root_still_running_when_the_time_budget_ends_is_stopped() {
    let env = setup("time_budget = 1", &[("root", "hang")]);

    let out = env.task(&[]);

    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(env.has("WARNING", "time budget spent"));
    let runs = env.runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["ended"], "out_of_time");
}

#[test]
fn a_second_loop_on_a_running_task_is_refused() {
    let env = setup("", &[("root", "hang")]);
    let mut first = env
        .cmd(&["task", "p", "t", "--objective", "Wait."])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let root = env.wait_for_root();

    let second = env.run(&["task", "p", "t"]);

    assert_eq!(second.status.code(), Some(2));
    assert!(
        stderr(&second).contains("already running"),
        "{}",
        stderr(&second)
    );
    env.run(&["stop", &root["run_id"]]);
    assert_eq!(first.wait().unwrap().code(), Some(5));
}

#[test]
fn a_restarted_loop_adopts_the_live_root_instead_of_starting_a_second_one() {
    let env = setup("", &[("root", "slow-done 3")]);
    let mut first = env
        .cmd(&["task", "p", "t", "--objective", "Work slowly."])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let root = env.wait_for_root();
    // The loop dies; the agent, in its own process group, goes on.
    first.kill().unwrap();
    first.wait().unwrap();

    let out = env.run(&["task", "p", "t"]);

    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(env.has("SUPERVISOR_RESTART", &root["run_id"]));
    let runs = env.runs();
    assert_eq!(runs.len(), 1, "a second root was started: {runs:?}");
    assert!(!runs[0]["end_time"].is_empty());
    assert_eq!(runs[0]["ended"], "exited");
    let starts = std::fs::read_to_string(env.task_dir().join(".fake-starts-slow-done")).unwrap();
    assert_eq!(starts.trim(), "1");
}

#[test]
fn a_restarted_root_resumes_the_cli_session_its_previous_run_reported() {
    // Arrange: a `claude`-type backend whose program is the fake agent.
    let env = setup("", &[("root", "never")]);
    let text = std::fs::read_to_string(&env.config).unwrap().replace(
        "type = \"command\"\n  command = [\"sh\", ",
        "type = \"claude\"\n  command = [\"sh\", ",
    );
    let text = text.replace("\"never\"]", "\"claude-session\"]");
    std::fs::write(&env.config, text).unwrap();

    // Act
    let out = env.task(&[]);

    // Assert
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = std::fs::read_to_string(env.task_dir().join(".args-1")).unwrap();
    let second = std::fs::read_to_string(env.task_dir().join(".args-2")).unwrap();
    assert!(!first.contains("--resume"), "{first}");
    assert!(second.contains("--resume s-1"), "{second}");
    let runs = env.runs();
    assert_eq!(runs[0]["session_id"], "s-1");
    assert_eq!(runs[1]["resumed_session"], "s-1");
}

/// Runs `longrun task` and expects the one-line config error naming `key` and the range.
fn assert_config_error(out: &Output, key: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(&format!("{key}: must be")), "{err}");
    assert!(err.contains("<= 315360000"), "{err}");
}

#[test]
fn a_huge_time_budget_in_the_config_file_is_a_config_error_not_a_panic() {
    let env = setup("time_budget = 1e30", &[("root", "never")]);

    let out = env.task(&[]);

    assert_config_error(&out, "time_budget");
}

#[test]
fn a_huge_stop_grace_in_the_config_file_is_a_config_error_not_a_panic() {
    let env = setup("max_restarts = 0", &[("root", "never")]);
    let text = std::fs::read_to_string(&env.config).unwrap();
    std::fs::write(
        &env.config,
        text.replace("stop_grace = 1\n", "stop_grace = 1e20\n"),
    )
    .unwrap();

    let out = env.task(&[]);

    assert_config_error(&out, "stop_grace");
}

#[test]
fn an_infinite_or_nan_time_budget_on_the_command_line_is_a_config_error() {
    let env = setup("", &[("root", "never")]);

    let inf = env.task(&["--time-budget", "inf"]);
    let nan = env.task(&["--time-budget", "nan"]);

    assert_config_error(&inf, "--time-budget");
    assert_config_error(&nan, "--time-budget");
}

#[test]
fn a_huge_or_nan_time_budget_in_the_environment_is_a_config_error() {
    let env = setup("", &[("root", "never")]);
    let task = |v: &str| {
        env.cmd(&["task", "p", "t", "--objective", "Do the thing."])
            .env("LONGRUN_TIME_BUDGET", v)
            .output()
            .unwrap()
    };

    let huge = task("1e30");
    let nan = task("nan");

    assert_config_error(&huge, "LONGRUN_TIME_BUDGET");
    assert_config_error(&nan, "LONGRUN_TIME_BUDGET");
}

#[test]
fn every_command_the_root_prompt_tells_an_agent_to_run_works() {
    // The fake agent runs each `longrun …` command line of its prompt, "…" filled in.
    let env = setup("max_restarts = 0", &[("root", "prompt-commands")]);

    let out = env.task(&[]);

    let log = std::fs::read_to_string(env.task_dir().join(".prompt-commands.log")).unwrap();
    let said = std::fs::read_to_string(env.task_dir().join(".prompt-commands.out")).unwrap();
    assert!(out.status.success(), "{}\n{log}\n{said}", stderr(&out));
    for cmd in [
        "ok: longrun job",
        "ok: longrun bus post",
        "ok: longrun bus poll",
    ] {
        assert!(log.contains(cmd), "{cmd} missing from\n{log}");
    }
    assert!(!log.contains("FAILED"), "{log}\n{said}");
    // The delegated job ran as a child of the root.
    let runs = env.runs();
    assert!(
        runs.iter().any(|r| r["parent_run_id"] == runs[0]["run_id"]),
        "{runs:?}"
    );
}

#[test]
fn a_root_that_ended_while_its_loop_was_dead_is_recorded_and_chained() {
    // Arrange: the loop dies at once; its root works a second and exits without DONE.
    let env = setup("max_restarts = 3", &[("root", "work 2 1")]);
    let mut first = env
        .cmd(&["task", "p", "t", "--objective", "Work a while."])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let root = env.wait_for_root();
    first.kill().unwrap();
    first.wait().unwrap();
    let pid = root["pid"].clone();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(Instant::now() < deadline, "the root never exited");
        std::thread::sleep(Duration::from_millis(50));
    }

    // Act
    let out = env.run(&["task", "p", "t"]);

    // Assert
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(env.has("SUPERVISOR_RESTART", "ended while no loop watched it"));
    let runs = env.runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(!runs[0]["end_time"].is_empty(), "{runs:?}");
    assert_eq!(runs[0]["exit_code"], "-1");
    assert_eq!(runs[1]["previous_run_id"], runs[0]["run_id"]);
}

#[test]
fn a_helper_the_root_left_in_its_group_is_not_waited_for_as_a_child() {
    let env = setup("child_wait_timeout = 30", &[("root", "lingering")]);

    let out = env.task(&[]);

    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!env.has("INFO", "Waiting for"), "{:?}", env.bus());
}

/// A config whose one backend `root` is of CLI type `kind`, its program the fake agent in `mode`.
fn setup_cli(kind: &str, mode: &str) -> Env {
    let env = setup("max_restarts = 3", &[("root", "never")]);
    let text = std::fs::read_to_string(&env.config).unwrap().replace(
        "type = \"command\"\n  command = [\"sh\", ",
        &format!("type = \"{kind}\"\n  command = [\"sh\", "),
    );
    std::fs::write(
        &env.config,
        text.replace("\"never\"]", &format!("\"{mode}\"]")),
    )
    .unwrap();
    env
}

impl Env {
    /// `max_restarts = 0` in a `setup_cli` config: a run charged as a restart ends the task.
    fn no_restarts(&self) {
        let text = std::fs::read_to_string(&self.config).unwrap();
        std::fs::write(
            &self.config,
            text.replace("max_restarts = 3", "max_restarts = 0"),
        )
        .unwrap();
    }
}

fn usage_of(run: &std::collections::BTreeMap<String, String>) -> serde_json::Value {
    serde_json::from_str(&run["usage"]).unwrap()
}

#[test]
fn a_resumed_claude_session_books_the_cost_each_process_added_not_the_running_total() {
    let env = setup_cli("claude", "claude-cumulative");

    let out = env.task(&[]);

    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let runs = env.runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[1]["resumed_session"], "s-1");
    let costs: Vec<f64> = runs
        .iter()
        .map(|r| usage_of(r)["cost_usd"].as_f64().unwrap())
        .collect();
    assert!(
        (costs[0] - 0.01).abs() < 1e-9 && (costs[1] - 0.01).abs() < 1e-9,
        "{costs:?}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("$0.0200"),
        "{:?}",
        out
    );
}

#[test]
fn a_resumed_codex_thread_books_the_tokens_each_process_added_not_the_running_total() {
    let env = setup_cli("codex", "codex-cumulative");

    let out = env.task(&[]);

    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let runs = env.runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[1]["resumed_session"], "t-1");
    for r in &runs {
        assert_eq!(usage_of(r)["input_tokens"], 4444, "{r:?}");
        assert_eq!(usage_of(r)["output_tokens"], 10, "{r:?}");
    }
}

#[test]
fn output_md_holds_the_clis_final_answer_not_its_event_stream() {
    let claude = setup_cli("claude", "claude-cumulative");
    let codex = setup_cli("codex", "codex-cumulative");

    let outs = [claude.task(&[]), codex.task(&[])];

    for (env, out) in [(&claude, &outs[0]), (&codex, &outs[1])] {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
        let first = &env.runs()[0];
        let answer = std::fs::read_to_string(&first["output_path"]).unwrap();
        assert_eq!(answer, "answer 1");
    }
}

#[test]
fn a_codex_usage_limit_is_waited_out_not_charged_as_a_restart() {
    let env = setup_cli("codex", "codex-limit");
    env.no_restarts();

    let out = env.task(&[]);

    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(env.runs().len(), 2);
    assert!(
        env.has("WARNING", "usage limit reached on root"),
        "{:?}",
        env.bus()
    );
}

#[test]
fn a_gemini_rate_limit_is_waited_out_not_charged_as_a_restart() {
    let env = setup_cli("gemini", "gemini-limit");
    env.no_restarts();

    let out = env.task(&[]);

    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(env.runs().len(), 2);
    assert!(
        env.has("WARNING", "usage limit reached on root"),
        "{:?}",
        env.bus()
    );
}

#[test]
fn an_auth_failure_fails_the_task_at_once_with_its_cause() {
    let env = setup_cli("codex", "codex-auth");

    let out = env.task(&[]);

    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(
        err.contains("authentication failed") && err.contains("401"),
        "{err}"
    );
    assert_eq!(env.runs().len(), 1, "restarted after an auth failure");
    assert_eq!(env.runs()[0]["failure"], "authentication failed");
}

#[test]
fn a_transient_error_is_retried_with_backoff_and_not_charged() {
    let env = setup_cli("claude", "claude-overloaded");
    env.no_restarts();

    let out = env.task(&[]);

    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(env.runs().len(), 3);
    assert!(env.has("WARNING", "retry 1 of 3 in 1s"), "{:?}", env.bus());
    assert!(env.has("WARNING", "retry 2 of 3 in 2s"), "{:?}", env.bus());
}

#[test]
fn a_backend_failing_after_output_is_degraded_for_every_task_and_the_next_one_runs() {
    // Arrange: `bad` prints, then fails authentication; `good` finishes at once.
    let env = setup(
        "agent_order = [\"bad\", \"good\"]",
        &[("bad", "codex-auth"), ("good", "done-after 1")],
    );
    let text = std::fs::read_to_string(&env.config).unwrap().replacen(
        "type = \"command\"",
        "type = \"codex\"",
        1,
    );
    std::fs::write(&env.config, text).unwrap();

    // Act: one task, then another in the same projects root.
    let first = env.task(&[]);
    let second = env.run(&["task", "p", "t2", "--objective", "Another thing."]);

    // Assert
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let runs = env.runs();
    assert_eq!(
        runs.iter().map(|r| r["agent"].as_str()).collect::<Vec<_>>(),
        ["bad", "good"]
    );
    assert!(
        env.has("WARNING", "backend bad authentication failed"),
        "{:?}",
        env.bus()
    );
    let t2_runs: Vec<String> = std::fs::read_dir(env.root.join("p/t2/runs"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| std::fs::read_to_string(e.path().join("run-info.yaml")).unwrap())
        .collect();
    assert_eq!(t2_runs.len(), 1);
    assert!(t2_runs[0].contains("agent: \"good\""), "{}", t2_runs[0]);
}

#[test]
fn a_backend_that_cannot_start_fails_the_task_at_once_with_its_cause() {
    let env = setup("max_restarts = 5", &[("root", "never")]);
    let text = std::fs::read_to_string(&env.config).unwrap().replace(
        "command = [\"sh\", ",
        "command = [\"/nonexistent/agent-cli\", ",
    );
    std::fs::write(&env.config, text).unwrap();

    let out = env.task(&[]);

    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(
        err.contains("could not start") && err.contains("/nonexistent/agent-cli"),
        "{err}"
    );
    assert_eq!(env.runs().len(), 1);
}

#[test]
fn a_task_prints_a_line_per_event_and_json_is_one_real_object() {
    let env = setup("max_restarts = 5", &[("root", "done-after 2")]);

    let out = env.run(&["--json", "task", "p", "t", "--objective", "Do it twice."]);

    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    for event in [
        "START",
        "STOP",
        "restarting the root agent",
        "task complete",
    ] {
        assert!(err.contains(event), "{event} not printed:\n{err}");
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "completed");
    assert_eq!(v["runs"], 2);
    assert_eq!(v["code"], 0);
}

#[test]
fn a_silent_tool_call_that_keeps_writing_is_busy_not_stuck() {
    let env = setup(
        "stuck_threshold = 1\nidle_threshold = 1\nmax_restarts = 0",
        &[("root", "busy-silent")],
    );

    let out = env.task(&[]);

    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let runs = env.runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["ended"], "exited", "{runs:?}");
}

#[test]
fn a_root_waiting_on_a_chatty_child_is_not_stuck() {
    let env = setup(
        "stuck_threshold = 1\nidle_threshold = 1\nmax_restarts = 0",
        &[("root", "wait-on-chatty"), ("chatty", "chatty")],
    );

    let out = env.task(&[]);

    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let runs = env.runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs.iter().all(|r| r["ended"] == "exited"), "{runs:?}");
}

#[test]
fn an_idle_agent_is_killed_and_the_loop_counts_it() {
    let env = setup(
        "idle_threshold = 1\nstuck_threshold = 100\nmax_restarts = 0",
        &[("root", "hang")],
    );

    let out = env.task(&[]);

    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(env.runs()[0]["ended"], "idle");
    assert!(env.has("WARNING", "idle: nothing moved"), "{:?}", env.bus());
}

/// A one-route HTTP server on loopback answering every request with `status` and `body`; it
/// keeps each request (head and body) it was sent.
struct FakeProvider {
    url: String,
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

fn fake_provider(status: u16, body: &'static str) -> FakeProvider {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut head, mut len) = (String::new(), 0usize);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut req_body = vec![0; len];
            let _ = reader.read_exact(&mut req_body);
            log.lock()
                .unwrap()
                .push(format!("{head}\n{}", String::from_utf8_lossy(&req_body)));
            let reply = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    FakeProvider { url, seen }
}

/// A config whose one backend is longrun's Perplexity agent against `provider`.
fn setup_perplexity(provider: &FakeProvider) -> Env {
    let env = setup("max_restarts = 2", &[("root", "never")]);
    let text = format!(
        "projects_root = \"{}\"\nrestart_pause = 0.1\nagent_order = [\"perplexity\"]\n\
         backend \"perplexity\" {{\n  token = \"pplx-test-key\"\n  args = [\"--model\", \"sonar\"]\n  env = {{ PERPLEXITY_BASE_URL = \"{}\" }}\n}}\n",
        env.root.display(),
        provider.url
    );
    std::fs::write(&env.config, text).unwrap();
    env
}

#[test]
fn the_perplexity_agent_answers_a_research_task_with_its_sources_and_spend() {
    let provider = fake_provider(
        200,
        r#"{"id":"r1","model":"sonar","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Oolong is a partly oxidised tea.\n\nSources\n- https://example.com/oolong"}}],"usage":{"prompt_tokens":1200,"completion_tokens":300,"total_tokens":1500}}"#,
    );
    let env = setup_perplexity(&provider);

    let out = env.run(&[
        "task",
        "p",
        "t",
        "--agent",
        "perplexity",
        "--objective",
        "What is oolong?",
    ]);

    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let runs = env.runs();
    assert_eq!(runs.len(), 1);
    let answer = std::fs::read_to_string(&runs[0]["output_path"]).unwrap();
    assert!(answer.contains("partly oxidised") && answer.contains("https://example.com/oolong"));
    let usage = usage_of(&runs[0]);
    assert_eq!(
        (
            usage["input_tokens"].as_u64(),
            usage["output_tokens"].as_u64()
        ),
        (Some(1200), Some(300))
    );
    // sonar: $1 per million tokens in and out.
    assert!(
        (usage["cost_usd"].as_f64().unwrap() - 0.0015).abs() < 1e-9,
        "{usage}"
    );
    let seen = provider.seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].starts_with("POST /chat/completions"), "{}", seen[0]);
    assert!(
        seen[0]
            .to_ascii_lowercase()
            .contains("authorization: bearer pplx-test-key")
    );
    assert!(seen[0].contains("What is oolong?"), "{}", seen[0]);
}

#[test]
fn a_perplexity_auth_failure_fails_the_task_with_its_cause() {
    let provider = fake_provider(
        401,
        r#"{"error":{"message":"Invalid API key","type":"invalid_api_key"}}"#,
    );
    let env = setup_perplexity(&provider);

    let out = env.run(&[
        "task",
        "p",
        "t",
        "--agent",
        "perplexity",
        "--objective",
        "What is oolong?",
    ]);

    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(err.contains("authentication failed"), "{err}");
    assert_eq!(env.runs().len(), 1);
    assert!(!err.contains("pplx-test-key"), "the key was echoed: {err}");
}
