//! The `RunStore` contract, run against every adapter.
#![allow(clippy::unwrap_used)]

use longrun_ports::CatalogExt;
use std::sync::Arc;

use longrun_domain::change::{self, ActiveDelta};
use longrun_domain::run::{RunContext, RunStatus, Spend};
use longrun_domain::{
    Doc, EventDraft, EventKind, PadEntry, Rejection, RunChange, RunTemplate, Schedule,
};
use longrun_domain::{McpServer, Notification, UserTool, Webhook};
use longrun_local::{InMemoryRunStore, SqliteDb, SqliteRunStore};
use longrun_ports::{ContextFilter, Durability, IdempotencyRecord, RunQuery, Store, StoreError};
use longrun_tests::new_run;
use serde_json::json;

type Fixture = (Arc<dyn Store>, Option<tempfile::TempDir>);

/// DynamoDB on the emulator: a fresh table per test.
async fn dynamodb() -> Fixture {
    let c = longrun_tests::aws::clients().await;
    (Arc::new(longrun_tests::aws::dynamodb_store(&c).await), None)
}

async fn memory() -> Fixture {
    (Arc::new(InMemoryRunStore::new()), None)
}

async fn sqlite() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = SqliteDb::open(&dir.path().join("t.sqlite3")).unwrap();
    (Arc::new(SqliteRunStore::new(db)), Some(dir))
}

/// Records `times` one-token model calls of `iteration` on run r1, one write each.
async fn spends(s: &dyn Store, iteration: u32, times: u32) {
    for _ in 0..times {
        s.update_run("r1", Durability::Now, &|r| {
            Ok(change::record_spend(r, iteration, &spend(1), 11))
        })
        .await
        .unwrap();
    }
}

fn spend(tokens: u64) -> Spend {
    Spend {
        model: "script:t".into(),
        role: "planner".into(),
        input_tokens: tokens,
        output_tokens: 0,
        cached_tokens: 0,
        cost_usd: Some(0.001),
        latency_ms: 0,
        queued_ms: 0,
    }
}

fn doc(path: &str, content: &str, version: u32) -> Doc {
    Doc {
        path: path.into(),
        title: path.into(),
        content: content.into(),
        tags: vec!["tea".into(), "draft".into()],
        created_iteration: 1,
        updated_iteration: version,
        version,
        updated_at: 1_700_000_000_000 + version as i64,
        sources: vec![
            format!("https://example.org/{path}"),
            "tool:price_lookup".into(),
        ],
    }
}

fn pad(n: u32) -> PadEntry {
    PadEntry {
        n,
        at: n as i64,
        summary: format!("pad {n}"),
        actions: vec![],
        results: vec![],
        artifacts: vec![],
        plan_changes: vec![],
        remaining_work: vec![],
        sources: vec![format!("https://example.org/{n}")],
    }
}

mod suite {
    use super::*;

    /// The iteration numbers of run r1's last `last` scratchpad entries, oldest first.
    async fn pad_numbers(s: &dyn Store, last: usize) -> Vec<u32> {
        s.scratchpad("r1", last)
            .await
            .unwrap()
            .iter()
            .map(|p| p.n)
            .collect()
    }

