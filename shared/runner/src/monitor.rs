//! `serve`'s read-only view of the projects root: the tasks a terminal started with
//! `longrun task` (`projects_root/<project>/<task>/`), each folder as a run's agent panel shows
//! it, and any folder's bus page by page for a live stream. Nothing here writes: a task folder
//! without a bus gets none from being looked at.

use std::path::{Path, PathBuf};

use longrun_domain::clip;
use longrun_domain::{TaskStatus, TaskSummary, TaskView};
use longrun_ports::BusPage;

use crate::RunnerError;
use crate::bus::{BUS_DB, Bus};
use crate::process::process_alive;
use crate::runinfo::{RunInfo, list_runs};
use crate::task::{DONE_FILE, TASK_FILE};

/// Written into the folder of every agent run `serve` hosts, so the folder is never taken for
/// a terminal's task (before its first process has a run-info naming the run).
pub const RUN_MARKER: &str = ".longrun-run";

/// At most this many tasks are listed, the most recently active first.
pub const MAX_TASKS: usize = 500;
/// At most this many bus messages in one page.
pub const BUS_PAGE: u32 = 200;
const TITLE_CHARS: usize = 200;
const OBJECTIVE_CHARS: usize = 8_000;

/// A project or task name as `longrun task` accepts it: one plain folder name.
pub fn plain_name(s: &str) -> bool {
    !s.is_empty() && !s.starts_with('.') && !s.contains(['/', '\\', '\0']) && s.len() <= 255
}

/// Every terminal task under `root`, the most recently active first (at most [`MAX_TASKS`]).
pub fn list_tasks(root: &Path) -> Vec<TaskSummary> {
    let mut tasks: Vec<TaskSummary> = subdirs(root)
        .into_iter()
        .flat_map(|(project, pdir)| {
            subdirs(&pdir)
                .into_iter()
                .filter_map(move |(task, tdir)| summary(&project, &task, &tdir))
                .collect::<Vec<_>>()
        })
        .collect();
    tasks.sort_by(|a, b| b.updated.cmp(&a.updated).then(a.project.cmp(&b.project)));
    tasks.truncate(MAX_TASKS);
    tasks
}

/// One terminal task, or `None` when `root` has none by that name.
pub fn task_view(root: &Path, project: &str, task: &str) -> Result<Option<TaskView>, RunnerError> {
    let Some(dir) = task_folder(root, project, task) else {
        return Ok(None);
    };
    let Some(summary) = summary(project, task, &dir) else {
        return Ok(None);
    };
    Ok(Some(TaskView {
        summary,
        objective: clip(&read(&dir.join(TASK_FILE)), OBJECTIVE_CHARS),
        folder: crate::host::view(&dir)?,
    }))
}

/// `root/<project>/<task>/` when it is a terminal task's folder.
pub fn task_folder(root: &Path, project: &str, task: &str) -> Option<PathBuf> {
    if !plain_name(project) || !plain_name(task) {
        return None;
    }
    let dir = root.join(project).join(task);
    is_task(&dir).then_some(dir)
}

/// A folder's bus after `after` (at most [`BUS_PAGE`] messages), and whether its loop or any
/// of its processes is alive.
pub fn bus_page(dir: &Path, after: i64) -> Result<BusPage, RunnerError> {
    let messages = match dir.join(BUS_DB).exists() {
        true => Bus::open(dir)?.poll_page(after, BUS_PAGE)?,
        false => vec![],
    };
    let runs = list_runs(dir);
    Ok(BusPage {
        messages,
        live: loop_alive(dir) || runs.iter().any(|(_, i)| running(i)),
    })
}

/// A terminal task's folder: it has a TASK.md or runs, and no agent run of `serve` owns it.
fn is_task(dir: &Path) -> bool {
    if !dir.is_dir() || dir.join(RUN_MARKER).exists() {
        return false;
    }
    if !dir.join(TASK_FILE).is_file() && !dir.join("runs").is_dir() {
        return false;
    }
    !list_runs(dir)
        .iter()
        .any(|(_, i)| i.serve_run_id.as_deref().is_some_and(|r| !r.is_empty()))
}

fn summary(project: &str, task: &str, dir: &Path) -> Option<TaskSummary> {
    if !is_task(dir) {
        return None;
    }
    let runs = list_runs(dir);
    let live = loop_alive(dir) || runs.iter().any(|(_, i)| running(i));
    let status = match (live, dir.join(DONE_FILE).exists()) {
        (true, _) => TaskStatus::Running,
        (false, true) => TaskStatus::Done,
        (false, false) => TaskStatus::Ended,
    };
    let mut usage = crate::backend::Usage::default();
    for (_, i) in &runs {
        usage.add(&i.usage());
    }
    let title = read(&dir.join(TASK_FILE))
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| clip(l.trim_start_matches('#').trim(), TITLE_CHARS))
        .unwrap_or_default();
    let stamp = |v: &str| Some(v.to_string()).filter(|v| !v.is_empty());
    let updated = runs
        .iter()
        .flat_map(|(_, i)| [Some(i.start_time.as_str()), i.end_time.as_deref()])
        .flatten()
        .filter_map(stamp)
        .max();
    Some(TaskSummary {
        project: project.to_string(),
        task: task.to_string(),
        status,
        title,
        processes: runs.len() as u32,
        agent: runs
            .iter()
            .rev()
            .find(|(_, i)| i.is_root())
            .map_or(String::new(), |(_, i)| i.agent.clone()),
        started: runs.first().and_then(|(_, i)| stamp(&i.start_time)),
        updated,
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cost_usd: usage.cost_usd,
    })
}

/// A process that has not recorded its end and is still there.
fn running(i: &RunInfo) -> bool {
    !i.has_ended() && i.pid.is_some_and(|p| p > 0 && process_alive(p))
}

/// The task's restart loop (`longrun task`) holds `runs/.task.lock` with its pid while it works,
/// between restarts and through a usage-limit wait too.
fn loop_alive(dir: &Path) -> bool {
    read(&dir.join("runs").join(".task.lock"))
        .trim()
        .parse::<u32>()
        .is_ok_and(process_alive)
}

fn subdirs(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return vec![];
    };
    rd.filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .filter(|(name, _)| plain_name(name))
        .collect()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}
