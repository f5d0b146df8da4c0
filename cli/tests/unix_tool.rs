//! `longrun` as a Unix tool: a reader that leaves early is no error, the exit code says how a
//! run ended, `--json` is JSON alone, colour only on a terminal, and `serve` says what it does.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_longrun");
const TOKEN: &str = "lr_unix_tool_test_token";

/// A planner answer that writes `a.md` and claims done with it as evidence.
const DONE: &str = r#"{"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "wrote it", "remaining_work": [], "completion_evidence": ["a.md"]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "a.md", "content": "A"}}]}}"#;
/// A planner answer that is never done.
const NOT_DONE: &str = r#"{"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "working {{iteration}}", "remaining_work": ["more"]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "n{{iteration}}.md", "content": "N"}}]}}"#;

/// `longrun serve` on a free port with the given scripted models, killed when dropped.
struct Server {
    child: Child,
    addr: String,
    dir: tempfile::TempDir,
}

impl Server {
    /// `scripts`: (name, script JSON); each is allowed as `script:DIR/name.json`.
    fn start(scripts: &[(&str, String)]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(BIN);
        cmd.args(["serve", "--port", "0", "--data-dir"])
            .arg(dir.path().join("data"))
            .env("LONGRUN_TOKENS", format!("{TOKEN}:alice"));
        for (name, script) in scripts {
            let path = dir.path().join(format!("{name}.json"));
            std::fs::write(&path, script).unwrap();
            cmd.arg("--model").arg(format!("script:{}", path.display()));
        }
        let (child, addr) = support::spawn_serve(cmd);
        Server { child, addr, dir }
    }

    fn model(&self, name: &str) -> String {
        format!(
            "script:{}",
            self.dir.path().join(format!("{name}.json")).display()
        )
    }

    /// The CLI against this server.
    fn longrun(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args([
            "--api-url",
            &format!("http://{}", self.addr),
            "--token",
            TOKEN,
        ])
        .args(args)
        .env_remove("NO_COLOR");
        cmd
    }

    fn output(&self, args: &[&str]) -> Output {
        self.longrun(args).output().unwrap()
    }