    pub async fn creating_a_run_stores_it_with_its_first_event(s: &dyn Store) {
        let run = s
            .create_run(change::create(new_run("r1", "alice", 10), 5))
            .await
            .unwrap();
        assert_eq!(run.event_seq, 1);
        assert_eq!(s.get_run("r1").await.unwrap().unwrap(), run);
        let events = s.events("r1", 0, 10).await.unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].kind, EventKind::RunCreated);
        assert_eq!(s.active_runs("alice").await.unwrap(), 1);
    }

    pub async fn creating_the_same_run_twice_is_a_conflict_and_writes_nothing(s: &dyn Store) {
        s.create_run(change::create(new_run("r1", "alice", 10), 5))
            .await
            .unwrap();
        let err = s
            .create_run(change::create(new_run("r1", "alice", 10), 5))
            .await
            .unwrap_err();
        assert!(
            matches!(err, StoreError::Rejected(Rejection::Conflict(_))),
            "{err}"
        );
        assert_eq!(s.active_runs("alice").await.unwrap(), 1);
        assert_eq!(s.events("r1", 0, 10).await.unwrap().len(), 1);
    }

    pub async fn the_active_limit_refuses_a_slot_and_release_frees_it(s: &dyn Store) {
        for i in 0..2 {
            s.create_run(change::create(new_run(&format!("r{i}"), "alice", i), 2))
                .await
                .unwrap();
        }
        let err = s
            .create_run(change::create(new_run("r9", "alice", 9), 2))
            .await
            .unwrap_err();
        assert!(matches!(
            err,
            StoreError::Rejected(Rejection::LimitExceeded { limit: 2 })
        ));
        assert!(
            s.get_run("r9").await.unwrap().is_none(),
            "a refused create writes nothing"
        );
        // Another user is not affected.
        s.create_run(change::create(new_run("b1", "bob", 1), 2))
            .await
            .unwrap();
        s.update_run("r0", Durability::Now, &|r| {
            let mut next = r.clone();
            next.transition_to(RunStatus::Canceled, r.updated_at)?;
            Ok(RunChange {
                active: ActiveDelta::Release,
                ..RunChange::of(
                    next,
                    vec![EventDraft::new(EventKind::RunCanceled, json!({}))],
                )
            })
        })
        .await
        .unwrap();
        assert_eq!(s.active_runs("alice").await.unwrap(), 1);
        s.create_run(change::create(new_run("r9", "alice", 9), 2))
            .await
            .unwrap();
    }

    pub async fn updates_append_gapless_events_and_a_rejection_writes_nothing(s: &dyn Store) {
        s.create_run(change::create(new_run("r1", "alice", 10), 5))
            .await
            .unwrap();
        for i in 0..3 {
            s.update_run("r1", Durability::Now, &|r| {
                Ok(change::record_spend(r, 1, &spend(10 + i), 11))
            })
            .await
            .unwrap();
        }
        let err = s
            .update_run("r1", Durability::Now, &|_| {
                Err(Rejection::Conflict("no".into()))
            })
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Rejected(_)));
        let missing = s
            .update_run("nope", Durability::Now, &|r| {
                Ok(RunChange::of(r.clone(), vec![]))
            })
            .await
            .unwrap_err();
        assert!(matches!(missing, StoreError::Rejected(Rejection::NotFound)));
        let run = s.get_run("r1").await.unwrap().unwrap();
        assert_eq!(run.metrics.input_tokens, 33);
        let seqs: Vec<u64> = s
            .events("r1", 0, 100)
            .await
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, (1..=run.event_seq).collect::<Vec<_>>());
        assert_eq!(run.event_seq, 4);
    }

    pub async fn events_page_by_after_and_limit(s: &dyn Store) {
        s.create_run(change::create(new_run("r1", "alice", 10), 5))
            .await
            .unwrap();
        spends(s, 1, 9).await;
        let page = s.events("r1", 3, 4).await.unwrap();
        assert_eq!(
            page.iter().map(|e| e.seq).collect::<Vec<_>>(),
            vec![4, 5, 6, 7]
        );
        assert!(s.events("r1", 10, 4).await.unwrap().is_empty());
        assert!(s.events("other", 0, 4).await.unwrap().is_empty());
    }

    pub async fn paging_the_log_from_every_position_sees_each_event_once_in_order(s: &dyn Store) {
        // Arrange: commits with their scratchpad entries between runs of spends, so the log
        // mixes iterations, batches and events not yet moved out of the run.
        s.create_run(change::create(new_run("r1", "alice", 10), 5))
            .await
            .unwrap();
        for n in 1..=4u32 {
            spends(s, n, 2 * n + 1).await;
            s.update_run("r1", Durability::Now, &|r| {
                let mut next = r.clone();
                next.iteration = n;
                let mut rec = longrun_domain::testing::sample_record(n);
                rec.run_id = "r1".into();
                Ok(RunChange {
                    iteration: Some(rec),
                    pad: Some(pad(n)),
                    ..RunChange::of(
                        next,
                        vec![EventDraft::new(
                            EventKind::IterationCommitted,
                            json!({"iteration": n}),
                        )],
                    )
                })
            })
            .await
            .unwrap();
        }
        spends(s, 5, 2).await;
        let total = s.get_run("r1").await.unwrap().unwrap().event_seq;

        // Act + Assert: every starting point and page size walks the same gapless log.
        let mid = total / 2;
        for (limit, starts) in [(4, (0..=total).collect::<Vec<_>>()), (1, vec![0, mid])] {
            for start in starts {
                let mut seen = vec![];
                let mut after = start;
                loop {
                    let page = s.events("r1", after, limit).await.unwrap();
                    assert!(page.len() <= limit);
                    let Some(last) = page.last() else { break };
                    after = last.seq;
                    seen.extend(page.iter().map(|e| e.seq));
                }
                assert_eq!(
                    seen,
                    (start + 1..=total).collect::<Vec<_>>(),
                    "from {start}, {limit} at a time"
                );
            }
        }
        assert_eq!(pad_numbers(s, 3).await, vec![2, 3, 4]);
        let iterations: Vec<u32> = s
            .iterations("r1", 1, 2)
            .await
            .unwrap()
            .iter()
            .map(|i| i.n)
            .collect();
        assert_eq!(iterations, vec![2, 3]);
    }

    pub async fn fifty_parallel_creates_get_exactly_the_default_limit_of_three(s: Arc<dyn Store>) {
        // Arrange: one user creates 50 runs at once under the product's limit of 3.
        let limit = longrun_http::config::DEFAULT_ACTIVE_LIMIT;
        assert_eq!(limit, 3);
        let tasks: Vec<_> = (0..50)
            .map(|i| {
                let s = s.clone();
                tokio::spawn(async move {
                    s.create_run(change::create(new_run(&format!("p{i}"), "alice", i), limit))
                        .await
                })
            })
            .collect();

        // Act
        let mut accepted = 0;
        for t in tasks {
            match t.await.unwrap() {
                Ok(_) => accepted += 1,
                Err(StoreError::Rejected(Rejection::LimitExceeded { limit: 3 })) => {}
                Err(e) => panic!("unexpected error: {e}"),
            }
        }

        // Assert
        assert_eq!(accepted, 3);
        assert_eq!(s.active_runs("alice").await.unwrap(), 3);
    }

    pub async fn concurrent_writers_never_lose_an_update_or_a_seq(s: Arc<dyn Store>) {
        s.create_run(change::create(new_run("r1", "alice", 10), 5))
            .await
            .unwrap();
        let tasks: Vec<_> = (0..40)
            .map(|_| {
                let s = s.clone();
                tokio::spawn(async move {
                    s.update_run("r1", Durability::Now, &|r| {
                        Ok(change::record_spend(r, 1, &spend(1), 11))
                    })
                    .await
                    .unwrap()
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let run = s.get_run("r1").await.unwrap().unwrap();
        assert_eq!(run.metrics.input_tokens, 40);
        assert_eq!(run.event_seq, 41);
        let seqs: Vec<u64> = s
            .events("r1", 0, 100)
            .await
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, (1..=41).collect::<Vec<_>>());
    }

    pub async fn a_commit_writes_iteration_docs_and_pad_together_and_only_once(s: &dyn Store) {
        s.create_run(change::create(new_run("r1", "alice", 10), 5))
            .await
            .unwrap();
        s.update_run("r1", Durability::Now, &|r| {
            change::claim(r, 1, "w1", 20, 1000)
        })
        .await
        .unwrap();
        let commit = |r: &longrun_domain::Run| {
            if r.iteration >= 1 {
                return Err(Rejection::AlreadyCommitted {
                    iteration: r.iteration,
                });
            }
            let mut next = r.clone();
            next.iteration = 1;
            next.lease = None;
            let mut rec = longrun_domain::testing::sample_record(1);
            rec.run_id = "r1".into();
            Ok(RunChange {
                iteration: Some(rec),
                docs: vec![doc("notes/a.md", "Alpha beta", 1), doc("b.md", "gamma", 1)],
                pad: Some(pad(1)),
                ..RunChange::of(
                    next,
                    vec![EventDraft::new(
                        EventKind::IterationCommitted,
                        json!({"iteration": 1}),
                    )],
                )
            })
        };
        s.update_run("r1", Durability::Now, &commit).await.unwrap();
        let again = s
            .update_run("r1", Durability::Now, &commit)
            .await
            .unwrap_err();
        assert!(matches!(
            again,
            StoreError::Rejected(Rejection::AlreadyCommitted { .. })
        ));
        assert_eq!(s.iterations("r1", 0, 10).await.unwrap().len(), 1);
        let a = s.doc("r1", "notes/a.md").await.unwrap().unwrap();
        assert_eq!(a.content, "Alpha beta");
        assert_eq!(a.sources, doc("notes/a.md", "", 1).sources);
        let listed = s.docs("r1", "notes/", 10).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].sources, a.sources);
        // Every store returns what a doc was tagged with and when it was written.
        assert_eq!(a.tags, vec!["tea", "draft"]);
        assert_eq!(a.updated_at, 1_700_000_000_001);
        assert_eq!(listed[0].tags, a.tags);
        assert_eq!(listed[0].updated_at, a.updated_at);
        assert_eq!(s.docs("r1", "", 10).await.unwrap().len(), 2);
        let hits = s.search_docs("r1", "BETA", 10).await.unwrap();
        assert_eq!(hits.len(), 1);
        assert!(hits[0].snippet.contains("beta"));
        assert_eq!(s.scratchpad("r1", 3).await.unwrap()[0], pad(1));
    }

    /// The engine claims and commits deferred (its message is not yet acknowledged): such a
    /// write reads back as a durable one, is fenced the same, and is committed by the next
    /// `Now` write at the latest.
    pub async fn deferred_writes_read_back_fenced_and_are_committed_by_the_next_durable_one(
        s: &dyn Store,
    ) {
        s.create_run(change::create(new_run("r1", "alice", 10), 5))
            .await
            .unwrap();
        let claimed = s
            .update_run("r1", Durability::Deferred, &|r| {
                change::claim(r, 1, "w1", 20, 1000)
            })
            .await
            .unwrap();
        assert_eq!(claimed.status, RunStatus::Running);
        let commit = |r: &longrun_domain::Run| {
            if r.iteration >= 1 {
                return Err(Rejection::AlreadyCommitted {
                    iteration: r.iteration,
                });
            }
            let mut next = r.clone();
            next.iteration = 1;
            next.lease = None;
            let mut rec = longrun_domain::testing::sample_record(1);
            rec.run_id = "r1".into();
            Ok(RunChange {
                iteration: Some(rec),
                docs: vec![doc("notes/a.md", "Alpha beta", 1)],
                pad: Some(pad(1)),
                ..RunChange::of(
                    next,
                    vec![EventDraft::new(
                        EventKind::IterationCommitted,
                        json!({"iteration": 1}),
                    )],
                )
            })
        };
        s.update_run("r1", Durability::Deferred, &commit)
            .await
            .unwrap();
        let again = s.update_run("r1", Durability::Deferred, &commit).await;
        assert!(matches!(
            again,
            Err(StoreError::Rejected(Rejection::AlreadyCommitted { .. }))
        ));
        assert_eq!(s.get_run("r1").await.unwrap().unwrap().iteration, 1);

        spends(s, 2, 1).await;

        let committed = s.get_committed_run("r1").await.unwrap().unwrap();
        assert_eq!(committed.iteration, 1);
        assert_eq!(committed.metrics.input_tokens, 1);
        assert_eq!(s.iterations("r1", 0, 10).await.unwrap().len(), 1);
        assert_eq!(s.scratchpad("r1", 3).await.unwrap(), vec![pad(1)]);
        let seqs: Vec<u64> = s
            .events("r1", 0, 100)
            .await
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, (1..=committed.event_seq).collect::<Vec<_>>());
    }

    pub async fn the_scratchpad_returns_the_last_entries_oldest_first(s: &dyn Store) {
        s.create_run(change::create(new_run("r1", "alice", 10), 5))
            .await
            .unwrap();
        for n in 1..=5 {
            s.update_run("r1", Durability::Now, &|r| {
                Ok(RunChange {
                    pad: Some(pad(n)),
                    ..RunChange::of(r.clone(), vec![])
                })
            })
            .await
            .unwrap();
        }
        assert_eq!(pad_numbers(s, 3).await, vec![3, 4, 5]);
    }

    pub async fn stale_runs_are_the_claimable_and_the_unnotified_oldest_first(s: &dyn Store) {
        for (id, at) in [("q1", 100), ("done", 200), ("stopped", 300)] {
            s.create_run(change::create(new_run(id, "alice", at), 50))
                .await
                .unwrap();
        }
        let finish = |status: RunStatus, notified: bool, at: i64| {
            move |r: &longrun_domain::Run| {
                let mut next = r.clone();
                next.transition_to(RunStatus::Running, at)?;
                next.transition_to(status, at)?;
                next.notified = notified;
                next.updated_at = at;
                Ok::<_, Rejection>(RunChange::of(next, vec![]))
            }
        };
        s.update_run(
            "done",
            Durability::Now,
            &finish(RunStatus::Completed, true, 250),
        )
        .await
        .unwrap();
        s.update_run(
            "stopped",
            Durability::Now,
            &finish(RunStatus::Stopped, false, 260),
        )
        .await
        .unwrap();

        let ids =
            |runs: Vec<longrun_domain::Run>| runs.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(
            ids(s.stale_runs(1_000, 10).await.unwrap()),
            vec!["q1", "stopped"],
            "a notified, ended run owes nothing"
        );
        assert_eq!(ids(s.stale_runs(150, 10).await.unwrap()), vec!["q1"]);
        assert_eq!(ids(s.stale_runs(1_000, 1).await.unwrap()), vec!["q1"]);
        assert!(s.stale_runs(100, 10).await.unwrap().is_empty());
    }

    pub async fn runs_whose_wait_for_children_is_due_are_found_earliest_deadline_first(
        s: &dyn Store,
    ) {
        // Arrange: three runs waiting on children (deadlines 1_100, 1_200, 5_000), one queued.
        for (id, timeout_s) in [("w2", 2), ("w1", 1), ("late", 5), ("q", 1)] {
            let mut run = new_run(id, "alice", 0);
            run.thresholds.child_wait_timeout_s = timeout_s;
            s.create_run(change::create(run, 50)).await.unwrap();
        }
        let wait = |from: i64| {
            move |r: &longrun_domain::Run| {
                let mut next = r.clone();
                next.transition_to(RunStatus::Running, from)?;
                next.transition_to(RunStatus::WaitingOnChildren, from)?;
                Ok::<_, Rejection>(RunChange::of(next, vec![]))
            }
        };
        for id in ["w2", "w1", "late"] {
            s.update_run(id, Durability::Now, &wait(100)).await.unwrap();
        }
        let ids =
            |runs: Vec<longrun_domain::Run>| runs.into_iter().map(|r| r.id).collect::<Vec<_>>();

        // Act
        let due = ids(s.waits_due(2_100, 10).await.unwrap());
        let first = ids(s.waits_due(2_100, 1).await.unwrap());
        let none = s.waits_due(1_099, 10).await.unwrap();
        s.update_run("w1", Durability::Now, &|r: &longrun_domain::Run| {
            let mut next = r.clone();
            next.transition_to(RunStatus::Queued, 1_500)?;
            Ok::<_, Rejection>(RunChange::of(next, vec![]))
        })
        .await
        .unwrap();
        let after_wake = ids(s.waits_due(2_100, 10).await.unwrap());

        // Assert
        assert_eq!(due, vec!["w1", "w2"]);
        assert_eq!(first, vec!["w1"]);
        assert!(none.is_empty(), "no wait is due before its deadline");
        assert_eq!(
            after_wake,
            vec!["w2"],
            "a run woken meanwhile waits no more"
        );
    }

    pub async fn webhooks_are_replaced_whole_and_scoped_to_their_user(s: &dyn Store) {
        let hook = |url: &str| Webhook {
            url: url.into(),
            secret: "0123456789abcdef".into(),
        };
        assert!(s.webhooks("alice").await.unwrap().is_empty());
        s.put_webhooks("alice", &[hook("https://a/1"), hook("https://a/2")])
            .await
            .unwrap();
        s.put_webhooks("alice", &[hook("https://a/3")])
            .await
            .unwrap();
        assert_eq!(
            s.webhooks("alice").await.unwrap(),
            vec![hook("https://a/3")]
        );
        assert!(s.webhooks("bob").await.unwrap().is_empty());
    }

    pub async fn mcp_servers_are_kept_per_user_by_name_apart_from_tools_and_deleted_only_by_their_owner(
        s: &dyn Store,
    ) {
        let server = |name: &str, url: &str, secret: Option<&str>| McpServer {
            name: name.into(),
            url: url.into(),
            secret: secret.map(str::to_string),
            created_at: 9,
        };
        s.put_mcp_server(
            "alice",
            &server("tea", "https://a/mcp", Some("bearer-0123456789")),
        )
        .await
        .unwrap();
        s.put_mcp_server("alice", &server("crm", "https://a/crm", None))
            .await
            .unwrap();
        s.put_mcp_server("alice", &server("tea", "https://a/mcp2", None))
            .await
            .unwrap();
        s.put_mcp_server(
            "bob",
            &server("tea", "https://b/mcp", Some("bob-secret-012345")),
        )
        .await
        .unwrap();

        assert_eq!(
            s.mcp_servers("alice").await.unwrap(),
            vec![
                server("crm", "https://a/crm", None),
                server("tea", "https://a/mcp2", None)
            ]
        );
        assert!(
            s.tools("alice").await.unwrap().is_empty(),
            "servers are not registered tools"
        );
        assert!(!s.delete_mcp_server("bob", "crm").await.unwrap());
        assert!(s.delete_mcp_server("alice", "crm").await.unwrap());
        assert!(!s.delete_mcp_server("alice", "crm").await.unwrap());
        assert_eq!(
            s.mcp_servers("alice").await.unwrap(),
            vec![server("tea", "https://a/mcp2", None)]
        );
        assert_eq!(
            s.mcp_servers("bob").await.unwrap(),
            vec![server("tea", "https://b/mcp", Some("bob-secret-012345"))],
            "the secret is kept for the worker"
        );
    }

    pub async fn tools_are_kept_per_user_by_name_and_deleted_only_by_their_owner(s: &dyn Store) {
        let tool = |name: &str, url: &str| UserTool {
            name: name.into(),
            description: "looks things up".into(),
            parameters: serde_json::json!({"type": "object"}),
            url: url.into(),
            secret: "0123456789abcdef".into(),
            write: false,
            created_at: 7,
        };
        s.put_tool("alice", &tool("search", "https://a/1"))
            .await
            .unwrap();
        s.put_tool("alice", &tool("crm", "https://a/2"))
            .await
            .unwrap();
        s.put_tool("alice", &tool("search", "https://a/3"))
            .await
            .unwrap();
        s.put_tool("bob", &tool("search", "https://b/1"))
            .await
            .unwrap();

        assert_eq!(
            s.tools("alice").await.unwrap(),
            vec![tool("crm", "https://a/2"), tool("search", "https://a/3")]
        );
        assert!(!s.delete_tool("bob", "crm").await.unwrap());
        assert!(s.delete_tool("alice", "crm").await.unwrap());
        assert!(!s.delete_tool("alice", "crm").await.unwrap());
        assert_eq!(
            s.tools("alice").await.unwrap(),
            vec![tool("search", "https://a/3")]
        );
        assert_eq!(
            s.tools("bob").await.unwrap(),
            vec![tool("search", "https://b/1")]
        );
    }

    pub async fn due_schedules_advance_once_and_are_deleted_only_by_their_owner(s: &dyn Store) {
        let sched = |id: &str, user: &str, next_at: i64| Schedule {
            id: id.into(),
            user_id: user.into(),
            cron: "0 * * * *".into(),
            template: RunTemplate {
                agent: None,
                objective: "hourly".into(),
                completion_criteria: vec![],
                grading: None,
                budgets: Default::default(),
                thresholds: None,
                model: None,
                permission_mode: None,
                models: vec![],
                allowed_tools: None,
                context: None,
                scope: None,
                project_ids: None,
            },
            next_at,
            created_at: 1,
            last_run_id: None,
        };
        s.put_schedule(&sched("s2", "alice", 200)).await.unwrap();
        s.put_schedule(&sched("s1", "alice", 100)).await.unwrap();
        s.put_schedule(&sched("s3", "bob", 300)).await.unwrap();
        let ids = |v: Vec<Schedule>| v.into_iter().map(|s| s.id).collect::<Vec<_>>();

        assert_eq!(
            ids(s.due_schedules(200, 10).await.unwrap()),
            vec!["s1", "s2"]
        );
        assert_eq!(ids(s.due_schedules(200, 1).await.unwrap()), vec!["s1"]);
        assert_eq!(ids(s.schedules("alice").await.unwrap()), vec!["s1", "s2"]);

        let mut moved = sched("s1", "alice", 1_000);
        moved.last_run_id = Some("run_x".into());
        assert!(s.advance_schedule(&moved, 100).await.unwrap());
        assert!(
            !s.advance_schedule(&sched("s1", "alice", 2_000), 100)
                .await
                .unwrap(),
            "a second sweeper that saw the same occurrence does not advance it again"
        );
        assert_eq!(
            ids(s.due_schedules(300, 10).await.unwrap()),
            vec!["s2", "s3"]
        );
        let stored = s.schedules("alice").await.unwrap();
        assert_eq!(stored[0], moved);

        assert!(!s.delete_schedule("bob", "s1").await.unwrap());
        assert!(s.delete_schedule("alice", "s1").await.unwrap());
        assert!(!s.delete_schedule("alice", "s1").await.unwrap());
        assert_eq!(ids(s.schedules("alice").await.unwrap()), vec!["s2"]);
    }

    pub async fn runs_are_listed_per_user_newest_first_with_filters_and_cursor(s: &dyn Store) {
        for i in 0..5 {
            s.create_run(change::create(
                new_run(&format!("a{i}"), "alice", 100 + i),
                50,
            ))
            .await
            .unwrap();
        }
        s.create_run(change::create(new_run("b0", "bob", 200), 50))
            .await
            .unwrap();
        s.update_run("a1", Durability::Now, &|r| {
            let mut next = r.clone();
            next.transition_to(RunStatus::Running, r.updated_at)?;
            Ok(RunChange::of(next, vec![]))
        })
        .await
        .unwrap();
        let q = |limit, before| RunQuery {
            context: None,
            status: None,
            before,
            limit,
        };
        let ids =
            |runs: Vec<longrun_domain::Run>| runs.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(
            ids(s.list_runs("alice", &q(3, None)).await.unwrap()),
            vec!["a4", "a3", "a2"]
        );
        assert_eq!(
            ids(s
                .list_runs("alice", &q(3, Some((102, "a2".into()))))
                .await
                .unwrap()),
            vec!["a1", "a0"]
        );
        let running = RunQuery {
            context: None,
            status: Some(RunStatus::Running),
            before: None,
            limit: 10,
        };
        assert_eq!(
            ids(s.list_runs("alice", &running).await.unwrap()),
            vec!["a1"]
        );
        assert_eq!(
            ids(s.list_runs("bob", &q(10, None)).await.unwrap()),
            vec!["b0"]
        );
        assert!(
            s.list_runs("mallory", &q(10, None))
                .await
                .unwrap()
                .is_empty()
        );
    }

    pub async fn runs_are_listed_by_their_context_type_entity_or_both(s: &dyn Store) {
        // 150 runs: more than a page of a store that filters while it walks the runs.
        for i in 0..150i64 {
            let mut run = new_run(&format!("r{i:03}"), "alice", 1_000 + i);
            run.context = match i % 3 {
                0 => Some(RunContext {
                    kind: "project".into(),
                    entity_id: format!("p{}", i % 2),
                }),
                1 => Some(RunContext {
                    kind: "ticket".into(),
                    entity_id: "p0".into(),
                }),
                _ => None,
            };
            s.create_run(change::create(run, 500)).await.unwrap();
        }
        let q = |kind: Option<&str>, entity: Option<&str>, limit, before| RunQuery {
            context: Some(ContextFilter {
                kind: kind.map(str::to_string),
                entity_id: entity.map(str::to_string),
            }),
            status: None,
            before,
            limit,
        };
        let ids =
            |runs: Vec<longrun_domain::Run>| runs.into_iter().map(|r| r.id).collect::<Vec<_>>();

        let p0 = s
            .list_runs("alice", &q(Some("project"), Some("p0"), 3, None))
            .await
            .unwrap();
        let all_p0 = s
            .list_runs("alice", &q(Some("project"), Some("p0"), 100, None))
            .await
            .unwrap();
        let next = s
            .list_runs(
                "alice",
                &q(Some("project"), Some("p0"), 3, Some((1_138, "r138".into()))),
            )
            .await
            .unwrap();
        let tickets = s
            .list_runs("alice", &q(Some("ticket"), None, 100, None))
            .await
            .unwrap();
        let any_p0 = s
            .list_runs("alice", &q(None, Some("p0"), 100, None))
            .await
            .unwrap();
        let bob = s
            .list_runs("bob", &q(Some("project"), None, 10, None))
            .await
            .unwrap();

        // project p0 is every 6th run (i ≡ 0 mod 6), newest first; the cursor pages on.
        assert_eq!(ids(p0), vec!["r144", "r138", "r132"]);
        assert_eq!(all_p0.len(), 25);
        assert_eq!(all_p0[0].context.as_ref().unwrap().entity_id, "p0");
        assert_eq!(ids(next), vec!["r132", "r126", "r120"]);
        assert_eq!(tickets.len(), 50);
        assert_eq!(any_p0.len(), 75);
        assert!(bob.is_empty());
    }

    pub async fn notifications_are_idempotent_and_scoped_to_their_user(s: &dyn Store) {
        let n = |id: &str, user: &str, at| Notification {
            id: id.into(),
            user_id: user.into(),
            run_id: "r1".into(),
            status: RunStatus::Completed,
            title: "t".into(),
            summary: "s".into(),
            link: "http://x/runs/r1".into(),
            at,
            read: false,
            metrics: Default::default(),
            questions: vec![],
            message: String::new(),
            action_url: String::new(),
            data: None,
        };
        assert!(
            s.put_notification(&n("r1#5#completed", "alice", 1))
                .await
                .unwrap()
        );
        assert!(
            !s.put_notification(&n("r1#5#completed", "alice", 1))
                .await
                .unwrap()
        );
        assert!(
            s.put_notification(&n("r2#1#failed", "alice", 2))
                .await
                .unwrap()
        );
        assert!(
            s.put_notification(&n("r3#1#failed", "bob", 3))
                .await
                .unwrap()
        );
        let alice = s.notifications("alice", 10).await.unwrap();
        assert_eq!(
            alice.iter().map(|n| n.id.as_str()).collect::<Vec<_>>(),
            vec!["r2#1#failed", "r1#5#completed"]
        );
    }

    pub async fn the_inbox_pages_newest_first_by_cursor_and_sees_each_notification_once(
        s: &dyn Store,
    ) {
        // Arrange: 7 of alice's (two at the same instant) and one of bob's among them.
        let n = |id: &str, user: &str, at| Notification {
            id: id.into(),
            user_id: user.into(),
            run_id: "r1".into(),
            status: RunStatus::Completed,
            title: "t".into(),
            summary: "s".into(),
            link: "http://x/runs/r1".into(),
            at,
            read: false,
            metrics: Default::default(),
            questions: vec![],
            message: String::new(),
            action_url: String::new(),
            data: None,
        };
        for (id, at) in [
            ("a1", 1),
            ("a2", 2),
            ("a3", 3),
            ("a4b", 4),
            ("a4a", 4),
            ("a5", 5),
            ("a6", 6),
        ] {
            s.put_notification(&n(id, "alice", at)).await.unwrap();
        }
        s.put_notification(&n("b1", "bob", 4)).await.unwrap();

        // Act: pages of 3, each after the last of the one before.
        let mut seen = vec![];
        let mut cursor: Option<(i64, String)> = None;
        loop {
            let page = s
                .notifications_page("alice", cursor.as_ref(), 3)
                .await
                .unwrap();
            seen.extend(page.iter().map(|x| x.id.clone()));
            match page.last() {
                Some(last) if page.len() == 3 => cursor = Some((last.at, last.id.clone())),
                _ => break,
            }
        }

        // Assert
        assert_eq!(seen, ["a6", "a5", "a4b", "a4a", "a3", "a2", "a1"]);
    }

    pub async fn marking_a_notification_read_is_idempotent_and_touches_only_its_owner(
        s: &dyn Store,
    ) {
        let n = |id: &str, user: &str, at| Notification {
            id: id.into(),
            user_id: user.into(),
            run_id: "r1".into(),
            status: RunStatus::Stopped,
            title: "t".into(),
            summary: "s".into(),
            link: "http://x/runs/r1".into(),
            at,
            read: false,
            metrics: Default::default(),
            questions: vec![],
            message: String::new(),
            action_url: String::new(),
            data: None,
        };
        for note in [
            n("a#1", "alice", 1),
            n("a#2", "alice", 2),
            n("b#1", "bob", 3),
        ] {
            s.put_notification(&note).await.unwrap();
        }
        let listed = s.notifications("alice", 10).await.unwrap();
        let first = listed.iter().find(|x| x.id == "a#1").unwrap();

        s.mark_notification_read(first).await.unwrap();
        s.mark_notification_read(first).await.unwrap();
        s.mark_notification_read(&n("a#1", "bob", 1)).await.unwrap();
        s.mark_notification_read(&n("gone", "alice", 9))
            .await
            .unwrap();

        let read =
            |list: Vec<Notification>| list.into_iter().map(|x| (x.id, x.read)).collect::<Vec<_>>();
        assert_eq!(
            read(s.notifications("alice", 10).await.unwrap()),
            vec![("a#2".to_string(), false), ("a#1".to_string(), true)]
        );
        assert_eq!(
            read(s.notifications("bob", 10).await.unwrap()),
            vec![("b#1".to_string(), false)]
        );
    }

    fn key(user: &str, key: &str, resource: &str, at: i64) -> IdempotencyRecord {
        IdempotencyRecord {
            user_id: user.into(),
            key: key.into(),
            fingerprint: format!("fp-{resource}"),
            resource_id: resource.into(),
            created_at: at,
            expires_at: at + 1_000,
            response: None,
        }
    }

    pub async fn an_idempotency_key_is_held_by_its_first_claim_per_user_until_it_expires(
        s: &dyn Store,
    ) {
        let first = key("alice", "k1", "run_a", 100);

        let claimed = s.claim_key(&first).await.unwrap();
        let again = s
            .claim_key(&key("alice", "k1", "run_b", 500))
            .await
            .unwrap();
        let other_user = s.claim_key(&key("bob", "k1", "run_c", 500)).await.unwrap();
        let after_window = s
            .claim_key(&key("alice", "k1", "run_d", 1_100))
            .await
            .unwrap();

        assert_eq!(claimed, first);
        assert_eq!(again, first, "a live key stays with its first claim");
        assert_eq!(other_user.resource_id, "run_c", "keys are per user");
        assert_eq!(
            after_window.resource_id, "run_d",
            "an expired key is claimed anew"
        );
    }

    pub async fn the_first_answer_stored_under_a_key_is_the_one_kept(s: &dyn Store) {
        s.claim_key(&key("alice", "k1", "run_a", 100))
            .await
            .unwrap();

        let stored = s
            .finish_key("alice", "k1", "run_a", &json!({"id": "run_a", "n": 1}))
            .await
            .unwrap();
        let second = s
            .finish_key("alice", "k1", "run_a", &json!({"id": "run_a", "n": 2}))
            .await
            .unwrap();
        let foreign = s
            .finish_key("alice", "k1", "run_x", &json!({"id": "run_x"}))
            .await
            .unwrap();
        let replay = s
            .claim_key(&key("alice", "k1", "run_b", 200))
            .await
            .unwrap();

        assert_eq!(stored, json!({"id": "run_a", "n": 1}));
        assert_eq!(second, stored, "a later answer does not replace the first");
        assert_eq!(
            foreign,
            json!({"id": "run_x"}),
            "another resource's answer is not stored"
        );
        assert_eq!(replay.response, Some(stored));
    }

    pub async fn concurrent_claims_of_one_key_agree_on_one_resource(s: Arc<dyn Store>) {
        let claims = (0..16).map(|i| {
            let s = s.clone();
            tokio::spawn(async move {
                s.claim_key(&key("alice", "k1", &format!("run_{i}"), 100))
                    .await
                    .unwrap()
                    .resource_id
            })
        });

        let mut held: Vec<String> = futures_util::future::join_all(claims)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        held.dedup();

        assert_eq!(held.len(), 1, "every claim saw the same holder: {held:?}");
    }
}

