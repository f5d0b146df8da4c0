//! Built-in tools and the registry that validates calls against each tool's JSON schema.
//!
//! Tools never write to the store: they stage changes in `Staging`, which the iteration
//! commits in its single transaction (or drops, if the worker crashes).

mod builtin;
mod staging;

use std::collections::BTreeMap;
use std::sync::Arc;

use longrun_domain::decide::ToolFailureKind;
use longrun_domain::planner::ToolCall;
use longrun_ports::Tool;
use serde_json::Value;

use builtin::{AskUser, DocList, DocRead, DocSearch, DocWrite, PlanUpdateTool, WaitForChildren};
pub use builtin::{MAX_CHILD_DEPTH, MAX_CHILDREN, SpawnRun};
pub use staging::{ChildRequest, Staged, Staging};

struct Entry {
    tool: Arc<dyn Tool>,
    schema: Value,
    validator: jsonschema::Validator,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// Result of one validated (or refused) tool call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutcome {
    pub name: String,
    pub args: Value,
    pub result: Result<Value, String>,
    /// Refused before it ran: the tool does not exist (or may not be used here), or its
    /// arguments do not match its schema.
    pub refused: Option<ToolFailureKind>,
}

/// Cheap to clone: a run's iteration adds its owner's tools to a copy of the built-ins.
#[derive(Clone)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<Entry>>,
    /// The planner's tool descriptions, rendered once per registration instead of per call.
    block: String,
}

/// Tools an executor may use: reads and writes of the workspace, never questions or the plan.
pub const EXECUTOR_TOOLS: [&str; 4] = ["doc_write", "doc_read", "doc_list", "doc_search"];

/// Whether `name` is an MCP tool's (`server.tool`): no other tool name has a dot (built-ins and
/// registered tools are `[a-z][a-z0-9_]*`).
pub fn is_mcp_tool(name: &str) -> bool {
    name.contains('.')
}

