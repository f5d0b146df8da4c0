//! The two prompts of a repository run, from the seed: discovery's (one model call per cycle
//! over the repository's state) and each agent's task prompt. Every input is bounded here, so
//! a large repository or a chatty check cannot crowd the goal out of the model's context.

use super::task::{CheckResult, RepoTask, Rework, one_line};
use crate::clip;

/// Bounds on what a discovery prompt carries, in characters (entries for lists).
pub const MAX_REQUEST_CHARS: usize = 20_000;
pub const MAX_TASKLIST_CHARS: usize = 12_000;
pub const MAX_TREE_ENTRIES: usize = 400;
pub const MAX_STATUS_ENTRIES: usize = 100;
pub const MAX_COMMITS: usize = 20;
pub const MAX_SUMMARY_CHARS: usize = 4_000;
/// Of each failed check's output tail.
pub const MAX_FAILURE_CHARS: usize = 3_000;
/// The goal summary an agent gets.
pub const MAX_GOAL_SUMMARY_CHARS: usize = 1_500;

/// What discovery is shown (the seed's inputs, plus the last checks' failures).
#[derive(Clone, Debug, Default)]
pub struct DiscoveryInputs<'a> {
    pub request: &'a str,
    pub tasklist: &'a str,
    pub branch: &'a str,
    /// `abc1234 subject`, newest first.
    pub recent_commits: &'a [String],
    pub file_tree: &'a [String],
    /// The file tree was cut at the adapter's bound.
    pub tree_truncated: bool,
    /// `git status --porcelain` lines of the working branch's checkout.
    pub git_status: &'a [String],
    pub previous_summary: Option<&'a str>,
    /// The checks that failed last: on the working head, or on a task's merge.
    pub check_failures: &'a [CheckResult],
    pub max_tasks: u32,
}

/// The discovery prompt: the goal, the list, the repository, what happened last, then the
/// seed's instructions and JSON shape (with success criteria, which the seed's example left out).
pub fn discovery_prompt(inputs: &DiscoveryInputs<'_>) -> String {
    let max = inputs.max_tasks.max(1);
    let mut tree = list(inputs.file_tree, MAX_TREE_ENTRIES);
    if inputs.tree_truncated && !tree.ends_with("…\n") {
        tree.push_str("…\n");
    }
    let status = match inputs.git_status {
        [] => "(clean)\n".to_string(),
        lines => list(lines, MAX_STATUS_ENTRIES),
    };
    let commits = match inputs.recent_commits {
        [] => "(none)\n".to_string(),
        lines => list(lines, MAX_COMMITS),
    };
    let failures = match inputs.check_failures {
        [] => "(none)\n".to_string(),
        checks => checks.iter().map(check_block).collect(),
    };
    let tasklist = match inputs.tasklist.trim() {
        "" => "(empty: no task yet)",
        t => t,
    };
    format!(
        "You are analyzing a codebase to identify the next tasks needed to achieve a goal.\n\n\
         ### Goal Document\n{request}\n\n\
         ### Current Task List\n{tasklist}\n\n\
         ### Repository State\n- Branch: {branch}\n- Recent commits:\n{commits}\
         - File structure:\n{tree}- Changed files:\n{status}\n\
         ### Previous Cycle Summary\n{previous}\n\n\
         ### Last Checks' Failures\n{failures}\n\
         ### Instructions\n\
         1. Identify 1-{max} tasks that can be worked on NOW to move toward the goal; none if \
         the goal is met (then say why in \"reasoning\").\n\
         2. For each task, specify:\n\
         \x20  - A clear, actionable description\n\
         \x20  - Which files will likely be modified\n\
         \x20  - Whether it can run in parallel with other tasks\n\
         \x20  - Priority (P0 = critical, P1 = important, P2 = nice to have)\n\
         \x20  - Success criteria a reviewer can check\n\
         3. Focus on tasks that are:\n\
         \x20  - Independent (can be done without waiting for other tasks, and touching \
         different files from each other)\n\
         \x20  - Well-defined (clear success criteria)\n\
         \x20  - Appropriately sized (can be done in one agent session)\n\
         4. Do not repeat a task the list shows as merged, running or in conflict: conflicts \
         and failed tasks are re-run by the platform.\n\n\
         ### Output Format (JSON)\n\
         Reply with exactly one JSON object:\n\
         {{\n  \"tasks\": [\n    {{\n      \"description\": \"Implement user authentication middleware\",\n\
         \x20     \"files\": [\"src/middleware/auth.ts\", \"src/routes/protected.ts\"],\n\
         \x20     \"parallel\": true,\n      \"priority\": \"P0\",\n\
         \x20     \"context\": \"Additional context for the agent...\",\n\
         \x20     \"success_criteria\": [\"Protected routes answer 401 without a token\"]\n    }}\n  ],\n\
         \x20 \"reasoning\": \"Why these tasks were chosen...\",\n\
         \x20 \"blockers\": [\"Any tasks that can't be done yet and why\"]\n}}\n",
        request = clip(inputs.request.trim(), MAX_REQUEST_CHARS),
        tasklist = clip(tasklist, MAX_TASKLIST_CHARS),
        branch = inputs.branch,
        previous = match inputs.previous_summary.map(str::trim) {
            None | Some("") => "(first cycle)".to_string(),
            Some(s) => clip(s, MAX_SUMMARY_CHARS),
        },
    )
}