macro_rules! conformance {
    ($adapter:ident: $($test:ident),* ; shared: $($shared:ident),*) => {
        mod $adapter {
            $(
                #[tokio::test]
                async fn $test() {
                    let (store, _guard) = super::$adapter().await;
                    super::suite::$test(&*store).await;
                }
            )*
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $shared() {
                    let (store, _guard) = super::$adapter().await;
                    super::suite::$shared(store).await;
                }
            )*
        }
    };
}

macro_rules! all_adapters {
    ($($adapter:ident),*) => {
        $(
            conformance!($adapter:
                creating_a_run_stores_it_with_its_first_event,
                creating_the_same_run_twice_is_a_conflict_and_writes_nothing,
                the_active_limit_refuses_a_slot_and_release_frees_it,
                updates_append_gapless_events_and_a_rejection_writes_nothing,
                events_page_by_after_and_limit,
                paging_the_log_from_every_position_sees_each_event_once_in_order,
                a_commit_writes_iteration_docs_and_pad_together_and_only_once,
                deferred_writes_read_back_fenced_and_are_committed_by_the_next_durable_one,
                the_scratchpad_returns_the_last_entries_oldest_first,
                runs_are_listed_per_user_newest_first_with_filters_and_cursor,
                runs_are_listed_by_their_context_type_entity_or_both,
                stale_runs_are_the_claimable_and_the_unnotified_oldest_first,
                runs_whose_wait_for_children_is_due_are_found_earliest_deadline_first,
                webhooks_are_replaced_whole_and_scoped_to_their_user,
                tools_are_kept_per_user_by_name_and_deleted_only_by_their_owner,
                mcp_servers_are_kept_per_user_by_name_apart_from_tools_and_deleted_only_by_their_owner,
                due_schedules_advance_once_and_are_deleted_only_by_their_owner,
                notifications_are_idempotent_and_scoped_to_their_user,
                marking_a_notification_read_is_idempotent_and_touches_only_its_owner,
                an_idempotency_key_is_held_by_its_first_claim_per_user_until_it_expires,
                the_first_answer_stored_under_a_key_is_the_one_kept,
                the_inbox_pages_newest_first_by_cursor_and_sees_each_notification_once;
                shared: concurrent_writers_never_lose_an_update_or_a_seq,
                    concurrent_claims_of_one_key_agree_on_one_resource,
                    fifty_parallel_creates_get_exactly_the_default_limit_of_three);
        )*
    };
}

