//! Child processes: one git command, or one check command in a process group of its own that
//! is killed whole when it outlives its timeout.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use longrun_domain::repo::CheckResult;
use longrun_ports::git::GitError;
use tokio::io::AsyncReadExt;
use tokio::process::Command;

/// The output a check keeps: its last this many bytes (a test runner's verdict is at the end).
pub const CHECK_TAIL_BYTES: usize = 8_192;

/// After a check exits, how long its output may still take to drain: a background process it
/// left holding the pipe must not hold the merge queue.
const DRAIN: Duration = Duration::from_secs(2);

/// What a git command printed and how it exited.
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }
}

/// Runs `program args…` in `dir` with `envs`, no stdin, and waits for it.
pub async fn run(
    program: &Path, dir: &Path, args: &[&str], envs: &[(&str, &str)],
) -> Result<Output, GitError> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound if !dir.exists() => {
                GitError::NotARepository(dir.display().to_string())
            }
            _ => GitError::Io(format!("{}: {e}", program.display())),
        })?;
    Ok(Output {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Runs `command` with `sh -c` in `dir`, stdout and stderr into one pipe, in a process group of
/// its own; kills the group at `timeout`, and after a normal exit too (a check leaves nothing
/// running behind it).
pub async fn run_check(
    dir: &Path, command: &str, timeout: Duration,
) -> Result<CheckResult, GitError> {
    if !dir.is_dir() {
        return Err(GitError::Invalid(format!(
            "cannot run a check in {}: no such directory",
            dir.display()
        )));
    }
    let started = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("exec 2>&1; {command}"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| GitError::Io(format!("sh: {e}")))?;
    let pgid = child.id();
    let tail = Arc::new(Mutex::new(Vec::<u8>::new()));
    let reader = child.stdout.take().map(|mut out| {
        let tail = tail.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 8_192];
            while let Ok(n) = out.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                if let Ok(mut t) = tail.lock() {
                    t.extend_from_slice(&buf[..n]);
                    let excess = t.len().saturating_sub(CHECK_TAIL_BYTES);
                    t.drain(..excess);
                }
            }
        })
    });
    let waited = tokio::time::timeout(timeout, child.wait()).await;
    if let Some(pgid) = pgid {
        kill_group(pgid).await;
    }
    let (exit_code, timed_out) = match waited {
        Ok(Ok(status)) => (status.code(), false),
        Ok(Err(e)) => return Err(GitError::Io(format!("waiting for the check: {e}"))),
        Err(_) => {
            let _ = child.wait().await;
            (None, true)
        }
    };
    if let Some(reader) = reader {
        let _ = tokio::time::timeout(DRAIN, reader).await;
    }
    let output_tail = tail
        .lock()
        .map(|t| String::from_utf8_lossy(&t).into_owned())
        .unwrap_or_default();
    Ok(CheckResult {
        command: command.to_string(),
        exit_code,
        timed_out,
        output_tail,
        duration_ms: started.elapsed().as_millis() as u64,
    })
}

/// SIGKILL to every process of group `pgid` (`kill` the binary: the workspace forbids unsafe
/// code, so no `killpg`). A group already gone is no error.
async fn kill_group(pgid: u32) {
    if pgid <= 1 {
        return;
    }
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
}
