//! The workspace's state as one value, so that a return to a state the run was in before (a
//! document flipping between two versions, a plan step toggled back and forth) is told apart
//! from progress. Pure: the engine hands in what an iteration changed, never the workspace.

use sha2::{Digest, Sha256};

use crate::run::PlanStep;

/// How many of the states the last iterations left a run remembers: enough to catch a flip
/// between a few versions, few enough that the run row (rewritten at every write) stays small.
pub const STATES_KEPT: usize = 8;

/// One document's part of the docs' hash. The docs' hash is the XOR of every document's part,
/// so a commit brings it up to date from what it wrote alone (the old part out, the new one
/// in), and no iteration reads the whole workspace.
pub fn doc_part(path: &str, title: &str, content: &str) -> u64 {
    let mut h = Sha256::new();
    for field in [path, title, content] {
        h.update((field.len() as u64).to_le_bytes());
        h.update(field.as_bytes());
    }
    let digest = h.finalize();
    u64::from_le_bytes(digest[..8].try_into().unwrap_or_default())
}

/// The docs' hash as a run stores it (hex: a JSON number this large loses digits in
/// JavaScript); an empty or unreadable one is the empty workspace's, 0.
pub fn parse_docs_hash(stored: &str) -> u64 {
    u64::from_str_radix(stored, 16).unwrap_or(0)
}

pub fn format_docs_hash(hash: u64) -> String {
    format!("{hash:016x}")
}

/// The workspace state: the docs' hash and each plan step's id and status (notes and the
/// iteration that touched a step are not the state of the work).
pub fn workspace_state(docs_hash: u64, plan: &[PlanStep]) -> String {
    let mut h = Sha256::new();
    h.update(docs_hash.to_le_bytes());
    for step in plan {
        h.update((step.id.len() as u64).to_le_bytes());
        h.update(step.id.as_bytes());
        h.update(step.status.as_str().as_bytes());
        h.update([0]);
    }
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `states` with `state` as its newest, each state once, at most [`STATES_KEPT`].
pub fn remember(states: &mut Vec<String>, state: &str) {
    states.retain(|s| s != state);
    states.push(state.to_string());
    let extra = states.len().saturating_sub(STATES_KEPT);
    states.drain(..extra);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::StepStatus;

    fn step(id: &str, status: StepStatus) -> PlanStep {
        PlanStep {
            id: id.into(),
            title: "t".into(),
            status,
            iteration_last_touched: 1,
            notes: None,
        }
    }

    #[test]
    fn a_document_written_back_to_an_earlier_version_gives_the_earlier_state_again() {
        // Arrange: the docs' hash after writing v1, then v2 over it, then v1 again.
        let plan = [step("s1", StepStatus::InProgress)];
        let v1 = doc_part("notes/a.md", "A", "one");
        let v2 = doc_part("notes/a.md", "A", "two");
        let other = doc_part("notes/b.md", "B", "kept");

        // Act
        let first = other ^ v1;
        let second = first ^ v1 ^ v2;
        let third = second ^ v2 ^ v1;

        // Assert
        assert_eq!(workspace_state(third, &plan), workspace_state(first, &plan));
        assert_ne!(
            workspace_state(second, &plan),
            workspace_state(first, &plan)
        );
    }

    #[test]
    fn a_plan_steps_status_is_part_of_the_state_and_its_note_is_not() {
        let pending = [step("s1", StepStatus::Pending)];
        let done = [step("s1", StepStatus::Done)];
        let mut noted = done.clone();
        noted[0].notes = Some("found it".into());
        noted[0].iteration_last_touched = 9;

        assert_ne!(workspace_state(0, &pending), workspace_state(0, &done));
        assert_eq!(workspace_state(0, &done), workspace_state(0, &noted));
    }

    #[test]
    fn remembered_states_are_bounded_newest_last_and_each_kept_once() {
        let mut states = vec![];
        for i in 0..12 {
            remember(&mut states, &format!("s{i}"));
        }
        remember(&mut states, "s6");

        assert_eq!(states.len(), STATES_KEPT);
        assert_eq!(states.last().map(String::as_str), Some("s6"));
        assert_eq!(states.iter().filter(|s| *s == "s6").count(), 1);
        assert!(!states.contains(&"s3".to_string()));
    }

    #[test]
    fn a_stored_docs_hash_reads_back_and_an_absent_one_is_the_empty_workspace() {
        let h = doc_part("a.md", "", "x");
        assert_eq!(parse_docs_hash(&format_docs_hash(h)), h);
        assert_eq!(parse_docs_hash(""), 0);
    }
}
