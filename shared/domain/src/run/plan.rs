//! A run's plan: its steps, the user's edits of them, and the planner's and executors'
//! updates.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Done,
    Blocked,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::InProgress => "in_progress",
            StepStatus::Done => "done",
            StepStatus::Blocked => "blocked",
        }
    }

    pub fn is_open(self) -> bool {
        matches!(self, StepStatus::Pending | StepStatus::InProgress)
    }
    fn rank(self) -> u8 {
        match self {
            StepStatus::Pending => 0,
            StepStatus::InProgress => 1,
            StepStatus::Blocked => 1,
            StepStatus::Done => 2,
        }
    }
}

/// A user's mid-run edit (`PATCH /v1/runs/{id}`): a new objective, and plan steps to add or
/// change by id.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::NO_CONTROLS))]
    pub objective: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 50))]
    pub plan: Vec<PlanStepEdit>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanStepEdit {
    #[schemars(length(min = 1, max = 64), regex(pattern = crate::NOT_BLANK))]
    pub id: String,
    #[schemars(length(max = 500), regex(pattern = crate::NO_CONTROLS))]
    pub title: String,
    pub status: StepStatus,
}

impl RunPatch {
    pub fn is_empty(&self) -> bool {
        self.objective.is_none() && self.plan.is_empty()
    }

    /// A later patch on top of one not yet applied: the newest objective, plan edits merged
    /// by step id.
    pub fn merge(mut self, later: RunPatch) -> RunPatch {
        if later.objective.is_some() {
            self.objective = later.objective;
        }
        for edit in later.plan {
            match self.plan.iter_mut().find(|e| e.id == edit.id) {
                Some(e) => *e = edit,
                None => self.plan.push(edit),
            }
        }
        self
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanStep {
    pub id: String,
    pub title: String,
    pub status: StepStatus,
    pub iteration_last_touched: u32,
    /// The last note an executor left on the step it worked on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

pub const MAX_PLAN_STEPS: usize = 50;

/// Applies plan updates; returns whether any step advanced (new step, or status moved forward).
pub fn apply_plan_updates(
    plan: &mut Vec<PlanStep>, updates: &[(String, String, StepStatus)], iteration: u32,
) -> bool {
    let mut advanced = false;
    for (id, title, status) in updates {
        if let Some(step) = plan.iter_mut().find(|s| &s.id == id) {
            if status.rank() > step.status.rank() {
                advanced = true;
            }
            if step.status != *status || (!title.is_empty() && &step.title != title) {
                step.status = *status;
                if !title.is_empty() {
                    step.title = title.clone();
                }
                step.iteration_last_touched = iteration;
            }
        } else if plan.len() < MAX_PLAN_STEPS {
            plan.push(PlanStep {
                id: id.clone(),
                title: title.clone(),
                status: *status,
                iteration_last_touched: iteration,
                notes: None,
            });
            advanced = true;
        }
    }
    advanced
}

/// Characters of an executor's note kept on a plan step.
pub const MAX_STEP_NOTE_CHARS: usize = 1_000;

/// What an executor's plan updates did: the steps changed (as the plan lists them now) and
/// why the others were refused.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExecutorPlanEdit {
    pub changed: Vec<PlanStep>,
    pub refused: Vec<String>,
    pub advanced: bool,
}

/// An executor's updates of the plan steps its task was `given`: the status and note of those
/// steps only. A step not given to it, or not in the plan, is refused (an executor never adds
/// a step); a note is clipped to [`MAX_STEP_NOTE_CHARS`].
pub fn apply_executor_updates(
    plan: &mut [PlanStep], given: &[String], updates: &[crate::planner::StepNote], iteration: u32,
) -> ExecutorPlanEdit {
    let mut edit = ExecutorPlanEdit::default();
    for u in updates {
        if !given.contains(&u.id) {
            edit.refused
                .push(format!("step {} was not given to this task", u.id));
            continue;
        }
        let Some(step) = plan.iter_mut().find(|s| s.id == u.id) else {
            edit.refused
                .push(format!("step {} is not in the plan", u.id));
            continue;
        };
        let before = step.clone();
        if let Some(status) = u.status {
            edit.advanced |= status.rank() > step.status.rank();
            step.status = status;
        }
        if let Some(note) = u.note.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
            step.notes = Some(note.chars().take(MAX_STEP_NOTE_CHARS).collect());
        }
        if *step != before {
            step.iteration_last_touched = iteration;
            edit.changed.push(step.clone());
        }
    }
    edit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_executor_updates_the_status_and_notes_of_the_steps_it_was_given_and_no_other() {
        // Arrange
        let step = |id: &str| PlanStep {
            id: id.into(),
            title: format!("step {id}"),
            status: StepStatus::Pending,
            iteration_last_touched: 1,
            notes: None,
        };
        let mut plan = vec![step("s1"), step("s2")];
        let note =
            |id: &str, status: Option<StepStatus>, note: Option<&str>| crate::planner::StepNote {
                id: id.into(),
                status,
                note: note.map(str::to_string),
            };
        let updates = [
            note(
                "s1",
                Some(StepStatus::Done),
                Some("  found three sources  "),
            ),
            note("s2", Some(StepStatus::Done), None),
            note("s9", None, Some("made up")),
        ];

        // Act
        let edit = apply_executor_updates(&mut plan, &["s1".into(), "s9".into()], &updates, 4);

        // Assert
        assert_eq!(plan[0].status, StepStatus::Done);
        assert_eq!(plan[0].notes.as_deref(), Some("found three sources"));
        assert_eq!(plan[0].iteration_last_touched, 4);
        assert_eq!(
            plan[1],
            step("s2"),
            "a step not given to the task is left alone"
        );
        assert_eq!(plan.len(), 2, "an executor never adds a step");
        assert!(edit.advanced);
        assert_eq!(edit.changed.len(), 1);
        assert_eq!(
            edit.refused,
            vec![
                "step s2 was not given to this task",
                "step s9 is not in the plan"
            ]
        );
    }

    #[test]
    fn plan_updates_report_advance_only_when_a_step_moves_forward() {
        let mut plan = vec![];
        let add = [("s1".to_string(), "a".to_string(), StepStatus::Pending)];
        assert!(apply_plan_updates(&mut plan, &add, 1));
        assert!(!apply_plan_updates(&mut plan, &add, 2));
        let done = [("s1".to_string(), String::new(), StepStatus::Done)];
        assert!(apply_plan_updates(&mut plan, &done, 3));
        assert_eq!(plan[0].iteration_last_touched, 3);
        assert_eq!(plan[0].title, "a");
    }
}
