//! A completion claim's criteria checked (README, "How a run ends"): document checks on the
//! workspace as this commit leaves it, command checks in an agent run's task folder, and the
//! grader — one model call per criterion in a fresh context — last, only when nothing else
//! stands in the claim's way. A grade is held on the run as soon as it is made, so a
//! redelivered iteration asks no grader twice.

use std::sync::{Arc, LazyLock};

use longrun_domain::criteria::{
    Check, Criterion, CriterionVerdict, GRADER_SYSTEM, check_document, command_verdict,
    criterion_id, hold_grade, parse_grade,
};
use longrun_domain::decide::grading_decides;
use longrun_domain::evidence::{ClaimEvidence, Reference, cited_for};
use longrun_domain::planner::StatusBlock;
use longrun_domain::record::normalize_doc_path;
use longrun_domain::{RunChange, clip, fingerprint};
use longrun_ports::Durability;
use longrun_ports::{ChatMessage, LlmRole, StoreError};
use serde_json::{Value, json};

use super::model::{Iter, Llm};
use super::{Engine, EngineError};
use crate::tools::Staging;

/// How much of one cited document the grader is shown, and of all of them.
const GRADED_DOC_CHARS: usize = 12_000;
const GRADED_TOTAL_CHARS: usize = 40_000;

static GRADE_SCHEMA: LazyLock<Arc<Value>> = LazyLock::new(|| {
    Arc::new(json!({
        "type": "object",
        "properties": {
            "pass": {"type": "boolean"},
            "reasons": {"type": "string"}
        },
        "required": ["pass", "reasons"],
        "additionalProperties": false
    }))
});

impl Engine {
    /// The verdicts on the run's checked and graded criteria for this completion claim.
    pub(super) async fn verdicts(
        &self, it: &Iter<'_>, staging: &Staging, status: &StatusBlock, claim: &ClaimEvidence,
    ) -> Result<Vec<CriterionVerdict>, EngineError> {
        let run = it.run;
        let mut verdicts = vec![];
        for (i, c) in run.completion_criteria.iter().enumerate() {
            let id = criterion_id(i);
            match c {
                Criterion::Check(Check::Contains { doc, .. } | Check::Matches { doc, .. }) => {
                    let content = read(staging, doc).await;
                    verdicts.extend(check_document(&id, c, content.as_deref()));
                }
                Criterion::Check(Check::Command { run: command }) => {
                    if self.cancel_requested(it).await? {
                        return Ok(verdicts);
                    }
                    verdicts.push(self.command_check(it, &id, c, command).await);
                }
                Criterion::Text(_) | Criterion::Check(Check::Grader { .. }) => {}
            }
        }
        let mut checked = claim.clone();
        checked.verdicts = verdicts.clone();
        if !grading_decides(run, status, &staging.plan(), &checked, it.n) {
            return Ok(verdicts);
        }
        for (i, c) in run.completion_criteria.iter().enumerate() {
            let graded = match c {
                Criterion::Text(t) if run.grading.text => t,
                Criterion::Check(Check::Grader { rubric }) => rubric,
                _ => continue,
            };
            if self.cancel_requested(it).await? {
                break;
            }
            let refs = cited_for(&run.completion_criteria, &checked, i);
            if let Some(v) = self.grade(it, staging, i, c, graded, &refs).await? {
                verdicts.push(v);
            }
        }
        Ok(verdicts)
    }

    async fn command_check(
        &self, it: &Iter<'_>, id: &str, c: &Criterion, command: &str,
    ) -> CriterionVerdict {
        let Some(host) = self.agents.clone().filter(|_| it.run.agent.is_some()) else {
            return command_verdict(
                id,
                c,
                None,
                "",
                "a command check runs only in an agent run's task folder",
            );
        };
        match host.check(it.run, command).await {
            Ok(done) => command_verdict(id, c, done.exit_code, &done.tail, &done.detail),
            Err(e) => command_verdict(id, c, None, "", &format!("it could not start: {e}")),
        }
    }

