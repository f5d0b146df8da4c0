//! `make bench-runner`: what the runner (`longrun task`) costs on top of a plain shell loop
//! over the same fake agent (`cli/tests/fixtures/fake-agent.sh`, mode `work`):
//! - the overhead per restart: a task whose agent exits at once, restarted N times with no
//!   pause, against `while [ ! -f DONE ]; do agent; done` doing the same N starts;
//! - 100 tasks at once, each agent working 2 s per start and writing DONE at its 3rd start,
//!   1 s between starts in both loops.
//!
//! Usage: bench_runner LONGRUN_BIN [BENCHMARKS.md]. Updates the "Runner" section.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use longrun_tests::replace_section;

const SECTION: &str = "## Runner: coding agents under `longrun task`";

fn fake_agent() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cli/tests/fixtures/fake-agent.sh")
        .canonicalize()
        .expect("the fake agent")
        .display()
        .to_string()
}

/// A config with one `command` backend running the fake agent in `mode`.
fn config(dir: &Path, mode: &str, settings: &str) -> PathBuf {
    let args: Vec<String> = mode.split(' ').map(|a| format!("\"{a}\"")).collect();
    let text = format!(
        "projects_root = \"{root}\"\n{settings}\nagent_order = [\"fake\"]\n\
         backend \"fake\" {{\n  type = \"command\"\n  command = [\"sh\", \"{agent}\", {args}]\n  prompt = \"stdin\"\n}}\n",
        root = dir.join("projects").display(),
        agent = fake_agent(),
        args = args.join(", ")
    );
    let path = dir.join("config.hcl");
    std::fs::write(&path, text).unwrap();
    path
}

fn longrun_task(bin: &str, config: &Path, task: &str) -> Child {
    Command::new(bin)
        .args(["task", "bench", task, "--objective", "Work."])
        .env("LONGRUN_CONFIG", config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("longrun task")
}

/// The shell loop people write: start the agent until DONE exists, `pause` apart.
fn shell_loop(task_dir: &Path, mode: &str, pause: &str) -> Child {
    std::fs::create_dir_all(task_dir).unwrap();
    let script = format!(
        "while [ ! -f DONE ]; do sh {agent} {mode} </dev/null >>out.txt 2>&1; [ -f DONE ] || sleep {pause}; done",
        agent = fake_agent()
    );
    Command::new("sh")
        .args(["-c", &script])
        .current_dir(task_dir)
        .env("LONGRUN_TASK_DIR", task_dir)
        .stdin(Stdio::null())
        .spawn()
        .expect("sh")
}

fn wait_all(children: Vec<Child>) -> Duration {
    let started = Instant::now();
    for mut c in children {
        let st = c.wait().unwrap();
        assert!(st.success(), "a loop failed: {st}");
    }
    started.elapsed()
}

/// Seconds per start over `starts` immediate exits: (longrun, shell).
fn restart_overhead(bin: &str, starts: u32) -> (f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let mode = format!("work {starts} 0");
    let cfg = config(
        dir.path(),
        &mode,
        &format!("restart_pause = 0\nmax_restarts = {starts}"),
    );
    let t0 = Instant::now();
    wait_all(vec![longrun_task(bin, &cfg, "restarts")]);
    let longrun = t0.elapsed().as_secs_f64() / f64::from(starts);
    let t0 = Instant::now();
    wait_all(vec![shell_loop(&dir.path().join("shell"), &mode, "0")]);
    let shell = t0.elapsed().as_secs_f64() / f64::from(starts);
    (longrun, shell)
}

/// Wall seconds for `tasks` tasks at once: (longrun, shell).
fn many_tasks(bin: &str, tasks: u32) -> (f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let mode = "work 3 2";
    let cfg = config(dir.path(), mode, "restart_pause = 1\nmax_restarts = 10");
    let t0 = Instant::now();
    let loops = (0..tasks)
        .map(|i| longrun_task(bin, &cfg, &format!("t{i}")))
        .collect();
    wait_all(loops);
    let longrun = t0.elapsed().as_secs_f64();
    for i in 0..tasks {
        let done = dir.path().join(format!("projects/bench/t{i}/DONE"));
        assert!(done.exists(), "task {i} did not finish");
    }
    let t0 = Instant::now();
    let loops = (0..tasks)
        .map(|i| shell_loop(&dir.path().join(format!("shell/t{i}")), mode, "1"))
        .collect();
    wait_all(loops);
    (longrun, t0.elapsed().as_secs_f64())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let bin = args
        .next()
        .expect("usage: bench_runner LONGRUN_BIN [BENCHMARKS.md]");
    let out = args.next().unwrap_or_else(|| "BENCHMARKS.md".into());
    let starts = 100;
    let (per_start, per_start_sh) = restart_overhead(&bin, starts);
    let tasks = 100;
    let (wall, wall_sh) = many_tasks(&bin, tasks);
    let ideal = 3.0 * 2.0 + 2.0 * 1.0;
    let section = format!(
        "{SECTION}\n\n\
         Reproduce with `make bench-runner` (`cargo build -p longrun` then \
         `cargo run -p longrun-tests --bin bench_runner -- target/debug/longrun BENCHMARKS.md`; the dev build, \
         whose dependencies are optimised: the runner's cost is processes and files, not compute). \
         The agent is `cli/tests/fixtures/fake-agent.sh` in mode `work`; the shell loop is \
         `while [ ! -f DONE ]; do sh fake-agent.sh …; sleep $pause; done` over the same agent, \
         measured in the same run.\n\n\
         | scenario | `longrun task` | shell `while` loop | longrun's own cost |\n\
         |---|---|---|---|\n\
         | one task, {starts} starts of an agent that exits at once, no pause | {:.1} ms per start | {:.1} ms per start | {:.1} ms per restart (run folder, run-info, bus posts, DONE and child checks) |\n\
         | {tasks} tasks at once, 3 starts each, 2 s of work per start, 1 s pause (ideal {ideal:.0} s) | {wall:.1} s | {wall_sh:.1} s | {:+.1} s |\n",
        per_start * 1e3,
        per_start_sh * 1e3,
        (per_start - per_start_sh) * 1e3,
        wall - wall_sh,
    );
    replace_section(&out, SECTION, &section);
    println!("{section}");
}
