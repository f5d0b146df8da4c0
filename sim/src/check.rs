//! The invariants every schedule must hold when it ends, read from the store without faults.

use longrun_ports::prelude::*;
use std::collections::BTreeMap;

use longrun_domain::EventKind;
use longrun_domain::evidence::{DocFound, judge_evidence};
use longrun_domain::report::NarrativeSource;
use longrun_domain::run::{Run, RunStatus};
use longrun_http::Platform;
use longrun_local::InMemoryRunStore;
use longrun_ports::RunQuery;

use crate::{Sim, Spent, lock, world};

/// Every run of these users, children and scheduled runs included, oldest first.
pub(crate) async fn all_runs(store: &InMemoryRunStore, users: &[String]) -> Vec<Run> {
    let q = RunQuery {
        context: None,
        limit: 100_000,
        ..Default::default()
    };
    let mut runs = vec![];
    for u in users {
        runs.extend(store.list_runs(u, &q).await.unwrap_or_default());
    }
    runs.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    runs
}

pub(crate) async fn all(sim: &Sim, p: &Platform, users: &[String], settled: bool) -> Vec<String> {
    let store = &*sim.inner;
    let runs = all_runs(store, users).await;
    let spent = lock(&sim.ledger).spent.clone();
    let mut out = vec![];
    for run in &runs {
        let mine = spent.get(&run.id).cloned().unwrap_or_default();
        committed_once(store, run, &mut out).await;
        books(run, &mine, &mut out);
        budgets(run, &mine, &mut out);
        outcome(store, run, &mut out).await;
        completed_with_evidence(store, run, &mut out).await;
        children(sim, run, &mine, &mut out).await;
        crate::secrets::none_in_text(store, run, &mut out).await;
        nothing_written_after_cancel(store, run, &mut out).await;
        resumed_runs_end(store, run, &mut out).await;
        if settled {
            attached_children_end_with_their_parent(store, run, &mut out).await;
        }
        if !settled && !world::settled(run) {
            out.push(format!(
                "liveness: {} is {} (notified: {}) after faults stopped",
                run.id, run.status, run.notified
            ));
        }
    }
    active_counts(store, users, &runs, &mut out).await;
    let _ = p;
    out
}

/// Iterations 1..n, each committed once; event seqs 1..event_seq, in order.
async fn committed_once(store: &InMemoryRunStore, run: &Run, out: &mut Vec<String>) {
    let iterations = store
        .iterations(&run.id, 0, 100_000)
        .await
        .unwrap_or_default();
    let ns: Vec<u32> = iterations.iter().map(|i| i.n).collect();
    let want: Vec<u32> = (1..=run.iteration).collect();
    if ns != want {
        out.push(format!(
            "{}: committed iterations {ns:?}, want 1..={}",
            run.id, run.iteration
        ));
    }
    let events = store
        .events(&run.id, 0, 1_000_000)
        .await
        .unwrap_or_default();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    if seqs != (1..=run.event_seq).collect::<Vec<u64>>() {
        out.push(format!(
            "{}: event seqs are not 1..={} ({} events)",
            run.id,
            run.event_seq,
            seqs.len()
        ));
    }
    let mut commits: BTreeMap<u64, u32> = BTreeMap::new();
    for e in events
        .iter()
        .filter(|e| e.kind == EventKind::IterationCommitted)
    {
        let n = e
            .payload
            .get("iteration")
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        *commits.entry(n).or_default() += 1;
    }
    for (n, times) in commits {
        if times > 1 {
            out.push(format!("{}: iteration {n} committed {times} times", run.id));
        }
    }
}

