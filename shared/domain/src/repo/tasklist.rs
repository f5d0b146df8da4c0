//! TASKLIST.md: the run's task list as a file on the working branch, every task with its
//! status, branch and summary, rendered once per cycle and read back (a user may edit it
//! through `PUT /v1/runs/{id}/tasklist`; discovery reads it as written).

use super::task::{Priority, RepoTask, RepoTaskStatus, one_line};

/// One task as TASKLIST.md lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskLine {
    /// `task-{cycle}-{n}`; `None` for an entry a person added by hand.
    pub id: Option<String>,
    pub description: String,
    pub status: RepoTaskStatus,
    pub priority: Priority,
    pub branch: Option<String>,
    pub summary: String,
}

/// Renders the list: a header naming the run, cycle and working branch, then one section per
/// task in id order. Descriptions and summaries are put on one line so the file reads back.
pub fn render(run_id: &str, cycle: u32, working: &str, tasks: &[RepoTask]) -> String {
    let mut ordered: Vec<&RepoTask> = tasks.iter().collect();
    ordered.sort_by_key(|t| (t.cycle, t.n));
    let count = |s: RepoTaskStatus| tasks.iter().filter(|t| t.status == s).count();
    let mut out = format!(
        "# TASKLIST\n\nRun `{run_id}`, cycle {cycle}, working branch `{working}`: {} merged, {} \
         open, {} blocked, {} in conflict.\n",
        count(RepoTaskStatus::Merged),
        tasks
            .iter()
            .filter(|t| matches!(
                t.status,
                RepoTaskStatus::Pending
                    | RepoTaskStatus::Running
                    | RepoTaskStatus::Done
                    | RepoTaskStatus::Failed
            ))
            .count(),
        count(RepoTaskStatus::Blocked),
        count(RepoTaskStatus::Conflict),
    );
    for t in ordered {
        out.push_str(&format!(
            "\n## {}: {}\n\n- status: {}\n- priority: {}\n- branch: `{}`\n",
            t.id,
            one_line(&t.description),
            t.status.as_str(),
            t.priority.as_str(),
            t.branch
        ));
        if !t.summary.trim().is_empty() {
            out.push_str(&format!("- summary: {}\n", one_line(&t.summary)));
        }
        if let Some(error) = t.error.as_deref().filter(|e| !e.trim().is_empty()) {
            out.push_str(&format!("- error: {}\n", one_line(error)));
        }
    }
    out
}

/// Reads a TASKLIST.md back: every `## ` section is a task, `task-C-N: description` when the
/// run wrote it, any other title when a person did; `- key: value` lines under it fill in its
/// status, priority, branch and summary. What it does not know it skips.
pub fn parse(text: &str) -> Vec<TaskLine> {
    let mut lines: Vec<TaskLine> = Vec::new();
    for raw in text.lines() {
        let line = raw.trim();
        if let Some(title) = line.strip_prefix("## ") {
            let title = title.trim();
            let (id, description) = match title.split_once(':') {
                Some((id, rest)) if is_task_id(id.trim()) => {
                    (Some(id.trim().to_string()), rest.trim().to_string())
                }
                _ => (None, title.to_string()),
            };
            lines.push(TaskLine {
                id,
                description,
                ..Default::default()
            });
            continue;
        }
        let Some(current) = lines.last_mut() else {
            continue;
        };
        let Some((key, value)) = line
            .strip_prefix("- ")
            .or_else(|| line.strip_prefix("* "))
            .and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        let value = value.trim();
        match key.trim().to_ascii_lowercase().as_str() {
            "status" => {
                if let Some(s) = RepoTaskStatus::parse(value) {
                    current.status = s;
                }
            }
            "priority" => {
                current.priority = match value.to_ascii_uppercase().as_str() {
                    "P0" => Priority::P0,
                    "P2" => Priority::P2,
                    _ => Priority::P1,
                }
            }
            "branch" => current.branch = Some(value.trim_matches('`').to_string()),
            "summary" => current.summary = value.to_string(),
            _ => {}
        }
    }
    lines
}

fn is_task_id(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("task-") else {
        return false;
    };
    match rest.split_once('-') {
        Some((c, n)) => c.parse::<u32>().is_ok() && n.parse::<u32>().is_ok(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rendered_tasklist_reads_back_with_every_tasks_status_branch_and_summary() {
        let mut merged = RepoTask::new("longrun/x", 1, 1, "Add the login\nform");
        merged.status = RepoTaskStatus::Merged;
        merged.priority = Priority::P0;
        merged.summary = "Login form added; tests green.".into();
        let mut conflict = RepoTask::new("longrun/x", 1, 2, "Add: the logout button");
        conflict.status = RepoTaskStatus::Conflict;

        let text = render("run_1", 1, "longrun/x", &[conflict, merged]);
        let lines = parse(&text);

        assert!(
            text.contains("1 merged, 0 open, 0 blocked, 1 in conflict"),
            "{text}"
        );
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].id.as_deref(), Some("task-1-1"));
        assert_eq!(lines[0].description, "Add the login form");
        assert_eq!(lines[0].status, RepoTaskStatus::Merged);
        assert_eq!(lines[0].priority, Priority::P0);
        assert_eq!(lines[0].branch.as_deref(), Some("longrun/x-task-1-1"));
        assert_eq!(lines[0].summary, "Login form added; tests green.");
        assert_eq!(lines[1].description, "Add: the logout button");
        assert_eq!(lines[1].status, RepoTaskStatus::Conflict);
    }

    #[test]
    fn an_entry_a_person_added_reads_as_a_pending_task_without_an_id() {
        let text = "# TASKLIST\n\n## Document the API\n\n- priority: P2\n- note: later\n";

        let lines = parse(text);

        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].id, None);
        assert_eq!(lines[0].description, "Document the API");
        assert_eq!(lines[0].status, RepoTaskStatus::Pending);
        assert_eq!(lines[0].priority, Priority::P2);
    }
}
