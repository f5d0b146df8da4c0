//! `longrun run --embedded --json` prints a report for any script, hostile ones included.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use serde_json::Value;

fn run_script(script: &str, extra: &[&str]) -> (i32, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    std::fs::write(&path, script).unwrap();
    let model = format!("script:{}", path.display());
    let out = Command::new(env!("CARGO_BIN_EXE_longrun"))
        .args(["run", "--embedded", "--json", "--model", &model])
        .args(extra)
        .arg("test the loop")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let report = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), report, stderr)
}

fn assert_report(report: &Value, status: &str, stop: &str) {
    assert_eq!(report["status"], status, "{report:#}");
    assert_eq!(report["stopping_reason"]["type"], stop, "{report:#}");
    assert!(report["metrics"]["iterations"].is_u64());
    assert!(report["metrics"]["total_tokens"].is_u64());
    assert!(report["metrics"]["total_cost_usd"].is_f64());
    assert!(report["what_changed"]["created"].is_array());
    assert!(report["headline"].is_string() && report["summary"].is_string());
}

#[test]
fn prose_instead_of_json_ends_in_repeated_error_with_a_report() {
    let (code, report, err) = run_script(
        r#"{"planner": [{"content": "I think we are done here!"}]}"#,
        &[],
    );
    assert_eq!(code, 4, "a stopped run exits 4: {err}");
    assert_report(&report, "stopped", "repeated_error");
    assert_eq!(report["metrics"]["iterations"], 5);
    assert_eq!(
        report["metrics"]["llm_calls"], 10,
        "one corrective retry per iteration"
    );
}

#[test]
fn truncated_json_and_wrong_types_are_survived() {
    let script = r#"{"planner": [{"content": "{\"status\": {\"exit_signal\": tr"},
        {"content": {"status": {"exit_signal": "yes", "needs_user_input": false, "progress_summary": 5}}},
        {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "ok", "remaining_work": [], "completion_evidence": ["a.md"]},
                     "tool_calls": [{"name": "doc_write", "args": {"path": "a.md", "content": "A"}}]}}]}"#;
    let (code, report, err) = run_script(script, &[]);
    assert_eq!(code, 0, "{err}");
    assert_report(&report, "completed", "completed");
    assert_eq!(
        report["metrics"]["iterations"], 2,
        "the corrective retry counts inside the iteration"
    );
}

#[test]
fn endless_repetition_stops_with_no_progress() {
    let script = r#"{"planner": [{"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "searching", "remaining_work": ["x"]},
        "tool_calls": [{"name": "doc_search", "args": {"query": "tea"}}]}}]}"#;
    let (code, report, _) = run_script(script, &[]);
    assert_eq!(code, 4, "a stopped run exits 4");
    assert_report(&report, "stopped", "no_progress");
    assert!(report["metrics"]["iterations"].as_u64().unwrap() <= 3);
}

#[test]
fn an_auth_error_fails_the_run_at_once() {
    let (code, report, _) = run_script(
        r#"{"planner": [{"error": {"kind": "auth", "message": "invalid api key"}}]}"#,
        &[],
    );
    assert_eq!(code, 3, "a failed run exits 3");
    assert_report(&report, "failed", "error");
    assert_eq!(report["metrics"]["iterations"], 1);
    assert!(
        report["stopping_reason"]["detail"]
            .as_str()
            .unwrap()
            .contains("invalid api key")
    );
}

#[test]
fn retryable_errors_are_retried_then_count_as_iteration_errors() {
    let script = r#"{"planner": [{"error": {"kind": "rate_limited", "message": "slow down"}}]}"#;
    let (code, report, _) = run_script(script, &[]);
    assert_eq!(code, 4, "a stopped run exits 4");
    assert_report(&report, "stopped", "repeated_error");
    assert_eq!(
        report["metrics"]["llm_calls"], 0,
        "failed calls cost nothing"
    );
}

#[test]
fn a_transient_error_followed_by_success_completes() {
    let script = r#"{"planner": [{"error": {"kind": "server", "message": "503"}},
        {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "ok", "remaining_work": [], "completion_evidence": ["a.md"]},
                     "tool_calls": [{"name": "doc_write", "args": {"path": "a.md", "content": "A"}}]}}]}"#;
    let (_, report, _) = run_script(script, &[]);
    assert_report(&report, "completed", "completed");
    assert_eq!(
        report["metrics"]["iterations"], 1,
        "the retry happened inside the call"
    );
}