/// No write after a cancel is seen: while a cancel is pending (from its request to the run's
/// end, which a follow-up question or a continue may undo later), an iteration begun after the
/// request (a redelivery, a next claim) wrote no document and made no tool call that
/// succeeded; and nothing was committed after the run ended canceled.
async fn nothing_written_after_cancel(store: &InMemoryRunStore, run: &Run, out: &mut Vec<String>) {
    let events = store
        .events(&run.id, 0, 1_000_000)
        .await
        .unwrap_or_default();
    let ended = |k: EventKind| {
        matches!(
            k,
            EventKind::RunCompleted
                | EventKind::RunStopped
                | EventKind::RunCanceled
                | EventKind::RunFailed
        )
    };
    let iterations = store
        .iterations(&run.id, 0, 100_000)
        .await
        .unwrap_or_default();
    for (ci, cancel) in events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == EventKind::CancelRequested)
    {
        let until = events[ci..]
            .iter()
            .find(|e| ended(e.kind))
            .map_or(u64::MAX, |e| e.seq);
        let committed_while_pending: Vec<u64> = events
            .iter()
            .filter(|e| e.kind == EventKind::IterationCommitted && e.seq > cancel.seq)
            .filter(|e| e.seq <= until)
            .filter_map(|e| e.payload.get("iteration").and_then(|v| v.as_u64()))
            .collect();
        let begun_after = iterations.iter().filter(|i| {
            i.started_at > cancel.at && committed_while_pending.contains(&u64::from(i.n))
        });
        for it in begun_after {
            let wrote: Vec<&String> = it.created_docs.iter().chain(&it.updated_docs).collect();
            let ran: Vec<&str> = it
                .tool_results
                .iter()
                .filter(|r| r.ok)
                .map(|r| r.name.as_str())
                .collect();
            if !wrote.is_empty() || !ran.is_empty() {
                out.push(format!(
                    "{}: iteration {} began after the cancel (event {}) and wrote {wrote:?}, ran {ran:?}",
                    run.id, it.n, cancel.seq
                ));
            }
        }
    }
    if run.status == RunStatus::Canceled {
        let canceled = events
            .iter()
            .rposition(|e| e.kind == EventKind::RunCanceled);
        let last_commit = events
            .iter()
            .rposition(|e| e.kind == EventKind::IterationCommitted);
        if let (Some(canceled), Some(commit)) = (canceled, last_commit)
            && commit > canceled
        {
            out.push(format!(
                "{}: an iteration was committed after the run ended canceled",
                run.id
            ));
        }
    }
}

/// Every paused-then-continued run ends: once faults stop, a run the user resumed after its
/// last pause comes to an end or a wait, never back to paused, never stranded on the way.
async fn resumed_runs_end(store: &InMemoryRunStore, run: &Run, out: &mut Vec<String>) {
    let events = store
        .events(&run.id, 0, 1_000_000)
        .await
        .unwrap_or_default();
    let paused = events.iter().rposition(|e| e.kind == EventKind::RunPaused);
    let resumed = events.iter().rposition(|e| {
        e.kind == EventKind::RunResumed && e.payload.get("reason").is_none_or(|r| r.is_null())
    });
    let (Some(paused), Some(resumed)) = (paused, resumed) else {
        return;
    };
    let ended = run.status.is_ended() || run.status.is_waiting();
    if resumed > paused && !(ended && run.notified) {
        out.push(format!(
            "{}: resumed after its pause but {} (notified: {})",
            run.id, run.status, run.notified
        ));
    }
}

/// Tokens, calls and cost on the run are the model calls actually made: none lost, none twice.
fn books(run: &Run, spent: &Spent, out: &mut Vec<String>) {
    let m = &run.metrics;
    if m.tokens() != spent.tokens || m.llm_calls != spent.calls {
        out.push(format!(
            "{}: the run counts {} tokens in {} calls; the model served {} tokens in {} calls",
            run.id,
            m.tokens(),
            m.llm_calls,
            spent.tokens,
            spent.calls
        ));
    }
    if (m.cost_usd - spent.cost_usd).abs() > 1e-9 {
        out.push(format!(
            "{}: cost {} on the run, {} served",
            run.id, m.cost_usd, spent.cost_usd
        ));
    }
}

/// No budget overshot by more than the calls that were in flight when it ran out.
fn budgets(run: &Run, spent: &Spent, out: &mut Vec<String>) {
    let b = &run.budgets;
    if run.iteration > b.max_iterations {
        out.push(format!(
            "{}: {} iterations, budget {}",
            run.id, run.iteration, b.max_iterations
        ));
    }
    // An iteration's last planner call, or its executors running side by side.
    let in_flight = spent.max_call * 4;
    if let Some(max) = b.max_tokens
        && run.metrics.tokens() > max + in_flight
    {
        out.push(format!(
            "{}: {} tokens, budget {max}",
            run.id,
            run.metrics.tokens()
        ));
    }
}

/// Every ended run has a report and one outcome in the inbox; "notified" means it is there.
async fn outcome(store: &InMemoryRunStore, run: &Run, out: &mut Vec<String>) {
    let inbox = store
        .notifications(&run.user_id, 100_000)
        .await
        .unwrap_or_default();
    let mine: Vec<_> = inbox.iter().filter(|n| n.run_id == run.id).collect();
    if run.status.is_ended() && run.report.is_none() {
        out.push(format!("{}: {} without a report", run.id, run.status));
    }
    // A report a person reads: a narrative always, and one no model wrote says why.
    if let Some(r) = &run.report {
        let unexplained = r.summary_source == NarrativeSource::Records && r.summary_note.is_none();
        if r.summary.trim().is_empty() || unexplained {
            out.push(format!(
                "{}: report summary {:?} ({:?}, note {:?})",
                run.id, r.summary, r.summary_source, r.summary_note
            ));
        }
    }
    let id = format!("{}#{}#{}", run.id, run.iteration, run.status);
    let published = mine.iter().any(|n| n.id == id);
    // Waiting on children and paused are not announced: the user did not need to act.
    let announced = run.status.is_ended() || run.status == RunStatus::WaitingOnUser;
    if run.notified && announced && !published {
        let ids: Vec<&str> = mine.iter().map(|n| n.id.as_str()).collect();
        out.push(format!(
            "{}: marked notified, but the inbox has no {id} (it has {ids:?})",
            run.id
        ));
    }
}

