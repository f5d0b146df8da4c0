//! Permission modes, in one place: what of the planner's answer may run now (autopilot:
//! everything; approve_plan: nothing until a plan is approved; per_write: reads now, writes
//! held for the user), and which tools executors may use.

use longrun_domain::planner::{ExecutorTask, PlannerOutput, ToolCall};
use longrun_domain::run::{PendingCall, PermissionMode, PlanStep, Run};

use super::phases::Draft;
use crate::tools::{EXECUTOR_TOOLS, Staging, ToolRegistry, is_mcp_tool};
use longrun_domain::clip;

/// The part of the planner's answer this iteration may carry out.
pub(super) struct Admitted {
    pub calls: Vec<ToolCall>,
    pub executor_tasks: Vec<ExecutorTask>,
}

/// Sorts the planner's calls by the run's permission mode; held writes and the plan awaiting
/// approval become questions on the draft.
pub(super) fn admit(
    run: &Run, n: u32, tools: &ToolRegistry, out: &PlannerOutput, staging: &Staging,
    draft: &mut Draft,
) -> Admitted {
    if run.permission_mode == PermissionMode::ApprovePlan && !run.plan_approved {
        // Nothing runs before approval, the calls proposed with the plan included; the
        // question names them, and the approval tells the planner to make them then.
        let calls: Vec<String> = out
            .tool_calls
            .iter()
            .map(|c| format!("{} {}", c.name, clip(&c.args.to_string(), 200)))
            .collect();
        let start = match calls.is_empty() {
            true => String::new(),
            false => format!("\nThe work would start with: {}", calls.join("; ")),
        };
        draft.approval_questions.push(format!(
            "Approve this plan? Respond with approve: true to start the work, or answer \
             with what to change.\n{}{start}",
            render_plan(&staging.plan())
        ));
        return Admitted {
            calls: vec![],
            executor_tasks: vec![],
        };
    }
    Admitted {
        calls: hold_writes(run, n, tools, out.tool_calls.clone(), draft),
        executor_tasks: out.executor_tasks.clone(),
    }
}

/// Under per_write, the write calls among `calls` are held for the user's approval (with an id
/// and a question each) and the rest returned to run now; other modes run them all. The
/// planner's calls and the repair pass's both come through here.
pub(super) fn hold_writes(
    run: &Run, n: u32, tools: &ToolRegistry, calls: Vec<ToolCall>, draft: &mut Draft,
) -> Vec<ToolCall> {
    if run.permission_mode != PermissionMode::PerWrite {
        return calls;
    }
    let (writes, reads): (Vec<ToolCall>, Vec<ToolCall>) =
        calls.into_iter().partition(|c| tools.writes(&c.name));
    for w in writes {
        let id = format!("c{n}.{}", draft.pending_calls.len() + 1);
        draft.approval_questions.push(format!(
            "Approve {} {} (id {id})?",
            w.name,
            clip(&w.args.to_string(), 300)
        ));
        draft.pending_calls.push(PendingCall {
            id,
            name: w.name,
            args: w.args,
            decision: None,
        });
    }
    reads
}

/// The tools an executor task may use: the workspace tools, and the MCP tools the task names
/// (an executor is offered only what its task asks for, to keep its prompt short). Under
/// per_write executors only read: every write goes through the planner, where each one can be
/// approved.
pub(super) fn executor_tools<'a>(
    run: &Run, tools: &'a ToolRegistry, task: &ExecutorTask,
) -> Vec<&'a str> {
    let read_only = run.permission_mode == PermissionMode::PerWrite;
    let named = |t: &str| task.tools.iter().any(|x| x == t);
    tools
        .names()
        .into_iter()
        .filter(|t| {
            if EXECUTOR_TOOLS.contains(t) {
                task.tools.is_empty() || named(t)
            } else {
                is_mcp_tool(t) && named(t)
            }
        })
        .filter(|t| !read_only || !tools.writes(t))
        .collect()
}

fn render_plan(plan: &[PlanStep]) -> String {
    if plan.is_empty() {
        return "(the planner proposed no plan steps)".into();
    }
    plan.iter()
        .map(|p| format!("- [{}] {}", p.status.as_str(), p.title))
        .collect::<Vec<_>>()
        .join("\n")
}
