//! The agent contract (ARCHITECTURE.md, "Agent contract"): what the planner, executors and the repair pass must answer,
//! and parsers that turn model text into it with errors precise enough to correct.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::run::StepStatus;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NextAction {
    Replan,
    Execute,
    AskUser,
    Stop,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Low,
    Medium,
    High,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StatusBlock {
    pub exit_signal: bool,
    pub needs_user_input: bool,
    #[serde(default)]
    pub blocking_questions: Vec<String>,
    pub progress_summary: String,
    #[serde(default)]
    pub remaining_work: Vec<String>,
    /// What proves the objective met: each item names workspace documents by path or plan
    /// steps as `plan:ID`. A claim is accepted only when every one it names exists in this
    /// run, documents are non-empty and were written by this run, and plan steps are done.
    #[serde(default)]
    pub completion_evidence: Vec<String>,
    /// Each of the run's `completion_criteria` mapped to its evidence; required for every
    /// criterion when the run has any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub criteria_evidence: Vec<crate::evidence::CriterionEvidence>,
    #[serde(default)]
    pub next_action_hint: Option<NextAction>,
    #[serde(default)]
    pub confidence: Option<Confidence>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanUpdate {
    pub id: String,
    #[serde(default)]
    pub title: String,
    pub status: StepStatus,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    pub name: String,
    #[serde(default = "empty_object")]
    pub args: serde_json::Value,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(Default::default())
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecutorTask {
    pub title: String,
    pub instructions: String,
    #[serde(default)]
    pub tools: Vec<String>,
    /// Ids of the plan steps this task works on: its executor may update their status and
    /// notes, and no other step's.
    #[serde(default)]
    pub plan_steps: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlannerOutput {
    pub status: StatusBlock,
    #[serde(default)]
    pub plan_updates: Vec<PlanUpdate>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default)]
    pub executor_tasks: Vec<ExecutorTask>,
}

/// What an executor answers: the tool calls it wants (bounded by the engine) and a summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecutorOutput {
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default)]
    pub summary: String,
    /// Updates to the plan steps the task was given (others are refused).
    #[serde(default)]
    pub plan_updates: Vec<StepNote>,
}

/// An executor's update of one plan step its task was given: a new status, a note, or both.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepNote {
    pub id: String,
    #[serde(default)]
    pub status: Option<StepStatus>,
    #[serde(default)]
    pub note: Option<String>,
}

/// What the repair pass answers: corrected calls for the ones that failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepairOutput {
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
}

/// A contract violation, with the JSON path that broke it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message} (at `{path}`)")]
pub struct ContractError {
    pub path: String,
    pub message: String,
}

/// Parses model text into a contract type. Tolerates what models commonly wrap around JSON
/// (code fences, prose before or after) but never guesses at missing fields.
pub fn parse_contract<T: DeserializeOwned>(text: &str) -> Result<T, ContractError> {
    let json = extract_json_object(text).ok_or_else(|| ContractError {
        path: "$".into(),
        message: if text.trim().is_empty() {
            "the answer was empty; expected one JSON object".into()
        } else {
            "no JSON object found in the answer; reply with exactly one JSON object".into()
        },
    })?;
    let mut de = serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        ContractError {
            path: if path.is_empty() || path == "." {
                "$".into()
            } else {
                path
            },
            message: e.into_inner().to_string(),
        }
    })
}

pub fn parse_planner_output(text: &str) -> Result<PlannerOutput, ContractError> {
    let out: PlannerOutput = parse_contract(text)?;
    for (i, call) in out.tool_calls.iter().enumerate() {
        if call.name.trim().is_empty() {
            return Err(ContractError {
                path: format!("tool_calls[{i}].name"),
                message: "tool name must not be empty".into(),
            });
        }
    }
    for (i, step) in out.plan_updates.iter().enumerate() {
        if step.id.trim().is_empty() {
            return Err(ContractError {
                path: format!("plan_updates[{i}].id"),
                message: "plan step id must not be empty".into(),
            });
        }
    }
    Ok(out)
}

/// Finds the outermost JSON object: fenced block first, else the first balanced `{…}`.
fn extract_json_object(text: &str) -> Option<&str> {
    let trimmed = text.trim();
    if trimmed.starts_with('{') && serde_json::from_str::<serde_json::Value>(trimmed).is_ok() {
        return Some(trimmed);
    }
    let start = trimmed.find('{')?;
    let bytes = trimmed.as_bytes();
    let (mut depth, mut in_str, mut escaped) = (0usize, false, false);
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_str {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&trimmed[start..=i]);
                }
            }
            _ => {}
        }
    }
    // Unbalanced: hand the tail to serde so the error says where it broke.
    Some(&trimmed[start..])
}

/// JSON Schema of the planner contract, for providers that accept one (structured output).
pub fn planner_schema() -> std::sync::Arc<serde_json::Value> {
    // Generated once and shared: building (or copying) it costs more than the rest of an
    // iteration's CPU.
    static SCHEMA: std::sync::OnceLock<std::sync::Arc<serde_json::Value>> =
        std::sync::OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            std::sync::Arc::new(
                serde_json::to_value(schemars::schema_for!(PlannerOutput)).unwrap_or_default(),
            )
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = r#"{"status":{"exit_signal":false,"needs_user_input":false,
        "progress_summary":"started","remaining_work":["a"]},
        "tool_calls":[{"name":"doc_write","args":{"path":"a.md","content":"x"}}]}"#;

    #[test]
    fn a_valid_planner_answer_parses() {
        let out = parse_planner_output(VALID).unwrap();
        assert_eq!(out.tool_calls[0].name, "doc_write");
        assert_eq!(out.status.remaining_work, vec!["a"]);
    }

    #[test]
    fn json_inside_a_code_fence_with_prose_is_found() {
        let text = format!("Sure! Here is my plan:\n```json\n{VALID}\n```\nGood luck.");
        assert!(parse_planner_output(&text).is_ok());
    }

    #[test]
    fn a_wrong_type_names_the_field_path() {
        let text =
            r#"{"status":{"exit_signal":"yes","needs_user_input":false,"progress_summary":""}}"#;
        let err = parse_planner_output(text).unwrap_err();
        assert_eq!(err.path, "status.exit_signal");
        assert!(err.message.contains("boolean"), "{err}");
    }

    #[test]
    fn a_missing_status_block_is_reported_at_the_root() {
        let err = parse_planner_output(r#"{"tool_calls":[]}"#).unwrap_err();
        assert!(err.message.contains("status"), "{err}");
    }

    #[test]
    fn prose_without_json_is_a_contract_error_not_a_panic() {
        let err = parse_planner_output("I am done, thanks!").unwrap_err();
        assert!(err.message.contains("no JSON object"));
        let err = parse_planner_output("").unwrap_err();
        assert!(err.message.contains("empty"));
    }

    #[test]
    fn truncated_json_is_a_contract_error() {
        let err = parse_planner_output(r#"{"status":{"exit_signal":true,"#).unwrap_err();
        assert!(!err.message.is_empty());
    }

    #[test]
    fn an_empty_tool_name_is_rejected_with_its_index() {
        let text = r#"{"status":{"exit_signal":false,"needs_user_input":false,"progress_summary":""},
            "tool_calls":[{"name":"doc_list"},{"name":" "}]}"#;
        assert_eq!(
            parse_planner_output(text).unwrap_err().path,
            "tool_calls[1].name"
        );
    }

    #[test]
    fn the_planner_schema_names_the_status_block() {
        let schema = planner_schema().to_string();
        assert!(schema.contains("exit_signal") && schema.contains("tool_calls"));
    }
}
