//! What a run leaves behind: events, workspace docs, iterations, scratchpad entries.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::criteria::CriterionVerdict;
use crate::decide::IterationError;
use crate::planner::StatusBlock;
use crate::run::{ExecutorBrief, RunStatus, StoppingReason, ToolResultBrief};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    RunCreated,
    IterationStarted,
    /// A claimed iteration was given back unfinished, to be tried again later.
    IterationDeferred,
    IterationCostUpdate,
    /// A model call waited for the model's shared capacity (per-model limits) before it was
    /// made; the wait is not running time.
    WaitingForCapacity,
    IterationCommitted,
    /// A completion claim's criteria were checked: each one's verdict, and whether the
    /// claim was accepted.
    CriteriaChecked,
    RunWaiting,
    RunCompleted,
    RunStopped,
    RunCanceled,
    RunFailed,
    CancelRequested,
    UserResponded,
    /// The user posted a message to the run; the next planner prompt carries it.
    MessagePosted,
    RunContinued,
    /// An ended run was asked a follow-up question; the payload sums up the report it
    /// supersedes.
    FollowUpAsked,
    PauseRequested,
    RunPaused,
    RunResumed,
    RunPatched,
    ChildSpawned,
    ChildFinished,
    /// A run's wait for its children timed out; it goes on without those still running.
    ChildWaitTimedOut,
    Warning,
}

