//! `runs/<run_id>/run-info.yaml`: one run's metadata, and the run id format.
//!
//! The file is flat YAML whose values are JSON scalars (a JSON string is a valid YAML
//! double-quoted scalar), so it reads as YAML anywhere and parses back here without a YAML crate.
//! [`RunInfo`] is its typed form; the keys are named only in [`RunInfo::to_map`] and
//! [`RunInfo::from_map`]. Keys this version does not know, and values it cannot read, are kept
//! as they were, so an old file reads and writes back unchanged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::RunnerError;
use crate::backend::{BackendKind, Failure, FailureKind, Usage, UsageLimit};

pub const RUN_INFO: &str = "run-info.yaml";

/// Run-info keys that tie an agent process to the longrun run and iteration `serve` runs it for.
pub const RUN_KEY: &str = "longrun_run_id";
pub const ITERATION_KEY: &str = "longrun_iteration";

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

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Exited,
    /// Exited non-zero before writing any output: the backend is marked degraded.
    FailedFast,
    /// No progress for `stuck_threshold` (no output, none from its children, no bus message,
    /// no byte written), however busy its CPU: its group was killed.
    Stuck,
    /// Nothing at all for `idle_threshold` (no progress and no CPU either): its group was
    /// killed.
    Idle,
    /// Still running when the task's time budget ended: its group was stopped.
    OutOfTime,
    /// `longrun stop` stopped it.
    Stopped,
}

impl Ended {
    pub const ALL: [Ended; 6] = [
        Ended::Exited,
        Ended::FailedFast,
        Ended::Stuck,
        Ended::Idle,
        Ended::OutOfTime,
        Ended::Stopped,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Ended::Exited => "exited",
            Ended::FailedFast => "failed_fast",
            Ended::Stuck => "stuck",
            Ended::Idle => "idle",
            Ended::OutOfTime => "out_of_time",
            Ended::Stopped => "stopped",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == s)
    }
}

/// One run's metadata, as `run-info.yaml` holds it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunInfo {
    pub run_id: String,
    pub project_id: String,
    pub task_id: String,
    /// The task folder: its bus is where the run's end and its stop are posted.
    pub task_dir: PathBuf,
    /// The run whose agent started this one with `longrun job`; `None` for a root.
    pub parent_run_id: Option<String>,
    /// The run this one follows: the restart, failover or retry before it.
    pub previous_run_id: Option<String>,
    /// The backend's name in the config, and its kind.
    pub agent: String,
    pub agent_type: Option<BackendKind>,
    /// Why the backend was chosen (`named`, `round_robin`, `retry 1 after …`, `adopted`).
    pub selection: String,
    /// 0 for a root; a child's is its parent's + 1.
    pub depth: u32,
    /// The `longrun job` (or `task`, or `serve`) process that started and watches it.
    pub runner_pid: Option<u32>,
    /// The agent's process and process group, once it has started.
    pub pid: Option<u32>,
    pub pgid: Option<u32>,
    /// RFC 3339.
    pub start_time: String,
    /// RFC 3339; `None` while the run has not recorded its end.
    pub end_time: Option<String>,
    pub prompt_path: PathBuf,
    pub stdout_path: PathBuf,
    pub stderr_path: PathBuf,
    pub output_path: PathBuf,
    /// The command line, with the prompt shortened to `<prompt.md>`.
    pub commandline: String,
    /// The CLI session this run resumed.
    pub resumed_session: Option<String>,
    /// The CLI session the run reported, to resume it.
    pub session_id: Option<String>,
    /// Once ended: the exit code, -1 when unknown (a signal, an adopted process).
    pub exit_code: Option<i64>,
    pub signal: Option<i32>,
    /// How it ended (`None` when it could not start, or has not ended).
    pub ended: Option<Ended>,
    /// What this process added to the spend; `None` when the CLI reported nothing.
    pub usage: Option<Usage>,
    /// The CLI session's running total at this run's end, when it resumed a session.
    pub session_usage: Option<Usage>,
    /// A usage limit hit: when it resets, epoch seconds; 0 when the CLI did not say.
    pub usage_limit_resets_at: Option<i64>,
    /// Why it failed, when its CLI said.
    pub failure: Option<Failure>,
    /// Why the agent could not be started.
    pub error: Option<String>,
    /// `longrun stop`: when, and the signal it took.
    pub stopped_at: Option<String>,
    pub stop_signal: Option<String>,
    /// The `serve` agent run ([`RUN_KEY`]) and its iteration ([`ITERATION_KEY`]) this process
    /// is.
    pub serve_run_id: Option<String>,
    pub serve_iteration: Option<u32>,
    /// Keys this version does not know, or whose value it cannot read: kept as they were.
    pub extra: BTreeMap<String, Value>,
}