/// What the engine asks the model when a discovery answer did not parse: the one repair.
pub fn discovery_repair_prompt(error: &crate::planner::ContractError) -> String {
    format!(
        "Your answer could not be read: {error}. Reply again with exactly one JSON object with \
         \"tasks\" (each with a non-empty \"description\"), \"reasoning\" and \"blockers\", and \
         nothing else."
    )
}

fn list(items: &[String], max: usize) -> String {
    let mut out: String = items
        .iter()
        .take(max)
        .map(|i| format!("  {}\n", clip(&one_line(i), 200)))
        .collect();
    if items.len() > max {
        out.push_str(&format!("  … and {} more\n", items.len() - max));
    }
    out
}

fn check_block(check: &CheckResult) -> String {
    let how = match (check.timed_out, check.exit_code) {
        (true, _) => "timed out".to_string(),
        (false, Some(code)) => format!("exit code {code}"),
        (false, None) => "killed by a signal".to_string(),
    };
    format!(
        "- `{}`: {how}\n```\n{}\n```\n",
        check.command,
        tail_chars(check.output_tail.trim_end(), MAX_FAILURE_CHARS)
    )
}

/// The last `max` characters of `s`, with an ellipsis in front when cut: a check's verdict is
/// at the end of its output.
pub fn tail_chars(s: &str, max: usize) -> String {
    let count = s.chars().count();
    if count <= max {
        return s.to_string();
    }
    let mut out = String::from("…");
    out.extend(s.chars().skip(count - max));
    out
}

/// The goal as an agent is reminded of it: the request document's opening, up to its first
/// blank line after some text, clipped.
pub fn goal_summary(request: &str) -> String {
    let mut summary = String::new();
    for line in request.trim().lines() {
        if line.trim().is_empty() && summary.len() > 200 {
            break;
        }
        summary.push_str(line);
        summary.push('\n');
    }
    clip(summary.trim_end(), MAX_GOAL_SUMMARY_CHARS)
}

/// What an agent working a task is told (the seed's agent task prompt): the task, its context,
/// the branch it is on, the goal, how to work, and its success criteria. A task run again says
/// what to fix first.
pub fn agent_prompt(task: &RepoTask, repository: &str, goal_summary: &str) -> String {
    let context = match task.context.trim() {
        "" => "(none)".to_string(),
        c => c.to_string(),
    };
    let files = match task.files.as_slice() {
        [] => String::new(),
        files => format!("\nFiles likely involved: {}\n", files.join(", ")),
    };
    let criteria: String = match task.success_criteria.as_slice() {
        [] => "- The task as described is done, and the repository's checks still pass.\n".into(),
        items => items
            .iter()
            .map(|c| format!("- {}\n", one_line(c)))
            .collect(),
    };
    let rework = task.rework.as_ref().map(rework_block).unwrap_or_default();
    format!(
        "## Your Task\n{description}\n{rework}\n## Context\n{context}\n{files}\n\
         ## Repository\nYou are working on branch `{branch}` in `{repository}`, in a worktree of \
         its own. Other agents work on other branches at the same time; the platform merges \
         your branch when you are done.\n\n\
         ## Goal (for reference)\n{goal_summary}\n\n\
         ## Instructions\n\
         1. Complete the task described above\n\
         2. Make atomic, focused commits on this branch (anything left uncommitted is committed \
         for you at the end)\n\
         3. If you encounter blockers, document them clearly\n\
         4. Provide a summary of what you accomplished\n\n\
         ## Success Criteria\n{criteria}",
        description = task.description.trim(),
        branch = task.branch,
    )
}

