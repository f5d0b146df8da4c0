//! The discovery answer (the seed's JSON: tasks, reasoning, blockers), read from model text
//! with the slips models commonly make repaired, and the selection of the tasks a cycle runs:
//! what the last cycle left first, then the new ones, at most `max_parallel`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::task::{Priority, RepoTask, RepoTaskStatus, Rework, one_line};
use crate::planner::{ContractError, parse_contract};

/// Tasks one discovery may propose (the seed asks for 1 to 5); more are dropped.
pub const MAX_DISCOVERED: usize = 8;
/// How often a failed task runs again before it is blocked.
pub const MAX_RETRIES: u32 = 1;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DiscoveryAnswer {
    /// The tasks to work on now; empty when nothing is left toward the goal.
    #[serde(default)]
    pub tasks: Vec<DiscoveredTask>,
    #[serde(default)]
    pub reasoning: String,
    /// Work that cannot be done yet, and why.
    #[serde(default)]
    pub blockers: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DiscoveredTask {
    pub description: String,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default = "yes")]
    pub parallel: bool,
    #[serde(default)]
    pub priority: Priority,
    #[serde(default)]
    pub context: String,
    #[serde(default)]
    pub success_criteria: Vec<String>,
}

fn yes() -> bool {
    true
}

/// Parses a discovery answer. Beyond what the planner's parser forgives (a code fence, prose
/// around the object) it repairs the shapes models slip into — a bare array of tasks, tasks as
/// strings, `successCriteria`, a string where a list belongs, `"p0"` or `"critical"` or `0` for
/// a priority, `"true"` for a boolean — and never invents a missing description.
pub fn parse_discovery(text: &str) -> Result<DiscoveryAnswer, ContractError> {
    // An array before any object is the task list itself: the planner's parser would pick
    // the first task out of it as the whole answer.
    let array_first = match (text.find('['), text.find('{')) {
        (Some(a), Some(o)) => a < o,
        (Some(_), None) => true,
        _ => false,
    };
    let value = match array_first.then(|| bare_array(text)).flatten() {
        Some(tasks) => tasks,
        None => parse_contract::<Value>(text)?,
    };
    let repaired = repair(value);
    let json = repaired.to_string();
    let mut de = serde_json::Deserializer::from_str(&json);
    let mut answer: DiscoveryAnswer =
        serde_path_to_error::deserialize(&mut de).map_err(|e| ContractError {
            path: match e.path().to_string() {
                p if p.is_empty() || p == "." => "$".into(),
                p => p,
            },
            message: e.into_inner().to_string(),
        })?;
    for (i, task) in answer.tasks.iter_mut().enumerate() {
        task.description = task.description.trim().to_string();
        if crate::is_blank(&task.description) {
            return Err(ContractError {
                path: format!("tasks[{i}].description"),
                message: "a task needs a description of what the agent should do".into(),
            });
        }
        task.files.retain(|f| !f.trim().is_empty());
        task.success_criteria.retain(|c| !c.trim().is_empty());
    }
    answer.tasks.truncate(MAX_DISCOVERED);
    Ok(answer)
}

/// JSON Schema of the discovery answer, for providers that take one (structured output).
pub fn discovery_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(DiscoveryAnswer)).unwrap_or_default()
}

/// A reply that is only a JSON array (of tasks).
fn bare_array(text: &str) -> Option<Value> {
    let start = text.find('[')?;
    let end = text.rfind(']')?;
    let v: Value = serde_json::from_str(text.get(start..=end)?).ok()?;
    v.is_array().then_some(v)
}

fn repair(value: Value) -> Value {
    let mut root = match value {
        Value::Array(tasks) => Map::from_iter([("tasks".to_string(), Value::Array(tasks))]),
        Value::Object(map) => map,
        other => return other,
    };
    if let Some(tasks) = root.remove("tasks") {
        let tasks = match tasks {
            Value::Array(items) => Value::Array(items.into_iter().map(repair_task).collect()),
            Value::Null => Value::Array(vec![]),
            other => other,
        };
        root.insert("tasks".into(), tasks);
    }
    if let Some(b) = root.remove("blockers") {
        root.insert("blockers".into(), string_list(b));
    }
    if let Some(r) = root.remove("reasoning") {
        root.insert("reasoning".into(), text_of(r));
    }
    Value::Object(root)
}