all_adapters!(memory, sqlite, dynamodb);

/// The table never holds a registered secret in plain text: what a scan of it returns (as a
/// backup or an export of the table would) is sealed, and reads through the store open it.
#[tokio::test]
async fn dynamodb_holds_every_catalog_secret_sealed() {
    // Arrange
    let c = longrun_tests::aws::clients().await;
    let store = longrun_tests::aws::dynamodb_store(&c).await;
    let tool = UserTool {
        name: "crm".into(),
        description: "d".into(),
        parameters: json!({"type": "object"}),
        url: "https://crm.example.com".into(),
        secret: "tool-secret-in-the-table-0001".into(),
        write: false,
        created_at: 1,
    };
    let hook = Webhook {
        url: "https://hooks.example.com".into(),
        secret: "hook-secret-in-the-table-0002".into(),
    };
    let server = McpServer {
        name: "docs".into(),
        url: "https://mcp.example.com".into(),
        secret: Some("mcp-secret-in-the-table-0003".into()),
        created_at: 1,
    };

    // Act
    store.put_tool("ana", &tool).await.unwrap();
    store
        .put_webhooks("ana", std::slice::from_ref(&hook))
        .await
        .unwrap();
    store.put_mcp_server("ana", &server).await.unwrap();
    let scan = c
        .dynamodb
        .scan()
        .table_name(store.table())
        .send()
        .await
        .unwrap();

    // Assert
    let raw = format!("{:?}", scan.items());
    for secret in [
        "tool-secret-in-the-table-0001",
        "hook-secret-in-the-table-0002",
        "mcp-secret-in-the-table-0003",
    ] {
        assert!(
            !raw.contains(secret),
            "{secret} is in the table in plain text"
        );
    }
    assert!(raw.contains("sealed:v1:"));
    assert_eq!(store.tools("ana").await.unwrap(), vec![tool]);
    assert_eq!(store.webhooks("ana").await.unwrap(), vec![hook]);
    assert_eq!(store.mcp_servers("ana").await.unwrap(), vec![server]);
}