    /// Starts a run of `model`; its id.
    fn start_run(&self, model: &str, extra: &[&str]) -> String {
        let model = self.model(model);
        let mut args = vec!["--json", "run", "--model", &model];
        args.extend_from_slice(extra);
        args.push("test the exit codes");
        let out = self.output(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let run: Value = serde_json::from_slice(&out.stdout).unwrap();
        run["id"].as_str().unwrap().to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

fn script(planner: &[&str]) -> String {
    format!(r#"{{"planner": [{}]}}"#, planner.join(","))
}

#[test]
fn a_reader_that_leaves_early_ends_list_report_and_status_quietly_with_exit_0() {
    // Arrange: a server with one run that has ended, so every command has lines to print.
    let server = Server::start(&[("done", script(&[DONE]))]);
    let id = server.start_run("done", &[]);
    let followed = server.output(&["events", &id, "--follow"]);
    assert!(followed.status.success(), "{}", text(&followed.stderr));

    for args in [
        vec!["list"],
        vec!["--json", "list"],
        vec!["report", &id],
        vec!["--json", "report", &id],
        vec!["status", &id],
        vec!["events", &id],
    ] {
        // Act: stdout is a pipe whose reader has already gone (`longrun … | true`).
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = server
            .longrun(&args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();

        // Assert
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?} said something: {err}");
    }
}

#[test]
fn run_follow_exits_with_a_code_for_each_way_a_run_ends_and_json_is_json_lines() {
    // Arrange: models that complete, stop at their budget, fail, and ask the user.
    let asks = r#"{"content": {"status": {"exit_signal": false, "needs_user_input": true, "blocking_questions": ["Which teas?"], "progress_summary": "need input", "remaining_work": ["all"]}}}"#;
    let auth = r#"{"error": {"kind": "auth", "message": "invalid api key"}}"#;
    let server = Server::start(&[
        ("done", script(&[DONE])),
        ("never", script(&[NOT_DONE])),
        ("auth", script(&[auth])),
        ("asks", script(&[asks])),
    ]);
    let cases = [
        ("done", vec![], 0, "run_completed"),
        ("never", vec!["--max-iterations", "1"], 4, "run_stopped"),
        ("auth", vec![], 3, "run_failed"),
        ("asks", vec![], 6, "run_waiting"),
    ];
    for (model, extra, code, last) in cases {
        // Act
        let model_ref = server.model(model);
        let mut args = vec!["--json", "run", "--follow", "--model", &model_ref];
        args.extend_from_slice(&extra);
        args.push("how does it end?");
        let out = server.output(&args);

        // Assert: the code says how it ended; stdout is the run's events, one object a line.
        assert_eq!(
            out.status.code(),
            Some(code),
            "{model}: {}",
            text(&out.stderr)
        );
        let stdout = text(&out.stdout);
        let events: Vec<Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{model}: {l:?}: {e}")))
            .collect();
        assert_eq!(events[0]["type"], "run_created", "{model}: {stdout}");
        assert_eq!(events.last().unwrap()["type"], last, "{model}: {stdout}");
    }
}

#[test]
fn following_a_canceled_run_exits_5() {
    // Arrange: a run whose model is slow and never done, canceled.
    let slow = NOT_DONE.replacen("{\"content\"", "{\"latency_ms\": 1500, \"content\"", 1);
    let server = Server::start(&[("slow", script(&[&slow]))]);
    let id = server.start_run("slow", &[]);
    let canceled = server.output(&["cancel", &id]);
    assert!(canceled.status.success(), "{}", text(&canceled.stderr));

    // Act
    let out = server.output(&["events", &id, "--follow"]);

    // Assert
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("run_canceled"));
}

#[test]
fn report_and_config_check_print_text_for_a_person_and_json_with_json() {
    // Arrange: an ended run, and a runner config.
    let server = Server::start(&[("done", script(&[DONE]))]);
    let id = server.start_run("done", &[]);
    assert!(server.output(&["events", &id, "--follow"]).status.success());
    let config = server.dir.path().join("config.hcl");
    std::fs::write(&config, "max_restarts = 7\nagent_order = [\"claude\"]\n").unwrap();

    // Act
    let report = server.output(&["report", &id]);
    let report_json = server.output(&["--json", "report", &id]);
    let check = |json: bool| {
        let mut cmd = server.longrun(if json {
            &["--json", "config", "check"]
        } else {
            &["config", "check"]
        });
        cmd.env("LONGRUN_CONFIG", &config)
            .env_remove("LONGRUN_PROJECTS_ROOT");
        cmd.output().unwrap()
    };
    let (check_text, check_json) = (check(false), check(true));

    // Assert: text is not JSON and reads as lines; JSON is JSON.
    let report = text(&report.stdout);
    assert!(serde_json::from_str::<Value>(&report).is_err(), "{report}");
    assert!(report.contains("== Report:"), "{report}");
    assert!(report.contains("status:      completed"), "{report}");
    let v: Value = serde_json::from_slice(&report_json.stdout).unwrap();
    assert_eq!(v["status"], "completed");
    assert!(check_text.status.success(), "{}", text(&check_text.stderr));
    let check_text = text(&check_text.stdout);
    assert!(!check_text.contains("RunnerConfig {"), "{check_text}");
    assert!(
        check_text.contains(&format!("{}: valid", config.display())),
        "{check_text}"
    );
    assert!(
        check_text
            .lines()
            .any(|l| l.starts_with("max_restarts") && l.trim_end().ends_with(" 7")),
        "{check_text}"
    );
    let v: Value = serde_json::from_slice(&check_json.stdout).unwrap();
    assert_eq!(v["max_restarts"], 7);
    assert_eq!(v["agent_order"], serde_json::json!(["claude"]));
}

/// `longrun ARGS` on a terminal (a pseudo-terminal made by `script`), with `NO_COLOR` as given;
/// what the terminal showed.
fn on_a_terminal(args: &str, no_color: Option<&str>) -> String {
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &format!("{BIN} {args}"), "/dev/null"])
        .stdin(Stdio::null())
        .env_remove("NO_COLOR");
    if let Some(v) = no_color {
        cmd.env("NO_COLOR", v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn output_is_coloured_on_a_terminal_but_not_with_no_color_nor_in_a_pipe() {
    // Arrange: the built-in demo script, in-process.
    let dir = tempfile::tempdir().unwrap();
    let args = format!(
        "run --embedded --data-dir {} 'a tea guide'",
        dir.path().display()
    );

    // Act
    let terminal = on_a_terminal(&args, None);
    let no_color = on_a_terminal(&args, Some("1"));
    let piped = Command::new(BIN)
        .args(["run", "--embedded", "--data-dir"])
        .arg(dir.path().join("again"))
        .arg("a tea guide")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();

    // Assert
    assert!(
        terminal.contains("\x1b[32mcompleted\x1b[0m"),
        "{terminal:?}"
    );
    assert!(
        no_color.contains("completed") && !no_color.contains('\x1b'),
        "{no_color:?}"
    );
    let piped = text(&piped.stdout);
    assert!(
        piped.contains("completed") && !piped.contains('\x1b'),
        "{piped:?}"
    );
}

/// Reads `serve`'s stdout up to the line that says how it stops; those lines.
fn start_lines(child: &mut Child) -> Vec<String> {
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut said = vec![];
    for line in lines.by_ref().map_while(Result::ok) {
        let last = line.starts_with("Ctrl-C or SIGTERM stops it");
        said.push(line);
        if last {
            break;
        }
    }
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    said
}

/// SIGTERM, and the exit it makes by itself.
fn stop(child: &mut Child) {
    let pid = child.id().to_string();
    assert!(Command::new("kill").arg(&pid).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn serve_says_where_it_listens_on_what_data_with_which_models_and_limits_and_logs_at_info() {
    // Arrange: serve with its stderr in a file, RUST_LOG unset.
    let dir = tempfile::tempdir().unwrap();
    let data: PathBuf = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let mut child = Command::new(BIN)
        .args(["serve", "--port", "0", "--active-limit", "9", "--data-dir"])
        .arg(&data)
        .env("LONGRUN_TOKENS", format!("{TOKEN}:alice"))
        .env_remove("RUST_LOG")
        .env_remove("LONGRUN_LOG_FORMAT")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();

    // Act: what it says at start; then a run to its end, and a clean stop.
    let said = start_lines(&mut child);
    let addr = said
        .iter()
        .find_map(|l| l.split_once("listening on http://"))
        .map(|(_, rest)| rest.split_whitespace().next().unwrap().to_string())
        .unwrap_or_else(|| panic!("{said:#?}"));
    let cli = |args: &[&str]| {
        Command::new(BIN)
            .args(["--api-url", &format!("http://{addr}"), "--token", TOKEN])
            .args(args)
            .output()
            .unwrap()
    };
    let followed = cli(&["run", "--follow", "a tea guide"]);
    stop(&mut child);

    // Assert: the address line first, then the console, the API, the data, the models and
    // the limits; the log has the run's iterations at info.
    let said = said.join("\n");
    assert!(
        said.contains(&format!("console    http://{addr}/"))
            || said.contains("console    not in this build"),
        "{said}"
    );
    assert!(
        said.contains(&format!("API        http://{addr}/v1")),
        "{said}"
    );
    let data = std::fs::canonicalize(&data).unwrap();
    assert!(
        said.contains(&format!("data       {}", data.display())),
        "{said}"
    );
    assert!(
        said.contains("models     script:") && said.contains("demo script"),
        "{said}"
    );
    assert!(said.contains("limits     9 active runs per user"), "{said}");
    assert_eq!(
        followed.status.code(),
        Some(0),
        "{}",
        text(&followed.stderr)
    );
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("INFO") && l.contains("iteration committed")),
        "{log}"
    );
}