impl RunInfo {
    /// The usage the run's CLI reported (none: all zero).
    pub fn usage(&self) -> Usage {
        self.usage.clone().unwrap_or_default()
    }

    /// What the CLI reported as its session's running total at this run's end (the run's
    /// own `usage` when it recorded none: it did not resume a session).
    pub fn session_usage(&self) -> Usage {
        self.session_usage.clone().unwrap_or_else(|| self.usage())
    }

    /// It has recorded its end.
    pub fn has_ended(&self) -> bool {
        self.end_time.is_some()
    }

    /// A root run: no agent started it.
    pub fn is_root(&self) -> bool {
        self.parent_run_id.is_none()
    }

    /// The exit code, when known.
    pub fn known_exit_code(&self) -> Option<i64> {
        self.exit_code.filter(|c| *c >= 0)
    }

    /// The usage limit the run hit, if any (its reset unknown when the CLI did not say).
    pub fn usage_limit(&self) -> Option<UsageLimit> {
        self.usage_limit_resets_at.map(|at| UsageLimit {
            resets_at: Some(at).filter(|at| *at > 0),
        })
    }

    /// The process of iteration `n` of `serve`'s agent run `run_id`.
    pub fn serves(&self, run_id: &str, n: u32) -> bool {
        self.serves_run(run_id) && self.serve_iteration == Some(n)
    }

    /// A process of `serve`'s agent run `run_id`.
    pub fn serves_run(&self, run_id: &str) -> bool {
        self.serve_run_id.as_deref() == Some(run_id)
    }

    /// The labels `serve` gives the process of iteration `n` of its agent run `run_id`
    /// (`JobRequest::labels`).
    pub fn serve_labels(run_id: &str, n: u32) -> Vec<(String, String)> {
        vec![
            (RUN_KEY.to_string(), run_id.to_string()),
            (ITERATION_KEY.to_string(), n.to_string()),
        ]
    }

    /// With extra `key: "value"` entries, read as the file would read them: a known key
    /// lands in its field.
    pub fn with_labels(self, labels: &[(String, String)]) -> Self {
        if labels.is_empty() {
            return self;
        }
        let mut map = self.to_map();
        for (k, v) in labels {
            map.insert(k.clone(), Value::String(v.clone()));
        }
        Self::from_map(map)
    }

