//! An agent run's iteration: one coding-agent process (the `AgentHost` port) instead of the
//! planner, tools and executors. The claim is written before the process starts, so one
//! iteration starts at most one process; the agent's reported usage is the iteration's
//! spend; its output is the workspace's `output.md`; DONE in the task folder is a completion
//! claim with that output as evidence, judged by the same gate as a planner's; a QUESTION
//! left on the bus waits on the user; a usage limit defers the iteration to the reset.

use longrun_domain::change::CommitPlan;
use longrun_domain::decide::IterationError;
use longrun_domain::planner::{PlannerOutput, StatusBlock};
use longrun_domain::run::{Run, Spend, ToolResultBrief};
use longrun_domain::{clip, fingerprint, is_blank};
use longrun_ports::AgentTurn;

use super::claim::Claim;
use super::model::Iter;
use super::phases::Draft;
use super::{Engine, EngineError};
use crate::tools::Staging;

/// Where an agent's output lands in the run's workspace.
pub const AGENT_OUTPUT_DOC: &str = "output.md";

impl Engine {
    pub(super) async fn agent_work(
        &self, run: &Run, claim: &Claim<'_>, started_at: i64,
    ) -> Result<CommitPlan, EngineError> {
        let staging = self.staging(run, claim, started_at);
        let it = Iter::new(run, claim, self.tools.clone(), started_at, None);
        let mut draft = Draft {
            cancel: run.cancel_requested,
            ..Draft::default()
        };
        if draft.cancel || it.budget_after(started_at).is_some() {
            return self.conclude(&it, staging, draft).await;
        }
        let Some(host) = self.agents.clone() else {
            draft.error = Some(agent_error(
                "this deployment cannot start agent processes (agent runs need `longrun serve`)",
                true,
            ));
            return self.conclude(&it, staging, draft).await;
        };
        // Durable: the process about to start belongs to this attempt.
        self.take_claim(run, claim, true).await?;
        match host.turn(run, claim.n).await {
            Ok(turn) => {
                if let Some(until) = turn.limited_until_ms {
                    return Err(EngineError::Deferred {
                        delay_ms: (until - self.now()).max(1_000) as u64,
                        reason: format!(
                            "agent {} hit its usage limit; the iteration waits for the reset",
                            turn.backend
                        ),
                    });
                }
                self.record_agent_spend(&it, &turn).await?;
                self.draft_from(&turn, &staging, &mut draft).await;
                // A wrong key or a spent quota fails the same way at every start.
                if let Some(cause) = turn.failure.as_deref().filter(|_| !turn.done) {
                    draft.error = Some(agent_error(
                        &format!("backend {} {cause}", turn.backend),
                        true,
                    ));
                }
                if self.cancel_requested(&it).await? {
                    draft.cancel = true;
                }
            }
            Err(e) => draft.error = Some(agent_error(&e.to_string(), !e.is_retryable())),
        }
        self.conclude(&it, staging, draft).await
    }

    /// The agent's reported usage, once per agent process however often the iteration is
    /// redelivered.
    async fn record_agent_spend(&self, it: &Iter<'_>, turn: &AgentTurn) -> Result<(), EngineError> {
        if turn.agent_run_id.is_empty() {
            return Ok(());
        }
        let spend = Spend {
            model: format!("agent:{}", turn.backend),
            role: "agent".into(),
            input_tokens: turn.input_tokens,
            output_tokens: turn.output_tokens,
            cached_tokens: turn.cached_tokens,
            cost_usd: turn.cost_usd,
            latency_ms: 0,
            queued_ms: 0,
        };
        let key = format!("agent#{}", turn.agent_run_id);
        self.record_spend(it, &spend, &key, false).await?;
        it.spent().add(&spend);
        Ok(())
    }

    /// The turn as the iteration's draft: DONE is an exit claim citing the output, a question
    /// asks the user, what the agent said on the bus is the iteration's record.
    async fn draft_from(&self, turn: &AgentTurn, staging: &Staging, draft: &mut Draft) {
        let wrote_output = !is_blank(&turn.output)
            && staging
                .write_doc(AGENT_OUTPUT_DOC, Some("Agent output"), &turn.output, None)
                .await
                .is_ok();
        let evidence = match staging.doc_exists(AGENT_OUTPUT_DOC).await {
            true => vec![AGENT_OUTPUT_DOC.to_string()],
            false => vec![],
        };
        let summary = match (&turn.agent_run_id, turn.done) {
            (id, _) if id.is_empty() => "DONE was already in the task folder.".to_string(),
            (id, done) => format!(
                "agent {} run {id} ended ({}, exit {}){}{}",
                turn.backend,
                turn.ended,
                turn.exit_code.map_or("unknown".into(), |c| c.to_string()),
                if done { "; DONE is written" } else { "" },
                if wrote_output {
                    "; output.md updated"
                } else {
                    ""
                },
            ),
        };
        let mut remaining_work = vec![];
        if !turn.orphaned.is_empty() {
            remaining_work.push(format!(
                "children still running when the wait ended: {}",
                turn.orphaned.join(", ")
            ));
        }
        draft.planner = Some(PlannerOutput {
            status: StatusBlock {
                exit_signal: turn.done,
                needs_user_input: turn.question.is_some() && !turn.done,
                blocking_questions: turn.question.iter().cloned().collect(),
                progress_summary: summary,
                remaining_work,
                completion_evidence: evidence,
                criteria_evidence: vec![],
                next_action_hint: None,
                confidence: None,
            },
            plan_updates: vec![],
            tool_calls: vec![],
            executor_tasks: vec![],
        });
        if !turn.agent_run_id.is_empty() {
            draft
                .actions
                .push(format!("agent {} run {}", turn.backend, turn.agent_run_id));
        }
        draft
            .tool_results
            .extend(turn.said.iter().map(|said| ToolResultBrief {
                name: "bus".into(),
                ok: true,
                result: clip(said, 500),
                repaired: false,
            }));
    }
}

fn agent_error(message: &str, fatal: bool) -> IterationError {
    IterationError {
        fingerprint: fingerprint::of_error(&format!("agent {message}")),
        message: format!("agent run failed: {message}"),
        fatal,
    }
}