#[test]
fn unknown_tools_and_bad_arguments_without_repair_end_in_no_progress() {
    let script = r#"{"planner": [{"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "trying", "remaining_work": ["x"]},
        "tool_calls": [{"name": "rm_rf", "args": {}}, {"name": "doc_write", "args": {"path": 5}}]}}],
        "repair": [{"content": "no idea"}]}"#;
    let (_, report, _) = run_script(script, &[]);
    assert_report(&report, "stopped", "no_progress");
}

#[test]
fn a_planner_calling_a_missing_tool_every_iteration_stops_as_repeated_error_naming_it() {
    // Progress every iteration (a new note) and a different action set each time: only the
    // tool breaker can stop it before the iteration cap.
    let script = r#"{"planner": [{"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "noting", "remaining_work": ["x"]},
        "tool_calls": [{"name": "web_magic", "args": {"q": "{{iteration}}"}},
                       {"name": "doc_write", "args": {"path": "n{{iteration}}.md", "content": "n"}}]}}],
        "repair": [{"content": "no idea"}]}"#;

    let (_, report, _) = run_script(script, &[]);

    assert_report(&report, "stopped", "repeated_error");
    assert_eq!(report["metrics"]["iterations"], 3);
    let detail = report["stopping_reason"]["detail"].as_str().unwrap();
    assert!(detail.contains("called tool `web_magic`"), "{detail}");
    assert!(detail.contains("unknown tool `web_magic`"), "{detail}");
}

#[test]
fn a_completion_claim_citing_a_document_never_written_does_not_complete() {
    let script = r#"{"planner": [{"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "done", "remaining_work": [], "completion_evidence": ["ghost.md"]},
        "tool_calls": [{"name": "doc_write", "args": {"path": "n{{iteration}}.md", "content": "n"}}]}}]}"#;

    let (_, report, _) = run_script(script, &["--max-iterations", "2"]);

    assert_report(&report, "stopped", "max_iterations");
}

#[test]
fn an_empty_script_fails_cleanly() {
    let (code, report, _) = run_script("{}", &[]);
    assert_eq!(code, 3, "a failed run exits 3");
    assert_report(&report, "failed", "error");
}

#[test]
fn a_question_leaves_the_run_waiting_on_the_user() {
    let script = r#"{"planner": [{"content": {"status": {"exit_signal": false, "needs_user_input": true, "blocking_questions": ["Which one?"], "progress_summary": "?", "remaining_work": ["x"]}}}]}"#;
    let (_, report, _) = run_script(script, &[]);
    assert_report(&report, "waiting_on_user", "waiting_on_user");
    assert_eq!(report["questions"][0], "Which one?");
}

#[test]
fn budget_flags_stop_a_run_that_would_go_on() {
    let script = r#"{"planner": [{"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "n", "remaining_work": ["x"]},
        "tool_calls": [{"name": "doc_write", "args": {"path": "n/{{iteration}}.md", "content": "{{iteration}}"}}]},
        "usage": {"input_tokens": 100, "output_tokens": 100}}]}"#;
    let (_, report, _) = run_script(script, &["--max-iterations", "3"]);
    assert_report(&report, "stopped", "max_iterations");
    assert_eq!(report["metrics"]["iterations"], 3);
    let (_, report, _) = run_script(script, &["--max-tokens", "500"]);
    assert_report(&report, "stopped", "budget");
    assert_eq!(report["metrics"]["total_tokens"], 600);
}