impl EventKind {
    /// The final event of an iteration that ends or pauses the run.
    pub fn for_status(status: RunStatus) -> Option<EventKind> {
        match status {
            RunStatus::Completed => Some(EventKind::RunCompleted),
            RunStatus::Stopped => Some(EventKind::RunStopped),
            RunStatus::Canceled => Some(EventKind::RunCanceled),
            RunStatus::Failed => Some(EventKind::RunFailed),
            RunStatus::WaitingOnUser | RunStatus::WaitingOnChildren => Some(EventKind::RunWaiting),
            RunStatus::Paused => Some(EventKind::RunPaused),
            RunStatus::Queued | RunStatus::Running => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EventDraft {
    #[serde(rename = "type")]
    pub kind: EventKind,
    pub payload: serde_json::Value,
}

impl EventDraft {
    pub fn new(kind: EventKind, payload: serde_json::Value) -> Self {
        EventDraft { kind, payload }
    }
}

/// One entry of a run's gapless event log: seqs are 1, 2, 3, … with no holes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    pub run_id: String,
    pub seq: u64,
    #[serde(rename = "type")]
    pub kind: EventKind,
    pub payload: serde_json::Value,
    pub at: i64,
}

pub const MAX_DOC_BYTES: usize = 64 * 1024;
pub const MAX_DOC_PATH: usize = 256;
/// Sources kept per doc (and per scratchpad entry): the most recent win.
pub const MAX_DOC_SOURCES: usize = 16;
/// A longer source (a URL) is cut to this many characters.
pub const MAX_SOURCE_CHARS: usize = 512;

/// Adds `new` in front of `old`, without repeats, keeping at most [`MAX_DOC_SOURCES`].
pub fn merge_sources<'a, 'b>(
    new: impl IntoIterator<Item = &'a String>, old: impl IntoIterator<Item = &'b String>,
) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    let mut add = |s: &String| {
        if out.len() < MAX_DOC_SOURCES && !out.contains(s) {
            out.push(s.clone());
        }
    };
    new.into_iter().for_each(&mut add);
    old.into_iter().for_each(&mut add);
    out
}

/// A workspace document. Paths are `/`-separated; the parent is the path's directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Doc {
    pub path: String,
    pub title: String,
    pub content: String,
    #[serde(default)]
    pub tags: Vec<String>,
    pub created_iteration: u32,
    pub updated_iteration: u32,
    pub version: u32,
    pub updated_at: i64,
    /// Where what it says came from: the URLs fetched or found by search and the tools
    /// (`tool:NAME`) whose results the writing iteration had in view, most recent first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

impl Doc {
    pub fn meta(&self) -> DocMeta {
        DocMeta {
            path: self.path.clone(),
            title: self.title.clone(),
            bytes: self.content.len(),
            created_iteration: self.created_iteration,
            updated_iteration: self.updated_iteration,
            version: self.version,
            sources: self.sources.clone(),
            tags: self.tags.clone(),
            updated_at: self.updated_at,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DocMeta {
    pub path: String,
    pub title: String,
    pub bytes: usize,
    pub created_iteration: u32,
    pub updated_iteration: u32,
    pub version: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// When the iteration that last wrote it began (epoch ms; 0 on docs written before it
    /// was kept).
    #[serde(default)]
    pub updated_at: i64,
}

/// At most this many tags a document, each a short label.
pub const MAX_DOC_TAGS: usize = 16;
pub const MAX_TAG_CHARS: usize = 64;

/// Trims, drops empty and repeated tags, or says which tag is not acceptable.
pub fn normalize_tags(tags: &[String]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = vec![];
    for t in tags {
        let t = t.trim();
        if t.chars().count() > MAX_TAG_CHARS || t.chars().any(char::is_control) {
            return Err(format!(
                "tag `{}` must be at most {MAX_TAG_CHARS} characters, without control characters",
                crate::clip(t, 80)
            ));
        }
        if !t.is_empty() && !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    }
    if out.len() > MAX_DOC_TAGS {
        return Err(format!(
            "{} tags; a document has at most {MAX_DOC_TAGS}",
            out.len()
        ));
    }
    Ok(out)
}

/// Normalizes a workspace path or says why it is not acceptable.
pub fn normalize_doc_path(path: &str) -> Result<String, String> {
    let trimmed = path.trim().trim_start_matches('/');
    if trimmed.is_empty() {
        return Err("path must not be empty".into());
    }
    if trimmed.len() > MAX_DOC_PATH {
        return Err(format!("path must be at most {MAX_DOC_PATH} bytes"));
    }
    let mut parts = vec![];
    for part in trimmed.split('/') {
        match part {
            "" | "." => continue,
            ".." => return Err("path must not contain '..'".into()),
            p if p.chars().any(|c| c.is_control()) => {
                return Err("path must not contain control characters".into());
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err("path must name a document".into());
    }
    Ok(parts.join("/"))
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IterationMetrics {
    pub llm_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    pub running_ms: u64,
    #[serde(default)]
    pub tool_calls: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IterationRecord {
    pub run_id: String,
    pub n: u32,
    /// The run status this iteration committed.
    pub outcome: RunStatus,
    pub summary: String,
    pub status_block: Option<StatusBlock>,
    pub tool_results: Vec<ToolResultBrief>,
    pub executor_results: Vec<ExecutorBrief>,
    pub created_docs: Vec<String>,
    pub updated_docs: Vec<String>,
    pub metrics: IterationMetrics,
    #[schemars(with = "Option<serde_json::Value>")]
    pub error: Option<IterationError>,
    pub progress: bool,
    pub hints: Vec<String>,
    /// The verdicts on the run's criteria, when this iteration claimed completion.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub criteria: Vec<CriterionVerdict>,
    pub stopping_reason: Option<StoppingReason>,
    pub started_at: i64,
    pub committed_at: i64,
}

/// The scratchpad entry of one iteration: the journal the next planner reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PadEntry {
    pub n: u32,
    pub at: i64,
    pub summary: String,
    pub actions: Vec<String>,
    pub results: Vec<String>,
    pub artifacts: Vec<String>,
    pub plan_changes: Vec<String>,
    pub remaining_work: Vec<String>,
    /// The sources this iteration's tools read; docs written while this entry is in the
    /// planner's view cite them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_paths_are_normalized_and_traversal_is_refused() {
        assert_eq!(
            normalize_doc_path("/notes//a/./b.md").unwrap(),
            "notes/a/b.md"
        );
        assert!(normalize_doc_path("../etc/passwd").is_err());
        assert!(normalize_doc_path("  ").is_err());
        assert!(normalize_doc_path(&"a".repeat(300)).is_err());
    }

    #[test]
    fn merged_sources_put_the_new_first_without_repeats_and_are_bounded() {
        let new: Vec<String> = vec!["b".into(), "c".into()];
        let old: Vec<String> = (0..20)
            .map(|i| format!("s{i}"))
            .chain(["b".into()])
            .collect();
        let merged = merge_sources(&new, &old);
        assert_eq!(&merged[..3], ["b", "c", "s0"]);
        assert_eq!(merged.len(), MAX_DOC_SOURCES);
    }
}

// A workspace search hit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DocHit {
    pub path: String,
    pub title: String,
    pub snippet: String,
}

/// The search semantics every store shares: a case-insensitive substring of the content or the
/// title; the snippet starts a little before the first content match.
pub fn doc_hit(path: &str, title: &str, content: &str, query: &str) -> Option<DocHit> {
    let needle = query.to_lowercase();
    let pos = content.to_lowercase().find(&needle);
    if pos.is_none() && !title.to_lowercase().contains(&needle) {
        return None;
    }
    Some(DocHit {
        path: path.to_string(),
        title: title.to_string(),
        snippet: snippet(content, pos.unwrap_or(0)),
    })
}

pub fn snippet(content: &str, byte_pos: usize) -> String {
    // Start up to 60 bytes before the match, on a char boundary.
    let start = content
        .char_indices()
        .rev()
        .find(|(i, _)| *i + 60 <= byte_pos)
        .map_or(0, |(i, _)| i);
    content[start..].chars().take(160).collect()
}

/// Assigns seqs `base_seq+1..` to the change's events and advances the run's `event_seq` to
/// match. Every adapter writes exactly these events, so the log stays gapless.
pub fn sequence_events(change: &mut crate::RunChange, base_seq: u64, at: i64) -> Vec<Event> {
    let events: Vec<Event> = change
        .events
        .iter()
        .enumerate()
        .map(|(i, d)| Event {
            run_id: change.run.id.clone(),
            seq: base_seq + 1 + i as u64,
            kind: d.kind,
            payload: d.payload.clone(),
            at,
        })
        .collect();
    change.run.event_seq = base_seq + events.len() as u64;
    events
}
