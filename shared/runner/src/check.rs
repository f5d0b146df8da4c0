//! A completion criterion's command (`{"check": "command", "run": …}`) in an agent run's task
//! folder: `sh -c` in a process group of its own, its output's tail kept, killed with its
//! group when it outlives the timeout.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use longrun_ports::CheckRun;

use crate::process::{Signal, signal_group};

/// How long a check may take before it is killed: a test suite, not a service.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(600);

/// The output a check keeps: its last this many bytes.
const TAIL_BYTES: usize = 4_096;

/// Runs `command` in `dir` until it exits or `timeout` passes. Blocking.
pub fn run_check(dir: &Path, command: &str, timeout: Duration) -> std::io::Result<CheckRun> {
    let mut child = Command::new("sh")
        .arg("-c")
        // Both streams into one pipe, in the order they were written.
        .arg(format!("exec 2>&1; {command}"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    let mut out = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut tail: Vec<u8> = vec![];
        let mut buf = [0u8; 8_192];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            tail.extend_from_slice(&buf[..n]);
            if tail.len() > 2 * TAIL_BYTES {
                tail.drain(..tail.len() - TAIL_BYTES);
            }
        }
        let from = tail.len().saturating_sub(TAIL_BYTES);
        String::from_utf8_lossy(&tail[from..]).into_owned()
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() >= timeout {
            // The whole group: a test runner's children hold the pipe open too.
            signal_group(child.id(), Signal::Kill);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let tail = reader.join().unwrap_or_default();
    let (exit_code, detail) = match status {
        Some(s) => match s.code() {
            Some(code) => (Some(code), String::new()),
            None => (None, "killed by a signal".to_string()),
        },
        None => (None, format!("timed out after {} s", timeout.as_secs())),
    };
    Ok(CheckRun {
        exit_code,
        tail,
        detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_reports_its_exit_code_and_the_end_of_its_output() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x.txt"), "oolong").unwrap();

        let ok = run_check(dir.path(), "cat x.txt", CHECK_TIMEOUT).unwrap();
        let red = run_check(dir.path(), "echo failing >&2; exit 3", CHECK_TIMEOUT).unwrap();

        assert_eq!(ok.exit_code, Some(0));
        assert_eq!(ok.tail, "oolong");
        assert_eq!(red.exit_code, Some(3));
        assert_eq!(red.tail, "failing\n");
    }

    #[test]
    fn a_check_that_outlives_its_timeout_is_killed_with_its_children() {
        let dir = tempfile::tempdir().unwrap();

        let hung = run_check(
            dir.path(),
            "sleep 30 & sleep 30",
            Duration::from_millis(300),
        )
        .unwrap();

        assert_eq!(hung.exit_code, None);
        assert!(hung.detail.contains("timed out"), "{}", hung.detail);
    }

    #[test]
    fn only_the_tail_of_a_long_output_is_kept() {
        let dir = tempfile::tempdir().unwrap();

        let long = run_check(dir.path(), "seq 1 100000", CHECK_TIMEOUT).unwrap();

        assert!(long.tail.len() <= TAIL_BYTES);
        assert!(long.tail.ends_with("100000\n"));
    }
}