impl ToolRegistry {
    pub fn builtin() -> Self {
        let mut reg = ToolRegistry {
            tools: BTreeMap::new(),
            block: String::new(),
        };
        let tools: [Arc<dyn Tool>; 8] = [
            Arc::new(DocWrite),
            Arc::new(DocRead),
            Arc::new(DocList),
            Arc::new(DocSearch),
            Arc::new(PlanUpdateTool),
            Arc::new(AskUser),
            Arc::new(SpawnRun {
                max_depth: MAX_CHILD_DEPTH,
            }),
            Arc::new(WaitForChildren),
        ];
        for t in tools {
            reg.register(t);
        }
        reg
    }

    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        // Built-in schemas come from our own types; one that does not compile is a bug.
        #[allow(clippy::expect_used)]
        self.try_register(tool).expect("tool schema compiles");
    }

    /// Adds a tool whose schema may be invalid (a user's); the error says why.
    pub fn try_register(&mut self, tool: Arc<dyn Tool>) -> Result<(), String> {
        let schema = tool.schema();
        let validator = jsonschema::validator_for(&schema)
            .map_err(|e| format!("tool `{}` has an invalid schema: {e}", tool.name()))?;
        self.tools.insert(
            tool.name().to_string(),
            Arc::new(Entry {
                tool,
                schema,
                validator,
            }),
        );
        self.block = crate::prompt::tools_block(&self.specs(None));
        Ok(())
    }

    /// This registry plus `extra`; an extra tool never replaces a built-in.
    pub fn with_extra(&self, extra: Vec<Arc<dyn Tool>>) -> ToolRegistry {
        let mut reg = self.clone();
        for tool in extra {
            if self.tools.contains_key(tool.name()) {
                continue;
            }
            if let Err(e) = reg.try_register(tool) {
                tracing::warn!(error = %e, "a user tool was left out");
            }
        }
        reg
    }

    /// This registry narrowed to `names` (a run's `allowed_tools`): the planner is offered, and
    /// may call, only these.
    pub fn only(&self, names: &[String]) -> ToolRegistry {
        let mut reg = self.clone();
        reg.tools.retain(|name, _| names.contains(name));
        reg.block = crate::prompt::tools_block(&reg.specs(None));
        reg
    }

    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Whether `name` is a write tool (unknown names are not: they fail validation anyway).
    pub fn writes(&self, name: &str) -> bool {
        self.tools.get(name).is_some_and(|e| e.tool.writes())
    }

    pub fn prompt_block(&self) -> &str {
        &self.block
    }

    pub fn specs(&self, only: Option<&[&str]>) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|(name, _)| only.is_none_or(|o| o.contains(&name.as_str())))
            .map(|(name, e)| ToolSpec {
                name: name.to_string(),
                description: e.tool.description().to_string(),
                parameters: e.schema.clone(),
            })
            .collect()
    }

    /// Checks the call against the tool's schema; the error names every violation.
    pub fn validate(&self, call: &ToolCall, allowed: Option<&[&str]>) -> Result<(), String> {
        self.check(call, allowed).map_err(|(_, e)| e)
    }

    /// `validate`, saying which way a refused call failed.
    fn check(
        &self, call: &ToolCall, allowed: Option<&[&str]>,
    ) -> Result<(), (ToolFailureKind, String)> {
        let unknown = |e: String| (ToolFailureKind::UnknownTool, e);
        let Some(entry) = self.tools.get(call.name.as_str()) else {
            let names: Vec<&str> = self
                .tools
                .keys()
                .map(String::as_str)
                .filter(|n| allowed.is_none_or(|a| a.contains(n)))
                .collect();
            return Err(unknown(format!(
                "unknown tool `{}`; available: {}",
                call.name,
                names.join(", ")
            )));
        };
        if let Some(allowed) = allowed
            && !allowed.contains(&call.name.as_str())
        {
            return Err(unknown(format!(
                "tool `{}` is not allowed here; allowed: {}",
                call.name,
                allowed.join(", ")
            )));
        }
        let errors: Vec<String> = entry
            .validator
            .iter_errors(&call.args)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err((
                ToolFailureKind::InvalidArguments,
                format!(
                    "arguments for `{}` do not match its schema: {}",
                    call.name,
                    errors.join("; ")
                ),
            ))
        }
    }

    pub async fn invoke(
        &self, staging: &Staging, call: &ToolCall, allowed: Option<&[&str]>,
    ) -> ToolOutcome {
        let (result, refused) = match self.check(call, allowed) {
            Err((kind, e)) => (Err(e), Some(kind)),
            Ok(()) => (
                match self.tools.get(call.name.as_str()) {
                    Some(entry) => {
                        let result = entry
                            .tool
                            .call(staging, call.args.clone())
                            .await
                            // A tool's error text may quote its request or its server's
                            // answer: scrubbed before it reaches the records.
                            .map_err(longrun_ports::redact::scrubbed);
                        if let Ok(out) = &result {
                            staging.note_sources(entry.tool.sources(&call.args, out));
                        }
                        result
                    }
                    None => Err(format!("unknown tool `{}`", call.name)),
                },
                None,
            ),
        };
        ToolOutcome {
            name: call.name.clone(),
            args: call.args.clone(),
            result,
            refused,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall {
            name: name.into(),
            args,
        }
    }

    #[test]
    fn a_call_missing_a_required_argument_is_refused_with_the_reason() {
        let reg = ToolRegistry::builtin();
        let err = reg
            .validate(&call("doc_write", json!({"path": "a.md"})), None)
            .unwrap_err();
        assert!(err.contains("content"), "{err}");
    }

    #[test]
    fn unknown_arguments_and_wrong_types_are_refused() {
        let reg = ToolRegistry::builtin();
        assert!(
            reg.validate(&call("doc_read", json!({"path": "a", "x": 1})), None)
                .is_err()
        );
        assert!(
            reg.validate(&call("doc_read", json!({"path": 5})), None)
                .is_err()
        );
        assert!(
            reg.validate(&call("doc_read", json!({"path": "a"})), None)
                .is_ok()
        );
    }

    #[test]
    fn an_unknown_tool_lists_what_is_available() {
        let err = ToolRegistry::builtin()
            .validate(&call("shell", json!({})), None)
            .unwrap_err();
        assert!(err.contains("doc_write") && err.contains("shell"), "{err}");
    }

    #[test]
    fn executors_cannot_ask_the_user() {
        let reg = ToolRegistry::builtin();
        let err = reg
            .validate(
                &call("ask_user", json!({"questions": ["?"]})),
                Some(&EXECUTOR_TOOLS),
            )
            .unwrap_err();
        assert!(err.contains("not allowed"), "{err}");
    }

    #[test]
    fn plan_update_statuses_are_an_enum() {
        let reg = ToolRegistry::builtin();
        let bad = json!({"steps": [{"id": "s1", "title": "t", "status": "finished"}]});
        assert!(reg.validate(&call("plan_update", bad), None).is_err());
    }
}