    /// The file's entries: every field that is set, and the kept unknown keys.
    pub fn to_map(&self) -> BTreeMap<String, Value> {
        let mut m = self.extra.clone();
        let mut put = |k: &str, v: Value| {
            m.insert(k.to_string(), v);
        };
        let path = |p: &Path| Value::String(p.display().to_string());
        let or_empty = |s: &Option<String>| Value::String(s.clone().unwrap_or_default());
        put("run_id", self.run_id.clone().into());
        put("project_id", self.project_id.clone().into());
        put("task_id", self.task_id.clone().into());
        put("task_dir", path(&self.task_dir));
        put("parent_run_id", or_empty(&self.parent_run_id));
        put("previous_run_id", or_empty(&self.previous_run_id));
        put("agent", self.agent.clone().into());
        if let Some(k) = self.agent_type {
            put("agent_type", k.as_str().into());
        }
        put("selection", self.selection.clone().into());
        put("depth", self.depth.into());
        put("start_time", self.start_time.clone().into());
        put("end_time", or_empty(&self.end_time));
        put("prompt_path", path(&self.prompt_path));
        put("stdout_path", path(&self.stdout_path));
        put("stderr_path", path(&self.stderr_path));
        put("output_path", path(&self.output_path));
        put("commandline", self.commandline.clone().into());
        let numbers = [
            ("runner_pid", self.runner_pid.map(i64::from)),
            ("pid", self.pid.map(i64::from)),
            ("pgid", self.pgid.map(i64::from)),
            ("exit_code", self.exit_code),
            ("signal", self.signal.map(i64::from)),
            ("usage_limit_resets_at", self.usage_limit_resets_at),
        ];
        for (k, v) in numbers {
            if let Some(v) = v {
                put(k, v.into());
            }
        }
        let texts = [
            ("resumed_session", &self.resumed_session),
            ("session_id", &self.session_id),
            ("error", &self.error),
            ("stopped_at", &self.stopped_at),
            ("stop_signal", &self.stop_signal),
            (RUN_KEY, &self.serve_run_id),
        ];
        for (k, v) in texts {
            if let Some(v) = v {
                put(k, v.clone().into());
            }
        }
        if let Some(e) = self.ended {
            put("ended", e.as_str().into());
        }
        for (k, u) in [
            ("usage", &self.usage),
            ("session_usage", &self.session_usage),
        ] {
            if let Some(u) = u {
                put(k, serde_json::to_value(u).unwrap_or_default());
            }
        }
        if let Some(f) = &self.failure {
            put("failure", f.kind.as_str().into());
            put("failure_cause", f.cause.clone().into());
        }
        if let Some(n) = self.serve_iteration {
            // A label: a string, as `JobRequest::labels` are.
            put(ITERATION_KEY, n.to_string().into());
        }
        m
    }

    /// The typed form of the file's entries. What does not read as its field's type stays in
    /// `extra`, so it is written back as it was.
    pub fn from_map(map: BTreeMap<String, Value>) -> Self {
        let mut e = Entries(map);
        let nonempty = |s: Option<String>| s.filter(|s| !s.is_empty());
        let failure = e
            .take("failure", |v| v.as_str().and_then(FailureKind::parse))
            .map(|kind| Failure {
                kind,
                cause: e.string("failure_cause").unwrap_or_default(),
            });
        RunInfo {
            run_id: e.string("run_id").unwrap_or_default(),
            project_id: e.string("project_id").unwrap_or_default(),
            task_id: e.string("task_id").unwrap_or_default(),
            task_dir: e.path("task_dir"),
            parent_run_id: nonempty(e.string("parent_run_id")),
            previous_run_id: nonempty(e.string("previous_run_id")),
            agent: e.string("agent").unwrap_or_default(),
            agent_type: e.take("agent_type", |v| v.as_str().and_then(BackendKind::parse)),
            selection: e.string("selection").unwrap_or_default(),
            depth: e.u32("depth").unwrap_or_default(),
            runner_pid: e.u32("runner_pid"),
            pid: e.u32("pid"),
            pgid: e.u32("pgid"),
            start_time: e.string("start_time").unwrap_or_default(),
            end_time: nonempty(e.string("end_time")),
            prompt_path: e.path("prompt_path"),
            stdout_path: e.path("stdout_path"),
            stderr_path: e.path("stderr_path"),
            output_path: e.path("output_path"),
            commandline: e.string("commandline").unwrap_or_default(),
            resumed_session: e.string("resumed_session"),
            session_id: e.string("session_id"),
            exit_code: e.take("exit_code", Value::as_i64),
            signal: e.take("signal", |v| v.as_i64().and_then(|s| i32::try_from(s).ok())),
            ended: e.take("ended", |v| v.as_str().and_then(Ended::parse)),
            usage: e.take("usage", |v| serde_json::from_value(v.clone()).ok()),
            session_usage: e.take("session_usage", |v| serde_json::from_value(v.clone()).ok()),
            usage_limit_resets_at: e.take("usage_limit_resets_at", Value::as_i64),
            failure,
            error: e.string("error"),
            stopped_at: e.string("stopped_at"),
            stop_signal: e.string("stop_signal"),
            serve_run_id: e.string(RUN_KEY),
            serve_iteration: e.take(ITERATION_KEY, |v| v.as_str()?.parse().ok()),
            extra: e.0,
        }
    }