fn repair_task(task: Value) -> Value {
    let mut map = match task {
        Value::String(s) => Map::from_iter([("description".to_string(), Value::String(s))]),
        Value::Object(map) => map,
        other => return other,
    };
    for (from, to) in [
        ("successCriteria", "success_criteria"),
        ("success", "success_criteria"),
        ("criteria", "success_criteria"),
        ("task", "description"),
        ("title", "description"),
        ("canRunInParallel", "parallel"),
    ] {
        if !map.contains_key(to)
            && let Some(v) = map.remove(from)
        {
            map.insert(to.into(), v);
        }
    }
    for key in ["files", "success_criteria"] {
        if let Some(v) = map.remove(key) {
            map.insert(key.into(), string_list(v));
        }
    }
    if let Some(v) = map.remove("priority") {
        map.insert("priority".into(), priority(v));
    }
    if let Some(v) = map.remove("parallel") {
        map.insert("parallel".into(), boolean(v));
    }
    if let Some(v) = map.remove("context") {
        map.insert("context".into(), text_of(v));
    }
    Value::Object(map)
}

/// A list of strings from a list, a lone string (one entry: splitting it at commas would be a
/// guess), or null.
fn string_list(v: Value) -> Value {
    match v {
        Value::Null => Value::Array(vec![]),
        Value::String(s) => Value::Array(vec![Value::String(s)]),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|i| match i {
                    Value::String(_) => i,
                    other => text_of(other),
                })
                .collect(),
        ),
        other => other,
    }
}