/// Completed ⇒ accepted evidence: the committed claim of a completed run names documents
/// the committed workspace holds (non-empty, written by one of the run's iterations) or done
/// plan steps, and maps every criterion of the run to them.
async fn completed_with_evidence(store: &InMemoryRunStore, run: &Run, out: &mut Vec<String>) {
    if run.status != RunStatus::Completed {
        return;
    }
    let last = store
        .iterations(&run.id, run.iteration.saturating_sub(1), 1)
        .await
        .unwrap_or_default();
    let Some(status) = last.first().and_then(|i| i.status_block.clone()) else {
        out.push(format!("{}: completed without a status block", run.id));
        return;
    };
    let docs = store.docs(&run.id, "", 10_000).await.unwrap_or_default();
    let written: Vec<String> = docs
        .iter()
        .filter(|d| d.updated_iteration > 0 && d.bytes > 0)
        .map(|d| d.path.clone())
        .collect();
    let (_, mut claim) = longrun_domain::evidence::claim_of(&status, &run.plan, &written);
    claim.verdicts = last[0].criteria.clone();
    for path in claim.doc_paths() {
        let found = match store.doc(&run.id, &path).await.ok().flatten() {
            Some(d) => DocFound::Present {
                blank: d.content.trim().is_empty(),
                updated_iteration: d.updated_iteration,
            },
            None => DocFound::Missing,
        };
        claim.docs.push((path, found));
    }
    let problems = judge_evidence(
        &run.completion_criteria,
        run.grading.text,
        &claim,
        &run.plan,
        run.iteration,
    );
    if !status.exit_signal || claim.references.is_empty() || !problems.is_empty() {
        let problems: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        out.push(format!(
            "{}: completed on a claim that is not accepted (exit_signal {}, evidence {:?}): {problems:?}",
            run.id, status.exit_signal, status.completion_evidence
        ));
    }
}

/// Children's budgets fit in what their parent had left.
async fn children(sim: &Sim, run: &Run, spent: &Spent, out: &mut Vec<String>) {
    let store = &*sim.inner;
    if let Some(max) = run.budgets.max_tokens {
        let reserved: u64 = run
            .children
            .iter()
            .filter_map(|c| c.budgets.max_tokens)
            .sum();
        if run.metrics.tokens() + reserved > max + spent.max_call * 4 && !run.children.is_empty() {
            out.push(format!(
                "{}: spent {} and gave children {reserved} of a {max}-token budget",
                run.id,
                run.metrics.tokens()
            ));
        }
    }
    for c in &run.children {
        let deleted = lock(&sim.deleted).contains(&c.id);
        if !deleted && store.get_run(&c.id).await.ok().flatten().is_none() {
            out.push(format!("{}: child {} does not exist", run.id, c.id));
        }
    }
}

/// Once the world is at rest, an ended parent's attached children have ended too (detached
/// ones, and those its wait timed out on, may run on).
async fn attached_children_end_with_their_parent(
    store: &InMemoryRunStore, run: &Run, out: &mut Vec<String>,
) {
    if !run.status.is_ended() {
        return;
    }
    for c in run.children.iter().filter(|c| !c.detached) {
        let Some(child) = store.get_run(&c.id).await.ok().flatten() else {
            continue;
        };
        // A user may send an ended child back to work (`continue`) after its parent ended.
        let revived = store
            .events(&c.id, 0, 100_000)
            .await
            .unwrap_or_default()
            .iter()
            .any(|e| e.kind == EventKind::RunContinued);
        if !child.status.is_ended() && !revived {
            out.push(format!(
                "{}: ended {} but its attached child {} is {}",
                run.id, run.status, c.id, child.status
            ));
        }
    }
}

/// Each user's active-run counter is the runs actually holding a slot.
async fn active_counts(
    store: &InMemoryRunStore, users: &[String], runs: &[Run], out: &mut Vec<String>,
) {
    for u in users {
        let counted = store.active_runs(u).await.unwrap_or_default();
        let holding = runs
            .iter()
            .filter(|r| &r.user_id == u && !r.status.is_ended())
            .count() as u32;
        if counted != holding {
            out.push(format!(
                "{u}: active counter {counted}, runs holding a slot {holding}"
            ));
        }
    }
}
