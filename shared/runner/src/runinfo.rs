//! `runs/<run_id>/run-info.yaml`: one run's metadata, and the run id format.
//!
//! The file is flat YAML whose values are JSON scalars (a JSON string is a valid YAML
//! double-quoted scalar), so it reads as YAML anywhere and parses back here without a YAML crate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::RunnerError;

pub const RUN_INFO: &str = "run-info.yaml";

/// `YYYYMMDD-HHMMSSMMMM-PID` in UTC: lexically sortable. `MMMM` is the tenth of a millisecond.
pub fn new_run_id(now: chrono::DateTime<chrono::Utc>, pid: u32) -> String {
    let tenths = now.timestamp_subsec_micros() / 100;
    format!("{}{tenths:04}-{pid}", now.format("%Y%m%d-%H%M%S"))
}

/// Creates `runs/<id>/` with a fresh id, retrying while the folder already exists.
pub fn create_run_dir(task_dir: &Path) -> Result<(String, PathBuf), RunnerError> {
    let runs = task_dir.join("runs");
    std::fs::create_dir_all(&runs)?;
    for _ in 0..1000 {
        let id = new_run_id(chrono::Utc::now(), std::process::id());
        let dir = runs.join(&id);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok((id, dir)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                std::thread::sleep(std::time::Duration::from_micros(150));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(RunnerError::Invalid(
        "cannot find a free run id after 1000 tries".into(),
    ))
}

/// A run's metadata as ordered key → JSON value.
#[derive(Debug, Clone, Default)]
pub struct RunInfo(pub BTreeMap<String, Value>);

impl RunInfo {
    pub fn set(&mut self, key: &str, v: impl Into<Value>) {
        self.0.insert(key.to_string(), v.into());
    }

    pub fn str(&self, key: &str) -> &str {
        self.0.get(key).and_then(Value::as_str).unwrap_or("")
    }

    pub fn int(&self, key: &str) -> Option<i64> {
        self.0.get(key).and_then(Value::as_i64)
    }

    /// The usage the run's CLI reported (none: all zero).
    pub fn usage(&self) -> crate::backend::Usage {
        self.0
            .get("usage")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// What the CLI reported as its session's running total at this run's end (the run's
    /// own `usage` when it recorded none: it did not resume a session).
    pub fn session_usage(&self) -> crate::backend::Usage {
        self.0
            .get("session_usage")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_else(|| self.usage())
    }

    pub fn write(&self, run_dir: &Path) -> Result<(), RunnerError> {
        let mut out = String::new();
        for (k, v) in &self.0 {
            out.push_str(&format!("{k}: {v}\n"));
        }
        // Write then rename: a reader (the loop counting children) never sees half a file.
        let tmp = run_dir.join(format!(".{RUN_INFO}.tmp"));
        std::fs::write(&tmp, out)?;
        std::fs::rename(tmp, run_dir.join(RUN_INFO))?;
        Ok(())
    }

    pub fn read(run_dir: &Path) -> Result<Self, RunnerError> {
        let text = std::fs::read_to_string(run_dir.join(RUN_INFO))?;
        let mut map = BTreeMap::new();
        for line in text.lines() {
            let Some((k, v)) = line.split_once(": ") else {
                continue;
            };
            let v = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()));
            map.insert(k.to_string(), v);
        }
        Ok(RunInfo(map))
    }
}

/// Every run of a task, oldest first.
pub fn list_runs(task_dir: &Path) -> Vec<(PathBuf, RunInfo)> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(task_dir.join("runs"))
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join(RUN_INFO).is_file())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs.into_iter()
        .filter_map(|d| RunInfo::read(&d).ok().map(|i| (d, i)))
        .collect()
}

/// Finds `runs/<run_id>/` under `projects_root/<project>/<task>/`.
pub fn find_run(projects_root: &Path, run_id: &str) -> Option<PathBuf> {
    let projects = std::fs::read_dir(projects_root).ok()?;
    for p in projects.filter_map(Result::ok) {
        let Ok(tasks) = std::fs::read_dir(p.path()) else {
            continue;
        };
        for t in tasks.filter_map(Result::ok) {
            let d = t.path().join("runs").join(run_id);
            if d.join(RUN_INFO).is_file() {
                return Some(d);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn run_ids_sort_by_time() {
        let a = chrono::Utc
            .with_ymd_and_hms(2026, 1, 2, 3, 4, 5)
            .single()
            .expect("time");
        let b = a + chrono::Duration::microseconds(300);

        let (ia, ib) = (new_run_id(a, 99), new_run_id(b, 7));

        assert_eq!(ia, "20260102-0304050000-99");
        assert!(ia < ib);
    }

    #[test]
    fn run_info_round_trips() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut info = RunInfo::default();
        info.set("run_id", "x: y \"z\"");
        info.set("pid", 42);

        info.write(dir.path()).expect("write");

        let back = RunInfo::read(dir.path()).expect("read");
        assert_eq!(back.str("run_id"), "x: y \"z\"");
        assert_eq!(back.int("pid"), Some(42));
    }
}