    /// Criterion `i` judged by the grader over what the claim cites for it; `None` when no
    /// grader answered (the claim is then not accepted, and the next one is graded again).
    async fn grade(
        &self, it: &Iter<'_>, staging: &Staging, i: usize, c: &Criterion, criterion: &str,
        refs: &[Reference],
    ) -> Result<Option<CriterionVerdict>, EngineError> {
        let id = criterion_id(i);
        let (evidence, looked_at) = shown(staging, refs).await;
        let key = fingerprint::of_json(&json!([criterion, evidence]));
        if let Some(held) = it
            .run
            .grades
            .iter()
            .find(|g| g.iteration == it.n && g.key == key)
        {
            return Ok(Some(held.verdict.clone()));
        }
        let ask = json!({
            "objective": it.run.objective,
            "criterion": criterion,
            "evidence": evidence,
        });
        let mut messages = vec![
            ChatMessage::system(GRADER_SYSTEM),
            ChatMessage::user(serde_json::to_string_pretty(&ask).unwrap_or_default()),
        ];
        let mut unreadable = String::new();
        // One more ask when the answer is not the JSON asked for: repaired, never a crash.
        for _ in 0..2 {
            let answer = match self
                .call_llm(
                    it,
                    LlmRole::Grader,
                    messages.clone(),
                    Some(GRADE_SCHEMA.clone()),
                )
                .await?
            {
                Llm::Answer(a) => a.content,
                Llm::Failed(e) => {
                    tracing::warn!(run = %it.run.id, criterion = %id, error = %e, "no grader answered");
                    return Ok(None);
                }
                Llm::OutOfBudget => return Ok(None),
            };
            if let Some((passed, reasons)) = parse_grade(&answer) {
                let verdict = CriterionVerdict {
                    id: id.clone(),
                    kind: c.kind(true),
                    criterion: c.label(),
                    passed,
                    reason: match reasons.is_empty() {
                        true => format!(
                            "the grader answered {}",
                            if passed { "pass" } else { "fail" }
                        ),
                        false => reasons,
                    },
                    looked_at,
                };
                self.hold(it, &key, &verdict).await?;
                return Ok(Some(verdict));
            }
            unreadable = clip(&answer, 200);
            messages.push(ChatMessage::assistant(&answer));
            messages.push(ChatMessage::user(
                "Answer with the JSON object only: {\"pass\": true or false, \"reasons\": \"…\"}.",
            ));
        }
        Ok(Some(CriterionVerdict {
            id,
            kind: c.kind(true),
            criterion: c.label(),
            passed: false,
            reason: format!("the grader's answer could not be read: {unreadable}"),
            looked_at,
        }))
    }

    /// Holds a grade on the run, fenced on this attempt's claim.
    async fn hold(
        &self, it: &Iter<'_>, key: &str, verdict: &CriterionVerdict,
    ) -> Result<(), EngineError> {
        let now = self.now();
        let written = self
            .store()
            .update_run(&it.run.id, Durability::Now, &|r| {
                it.claim.if_held(r, |c| {
                    Ok(RunChange::of(
                        hold_grade(c, it.n, key, verdict, now),
                        vec![],
                    ))
                })
            })
            .await;
        match written {
            Ok(_) => Ok(()),
            Err(StoreError::Rejected(rejection)) => Err(EngineError::Superseded(rejection)),
            Err(e) => Err(e.into()),
        }
    }
}

/// A document's content as this commit leaves it; `None` when there is none at that path.
async fn read(staging: &Staging, path: &str) -> Option<String> {
    let path = normalize_doc_path(path).ok()?;
    staging
        .read_doc(&path)
        .await
        .ok()
        .flatten()
        .map(|d| d.content)
}

/// What the grader is shown for `refs` (documents' content, plan steps), and their names.
async fn shown(staging: &Staging, refs: &[Reference]) -> (Vec<Value>, Vec<String>) {
    let plan = staging.plan();
    let mut shown = vec![];
    let mut looked_at = vec![];
    let mut left = GRADED_TOTAL_CHARS;
    for r in refs {
        match r {
            Reference::Doc(path) => {
                let content = read(staging, path).await;
                let text = match content {
                    Some(c) => clip(&c, GRADED_DOC_CHARS.min(left)),
                    None => "(no such document)".to_string(),
                };
                left = left.saturating_sub(text.chars().count());
                shown.push(json!({"document": path, "content": text}));
                looked_at.push(path.clone());
            }
            Reference::Step(id) => {
                let step = plan.iter().find(|s| &s.id == id);
                shown.push(json!({
                    "plan_step": id,
                    "title": step.map(|s| s.title.as_str()),
                    "status": step.map(|s| s.status.as_str()),
                }));
                looked_at.push(format!("plan:{id}"));
            }
        }
        if left == 0 {
            break;
        }
    }
    if shown.is_empty() {
        shown.push(json!({"note": "the claim cites nothing"}));
    }
    (shown, looked_at)
}