    /// The file's text: one `key: <JSON value>` line per entry, sorted by key.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        for (k, v) in self.to_map() {
            out.push_str(&format!("{k}: {v}\n"));
        }
        out
    }

    /// Reads the file's text; a value that is not JSON is taken as a string.
    pub fn from_yaml(text: &str) -> Self {
        let mut map = BTreeMap::new();
        for line in text.lines() {
            let Some((k, v)) = line.split_once(": ") else {
                continue;
            };
            let v = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()));
            map.insert(k.to_string(), v);
        }
        Self::from_map(map)
    }

    pub fn write(&self, run_dir: &Path) -> Result<(), RunnerError> {
        // Write then rename: a reader (the loop counting children) never sees half a file.
        let tmp = run_dir.join(format!(".{RUN_INFO}.tmp"));
        std::fs::write(&tmp, self.to_yaml())?;
        std::fs::rename(tmp, run_dir.join(RUN_INFO))?;
        Ok(())
    }

    pub fn read(run_dir: &Path) -> Result<Self, RunnerError> {
        let text = std::fs::read_to_string(run_dir.join(RUN_INFO))?;
        Ok(Self::from_yaml(&text))
    }
}

/// A file's entries, taken out one field at a time: what reads as the field's type leaves.
struct Entries(BTreeMap<String, Value>);

impl Entries {
    fn take<T>(&mut self, key: &str, read: impl FnOnce(&Value) -> Option<T>) -> Option<T> {
        let v = read(self.0.get(key)?)?;
        self.0.remove(key);
        Some(v)
    }

    fn string(&mut self, key: &str) -> Option<String> {
        self.take(key, |v| v.as_str().map(str::to_string))
    }

    fn u32(&mut self, key: &str) -> Option<u32> {
        self.take(key, |v| v.as_u64().and_then(|n| u32::try_from(n).ok()))
    }