#[test]
fn a_negative_budget_is_a_one_line_error_and_exit_code_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    std::fs::write(&path, "{}").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_longrun"))
        .args([
            "run",
            "--embedded",
            "--json",
            "--max-tokens",
            "-5",
            "--model",
            &format!("script:{}", path.display()),
            "x",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("budgets.max_tokens") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn a_malformed_script_file_is_reported_not_panicked_on() {
    let (code, _, err) = run_script("{not json", &[]);
    assert_eq!(code, 1);
    assert!(err.contains("script") && err.contains("not valid"), "{err}");
}

#[test]
fn the_demo_completes_with_fan_out_repair_and_docs() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_longrun"))
        .args(["demo", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("status:      completed"), "{stdout}");
    assert!(stdout.contains("3 executors"), "{stdout}");
    assert!(stdout.contains("6 iterations"), "{stdout}");
    assert!(
        stdout.contains("notes/sources.md"),
        "the repaired call's doc exists: {stdout}"
    );
    // What the README promises is on screen: the refused call and its repair, the rejected
    // premature "done" with the gate's reason.
    assert!(stdout.contains("✗ call doc_write refused"), "{stdout}");
    assert!(stdout.contains("↻ repaired call doc_write ran"), "{stdout}");
    assert!(
        stdout.contains("premature \"done\" rejected by the exit gate: ")
            && stdout.contains("remaining_work"),
        "{stdout}"
    );
    // A criterion graded: the grader turns a claim down with its reason, then passes it.
    assert!(
        stdout.contains("✗ criterion c1 (grader) failed: Oolong has a brewing temperature"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "✓ criterion c1 (grader) passed: Each tea has a brewing temperature and a time."
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("criteria:\n  ✓ c1 gives a brewing temperature and time for each tea"),
        "{stdout}"
    );
    // The report a person reads: its title, the final call's narrative and the typed changes.
    assert!(stdout.contains("== Report: Complete: "), "{stdout}");
    assert!(
        stdout.contains("summary:     (written by the model)")
            && stdout.contains("You asked for a short field guide"),
        "{stdout}"
    );
    assert!(
        stdout.contains("document  guide.md           updated (iteration  6)"),
        "{stdout}"
    );
    assert!(stdout.contains("plan step s4"), "{stdout}");
    assert!(
        stdout.contains("link      guide.md derived from notes/green.md"),
        "{stdout}"
    );
    // Every follow-up command is pasteable: the binary and the data by full path.
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_longrun")).unwrap();
    let data = std::fs::canonicalize(dir.path()).unwrap();
    let serve = format!("{} serve --data-dir {}", exe.display(), data.display());
    assert!(stdout.contains(&serve), "{stdout}");
    assert!(
        stdout.contains(&format!("LONGRUN_TOKEN=$(cat {}/token)", data.display())),
        "{stdout}"
    );
}

#[test]
fn a_malformed_plan_step_is_refused_before_any_request() {
    let out = Command::new(env!("CARGO_BIN_EXE_longrun"))
        .args([
            "edit",
            "run_x",
            "--step",
            "s1:finished:Collect",
            "--api-url",
            "http://127.0.0.1:9",
            "--token",
            "t",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("status must be pending, in_progress, done or blocked")
            && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn the_permission_mode_reaches_an_embedded_run() {
    // Arrange: a plan with a write, under approve_plan.
    let script = r#"{"planner": [{"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "planned", "remaining_work": ["write"]},
        "plan_updates": [{"id": "s1", "title": "Write the note", "status": "pending"}],
        "tool_calls": [{"name": "doc_write", "args": {"path": "a.md", "content": "A"}}]}}]}"#;

    // Act
    let (code, report, err) = run_script(script, &["--mode", "approve_plan"]);

    // Assert: the first plan waits for approval and nothing was written.
    assert_eq!(code, 6, "a run waiting on the user exits 6: {err}");
    assert_report(&report, "waiting_on_user", "waiting_on_user");
    assert_eq!(report["metrics"]["iterations"], 1);
    assert_eq!(report["artifacts"]["documents"], serde_json::json!([]));
    let created: Vec<(&str, &str)> = report["what_changed"]["created"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].as_str().unwrap(), c["id"].as_str().unwrap()))
        .collect();
    assert_eq!(
        created,
        [("plan_step", "s1")],
        "the plan is the run's; the write is held"
    );
}

#[test]
fn a_write_from_the_repair_pass_waits_for_approval_under_per_write() {
    // Arrange: the planner's write has bad arguments; the repair pass corrects it.
    let script = r#"{"planner": [{"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "writing", "remaining_work": ["write"]},
        "tool_calls": [{"name": "doc_write", "args": {"path": 5}}]}}],
        "repair": [{"content": {"tool_calls": [{"name": "doc_write", "args": {"path": "fixed.md", "content": "F"}}]}}]}"#;

    // Act
    let (code, report, err) = run_script(script, &["--mode", "per_write"]);

    // Assert: the repaired write is held like any other write.
    assert_eq!(code, 6, "a run waiting on the user exits 6: {err}");
    assert_report(&report, "waiting_on_user", "waiting_on_user");
    assert_eq!(report["what_changed"]["created"], serde_json::json!([]));
}