fn text_of(v: Value) -> Value {
    match v {
        Value::String(_) => v,
        Value::Null => Value::String(String::new()),
        Value::Array(items) => Value::String(
            items
                .into_iter()
                .map(|i| match i {
                    Value::String(s) => s,
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        other => Value::String(other.to_string()),
    }
}

fn priority(v: Value) -> Value {
    let p = match &v {
        Value::Number(n) => match n.as_u64() {
            Some(0) => Some(Priority::P0),
            Some(1) => Some(Priority::P1),
            Some(_) => Some(Priority::P2),
            None => None,
        },
        Value::String(s) => {
            let s = s.trim().to_ascii_lowercase();
            if s.starts_with("p0") || s.starts_with("critical") || s == "high" || s == "0" {
                Some(Priority::P0)
            } else if s.starts_with("p1") || s.starts_with("important") || s == "medium" || s == "1"
            {
                Some(Priority::P1)
            } else if s.starts_with("p2") || s.starts_with("nice") || s == "low" || s == "2" {
                Some(Priority::P2)
            } else {
                None
            }
        }
        Value::Null => Some(Priority::P1),
        _ => None,
    };
    // Unknown: left as it was, so the error names the field and what it got.
    p.map(|p| Value::String(p.as_str().into())).unwrap_or(v)
}

fn boolean(v: Value) -> Value {
    match &v {
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" => Value::Bool(true),
            "false" | "no" => Value::Bool(false),
            _ => v,
        },
        Value::Null => Value::Bool(true),
        _ => v,
    }
}

/// The tasks a cycle runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    /// Ids of tasks earlier cycles left, to run again (their `rework` says why), first.
    pub carried: Vec<String>,
    /// New tasks from this discovery, numbered in this cycle.
    pub new: Vec<RepoTask>,
}

impl Selection {
    pub fn is_empty(&self) -> bool {
        self.carried.is_empty() && self.new.is_empty()
    }

    pub fn len(&self) -> usize {
        self.carried.len() + self.new.len()
    }
}

/// What an earlier cycle left to run again, in the order it should run: conflicts first (the
/// working branch moves away from them with every merge), then failed checks, then retries;
/// within each, by priority and age. A failed task out of retries is not among them.
pub fn carried_over(tasks: &[RepoTask]) -> Vec<(&RepoTask, Rework)> {
    let mut out: Vec<(u8, &RepoTask, Rework)> = tasks
        .iter()
        .filter_map(|t| match t.status {
            RepoTaskStatus::Conflict => Some((
                0,
                t,
                Rework::Conflict {
                    files: match &t.merge {
                        Some(super::task::MergeResult::Conflict { files }) => files.clone(),
                        _ => vec![],
                    },
                },
            )),
            RepoTaskStatus::Failed if t.retry_count < MAX_RETRIES => {
                let failures: Vec<_> = t.checks.iter().filter(|c| !c.passed()).cloned().collect();
                if failures.is_empty() {
                    let error = t.error.clone().unwrap_or_default();
                    Some((2, t, Rework::Retry { error }))
                } else {
                    Some((1, t, Rework::Checks { failures }))
                }
            }
            _ => None,
        })
        .collect();
    out.sort_by_key(|(rank, t, _)| (*rank, t.priority, t.cycle, t.n));
    out.into_iter().map(|(_, t, r)| (t, r)).collect()
}

/// Chooses 1 to `max_parallel` tasks for cycle `cycle`: the carried-over ones first, then the
/// discovered ones by priority (stable), skipping any that repeats an open task's description.
/// A task discovery marked not parallel runs only alone: first in line it is the cycle's one
/// task, later in line it waits for a later discovery.
pub fn select(
    tasks: &[RepoTask], answer: &DiscoveryAnswer, working: &str, cycle: u32, max_parallel: u32,
) -> Selection {
    let max = max_parallel.max(1) as usize;
    let mut selection = Selection::default();
    for (task, _) in carried_over(tasks).into_iter().take(max) {
        selection.carried.push(task.id.clone());
    }
    let open: Vec<String> = tasks
        .iter()
        .filter(|t| !matches!(t.status, RepoTaskStatus::Merged | RepoTaskStatus::Blocked))
        .map(|t| one_line(&t.description).to_lowercase())
        .collect();
    let mut found: Vec<&DiscoveredTask> = answer.tasks.iter().collect();
    found.sort_by_key(|t| t.priority);
    let mut seen = open;
    for d in found {
        if selection.len() >= max {
            break;
        }
        let key = one_line(&d.description).to_lowercase();
        if seen.contains(&key) {
            continue;
        }
        if !d.parallel && !selection.is_empty() {
            continue;
        }
        seen.push(key);
        let n = selection.new.len() as u32 + 1;
        let mut task = RepoTask::new(working, cycle, n, d.description.clone());
        task.files = d.files.clone();
        task.parallel = d.parallel;
        task.priority = d.priority;
        task.context = d.context.clone();
        task.success_criteria = d.success_criteria.clone();
        selection.new.push(task);
        if !d.parallel {
            break;
        }
    }
    selection
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repo::task::{CheckResult, MergeResult};

    const SEED: &str = r#"{
      "tasks": [
        {"description": "Implement user authentication middleware",
         "files": ["src/middleware/auth.ts", "src/routes/protected.ts"],
         "parallel": true, "priority": "P0", "context": "Use JWT",
         "success_criteria": ["protected routes return 401 without a token"]}
      ],
      "reasoning": "Auth first.",
      "blockers": ["Billing waits for auth"]
    }"#;

    #[test]
    fn the_seeds_json_parses_into_an_answer() {
        let answer = parse_discovery(SEED).unwrap();

        assert_eq!(answer.tasks.len(), 1);
        assert_eq!(answer.tasks[0].priority, Priority::P0);
        assert_eq!(answer.tasks[0].files.len(), 2);
        assert_eq!(answer.blockers, vec!["Billing waits for auth"]);
    }

    #[test]
    fn a_fenced_answer_with_camel_case_and_loose_types_is_repaired() {
        let text = "Here are the tasks:\n```json\n{\"tasks\":[{\"description\":\"Add login\",\
            \"files\":\"src/login.rs\",\"priority\":\"critical\",\"parallel\":\"no\",\
            \"successCriteria\":\"login works\"}],\"blockers\":\"none yet\"}\n```\nLet me know!";

        let answer = parse_discovery(text).unwrap();

        let task = &answer.tasks[0];
        assert_eq!(task.files, vec!["src/login.rs"]);
        assert_eq!(task.priority, Priority::P0);
        assert!(!task.parallel);
        assert_eq!(task.success_criteria, vec!["login works"]);
        assert_eq!(answer.blockers, vec!["none yet"]);
    }

    #[test]
    fn a_bare_array_of_task_strings_becomes_the_task_list() {
        let answer = parse_discovery("Tasks: [\"Write the README\", \"Add CI\"]").unwrap();
        let objects = parse_discovery(r#"[{"description":"a"},{"description":"b"}]"#).unwrap();

        let descriptions: Vec<_> = answer
            .tasks
            .iter()
            .map(|t| t.description.as_str())
            .collect();
        assert_eq!(descriptions, vec!["Write the README", "Add CI"]);
        assert!(
            answer
                .tasks
                .iter()
                .all(|t| t.parallel && t.priority == Priority::P1)
        );
        assert_eq!(objects.tasks.len(), 2);
    }

    #[test]
    fn a_task_without_a_description_or_an_unknown_priority_names_its_path() {
        let missing =
            parse_discovery(r#"{"tasks":[{"description":"a"},{"files":["x"]}]}"#).unwrap_err();
        let blank = parse_discovery(r#"{"tasks":[{"description":"  "}]}"#).unwrap_err();
        let priority =
            parse_discovery(r#"{"tasks":[{"description":"a","priority":"urgent"}]}"#).unwrap_err();

        assert_eq!(missing.path, "tasks[1]");
        assert!(missing.message.contains("description"), "{missing}");
        assert_eq!(blank.path, "tasks[0].description");
        assert_eq!(priority.path, "tasks[0].priority");
        assert!(priority.message.contains("urgent"), "{priority}");
    }

    #[test]
    fn the_schema_requires_a_description_for_each_task() {
        let schema = discovery_schema().to_string();

        assert!(
            schema.contains("\"required\":[\"description\"]"),
            "{schema}"
        );
    }

    #[test]
    fn prose_without_json_is_an_error_that_asks_for_one_object() {
        let err = parse_discovery("I think we are done here.").unwrap_err();

        assert!(err.message.contains("JSON object"), "{err}");
    }

    fn left(id_n: u32, status: RepoTaskStatus, priority: Priority) -> RepoTask {
        let mut t = RepoTask::new("w", 1, id_n, format!("old {id_n}"));
        t.status = status;
        t.priority = priority;
        t
    }

    #[test]
    fn tasks_the_last_cycle_left_come_first_conflicts_before_failed_checks() {
        let mut checks = left(1, RepoTaskStatus::Failed, Priority::P0);
        checks.checks = vec![CheckResult {
            command: "make test".into(),
            exit_code: Some(1),
            ..Default::default()
        }];
        let mut conflict = left(2, RepoTaskStatus::Conflict, Priority::P2);
        conflict.merge = Some(MergeResult::Conflict {
            files: vec!["a.rs".into()],
        });
        let mut spent = left(3, RepoTaskStatus::Failed, Priority::P0);
        spent.retry_count = MAX_RETRIES;
        let merged = left(4, RepoTaskStatus::Merged, Priority::P0);
        let answer = parse_discovery(SEED).unwrap();

        let selection = select(&[checks, conflict, spent, merged], &answer, "w", 2, 3);

        assert_eq!(selection.carried, vec!["task-1-2", "task-1-1"]);
        assert_eq!(selection.new.len(), 1);
        assert_eq!(selection.new[0].id, "task-2-1");
        assert_eq!(selection.new[0].branch, "w-task-2-1");
        assert_eq!(selection.new[0].priority, Priority::P0);
    }

    #[test]
    fn selection_stops_at_max_parallel_by_priority_and_a_serial_task_runs_alone() {
        let answer = parse_discovery(
            r#"{"tasks":[{"description":"c","priority":"P2"},{"description":"a","priority":"P0"},
               {"description":"b","priority":"P1"},{"description":"s","priority":"P1","parallel":false}]}"#,
        )
        .unwrap();
        let serial_first = parse_discovery(
            r#"{"tasks":[{"description":"s","priority":"P0","parallel":false},{"description":"a"}]}"#,
        )
        .unwrap();

        let two = select(&[], &answer, "w", 1, 2);
        let alone = select(&[], &serial_first, "w", 1, 3);

        let names: Vec<_> = two.new.iter().map(|t| t.description.as_str()).collect();
        assert_eq!(names, vec!["a", "b"]);
        assert_eq!(alone.new.len(), 1);
        assert_eq!(alone.new[0].description, "s");
    }

    #[test]
    fn a_discovered_task_repeating_an_open_one_is_not_selected_twice() {
        let open = left(1, RepoTaskStatus::Done, Priority::P1);
        let answer =
            parse_discovery(r#"{"tasks":[{"description":"Old  1"},{"description":"new"}]}"#)
                .unwrap();

        let selection = select(&[open], &answer, "w", 2, 3);

        assert_eq!(selection.new.len(), 1);
        assert_eq!(selection.new[0].description, "new");
    }
}