    fn path(&mut self, key: &str) -> PathBuf {
        self.string(key).map(PathBuf::from).unwrap_or_default()
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

    /// The file's entries by key, as a reader of the YAML sees them.
    trait Raw {
        fn set(&mut self, key: &str, v: impl Into<Value>);
        fn str(&self, key: &str) -> String;
        fn int(&self, key: &str) -> Option<i64>;
    }

    impl Raw for RunInfo {
        fn set(&mut self, key: &str, v: impl Into<Value>) {
            let mut map = self.to_map();
            map.insert(key.to_string(), v.into());
            *self = RunInfo::from_map(map);
        }

        fn str(&self, key: &str) -> String {
            let map = self.to_map();
            map.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        }

        fn int(&self, key: &str) -> Option<i64> {
            self.to_map().get(key).and_then(Value::as_i64)
        }
    }

    /// A run-info as `longrun job` writes it at a run's end, every key set.
    const ENDED: &str = r#"agent: "claude"
agent_type: "claude"
commandline: "claude -p <prompt.md> --resume s-1"
depth: 1
end_time: "2026-01-02T03:09:00.000Z"
ended: "failed_fast"
exit_code: -1
failure: "authentication failed"
failure_cause: "401 Unauthorized"
longrun_iteration: "3"
longrun_run_id: "run_ab"
output_path: "/p/t/runs/x/output.md"
parent_run_id: "20260102-0304000000-1"
pgid: 4242
pid: 4243
previous_run_id: "20260102-0304010000-1"
project_id: "p"
prompt_path: "/p/t/runs/x/prompt.md"
resumed_session: "s-1"
run_id: "20260102-0304050000-99"
runner_pid: 77
selection: "named"
session_id: "s-1"
session_usage: {"cached_input_tokens":3,"cost_usd":0.5,"input_tokens":10,"output_tokens":2,"turns":1}
signal: 9
start_time: "2026-01-02T03:04:05.000Z"
stderr_path: "/p/t/runs/x/stderr.txt"
stdout_path: "/p/t/runs/x/stdout.txt"
stop_signal: "SIGTERM"
stopped_at: "2026-01-02T03:09:01.000Z"
task_dir: "/p/t"
task_id: "t"
usage: {"cached_input_tokens":1,"cost_usd":null,"input_tokens":4,"output_tokens":1,"turns":1}
usage_limit_resets_at: 0
"#;

    #[test]
    fn a_written_run_info_reads_into_its_fields_and_writes_back_unchanged() {
        let info = RunInfo::from_yaml(ENDED);

        assert_eq!(info.to_yaml(), ENDED);
        assert!(info.extra.is_empty(), "{:?}", info.extra);
        assert_eq!(info.parent_run_id.as_deref(), Some("20260102-0304000000-1"));
        assert_eq!(
            (info.pid, info.pgid, info.runner_pid),
            (Some(4243), Some(4242), Some(77))
        );
        assert_eq!(info.ended, Some(Ended::FailedFast));
        assert_eq!(info.known_exit_code(), None);
        assert_eq!(info.agent_type, Some(BackendKind::Claude));
        assert_eq!(
            info.failure.as_ref().map(|f| f.kind),
            Some(FailureKind::Auth)
        );
        assert_eq!(info.usage_limit(), Some(UsageLimit { resets_at: None }));
        assert!(info.serves("run_ab", 3) && !info.serves("run_ab", 4));
        assert_eq!(info.usage().input_tokens, 4);
        assert_eq!(info.session_usage().cost_usd, Some(0.5));
        assert_eq!(info.stdout_path, PathBuf::from("/p/t/runs/x/stdout.txt"));
    }

    #[test]
    fn a_started_run_writes_empty_parent_previous_and_end() {
        let info = RunInfo {
            run_id: "r".into(),
            pid: Some(5),
            ..RunInfo::default()
        };

        let text = info.to_yaml();

        for line in [
            "end_time: \"\"",
            "parent_run_id: \"\"",
            "previous_run_id: \"\"",
            "pid: 5",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in {text}");
        }
        assert!(
            !text.contains("exit_code") && !text.contains("ended"),
            "{text}"
        );
        let back = RunInfo::from_yaml(&text);
        assert!(!back.has_ended() && back.is_root() && back.previous_run_id.is_none());
    }

    #[test]
    fn unknown_keys_and_unreadable_values_are_kept_as_they_were() {
        let text = "ended: \"vanished\"\nfuture_key: [1,2]\npid: \"soon\"\nrun_id: bare words\n";

        let info = RunInfo::from_yaml(text);

        assert_eq!((info.ended, info.pid), (None, None));
        assert_eq!(info.run_id, "bare words");
        let out = info.to_yaml();
        for line in ["ended: \"vanished\"", "future_key: [1,2]", "pid: \"soon\""] {
            assert!(out.lines().any(|l| l == line), "{line} in {out}");
        }
    }

    #[test]
    fn serves_labels_land_in_their_fields() {
        let info = RunInfo::default().with_labels(&RunInfo::serve_labels("run_x", 7));

        assert_eq!(info.serve_run_id.as_deref(), Some("run_x"));
        assert_eq!(info.serve_iteration, Some(7));
        assert!(info.to_yaml().contains("longrun_iteration: \"7\"\n"));
    }

    #[test]
    fn every_end_reads_back_as_itself() {
        for e in Ended::ALL {
            assert_eq!(Ended::parse(e.as_str()), Some(e));
        }
    }

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