fn rework_block(rework: &Rework) -> String {
    match rework {
        Rework::Conflict { files } => format!(
            "\n## First: resolve the conflict\nThis branch no longer merges into the working \
             branch. Merge the working branch into it (`git merge <working branch>`), resolve \
             the conflicts{}, keep both sides' intent, and commit the merge.\n",
            match files.as_slice() {
                [] => String::new(),
                files => format!(" in {}", files.join(", ")),
            }
        ),
        Rework::Checks { failures } => format!(
            "\n## First: make the checks pass\nThe repository's checks failed on the merge of \
             this branch. Fix the cause:\n{}",
            failures.iter().map(check_block).collect::<String>()
        ),
        Rework::Retry { error } => format!(
            "\n## This is a second attempt\nThe first attempt failed: {}\n",
            clip(&one_line(error), 500)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_discovery_prompt_carries_every_input_and_bounds_the_file_tree() {
        let tree: Vec<String> = (0..500).map(|i| format!("src/f{i}.rs")).collect();
        let failure = CheckResult {
            command: "cargo test".into(),
            exit_code: Some(101),
            output_tail: "test auth::login ... FAILED".into(),
            ..Default::default()
        };
        let commits = vec!["abc1234 Add the router".to_string()];
        let status = vec!["?? notes.txt".to_string()];
        let failures = [failure];
        let inputs = DiscoveryInputs {
            request: "# Goal\nA login page.",
            tasklist: "## task-1-1: Add the router\n- status: merged",
            branch: "longrun/x",
            recent_commits: &commits,
            file_tree: &tree,
            git_status: &status,
            previous_summary: Some("Cycle 1 merged the router."),
            check_failures: &failures,
            max_tasks: 3,
            ..Default::default()
        };

        let prompt = discovery_prompt(&inputs);

        for needle in [
            "A login page.",
            "task-1-1: Add the router",
            "Branch: longrun/x",
            "abc1234 Add the router",
            "?? notes.txt",
            "Cycle 1 merged the router.",
            "`cargo test`: exit code 101",
            "auth::login ... FAILED",
            "1-3 tasks",
            "\"success_criteria\"",
            "… and 100 more",
        ] {
            assert!(prompt.contains(needle), "missing {needle:?}");
        }
        assert!(!prompt.contains("src/f450.rs"));
    }

    #[test]
    fn the_agent_prompt_names_the_task_branch_goal_and_criteria_and_says_what_to_fix() {
        let mut task = RepoTask::new("longrun/x", 2, 1, "Add logout");
        task.context = "Sessions live in src/session.rs".into();
        task.success_criteria = vec!["POST /logout ends the session".into()];
        task.rework = Some(Rework::Conflict {
            files: vec!["src/session.rs".into()],
        });

        let prompt = agent_prompt(&task, "acme/app", &goal_summary("# Goal\nA login page."));

        for needle in [
            "## Your Task\nAdd logout",
            "Sessions live in src/session.rs",
            "branch `longrun/x-task-2-1` in `acme/app`",
            "A login page.",
            "atomic, focused commits",
            "- POST /logout ends the session",
            "resolve the conflicts in src/session.rs",
        ] {
            assert!(prompt.contains(needle), "missing {needle:?} in {prompt}");
        }
    }

    #[test]
    fn a_long_output_keeps_its_end() {
        assert_eq!(tail_chars("abcdef", 3), "…def");
        assert_eq!(tail_chars("abc", 3), "abc");
    }
}
