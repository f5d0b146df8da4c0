//! The `RunArchive` and `RunRetention` contracts, run against every adapter that has them
//! (memory, SQLite; DynamoDB keeps runs by TTL instead): export → import restores a run
//! exactly, and retention deletes everything of an old ended run but never an active run, a
//! young one, one with a pending webhook delivery, or a child whose parent still runs.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use longrun_domain::change::{self, ActiveDelta};
use longrun_domain::run::RunStatus;
use longrun_domain::{
    DeliveryState, Doc, EventDraft, EventKind, IterationRecord, Notification, NotificationMetrics,
    PadEntry, Rejection, RunChange, RunExport, WebhookDelivery,
};
use longrun_local::{InMemoryRunStore, SqliteDb, SqliteRunStore};
use longrun_ports::Durability;
use longrun_ports::{RunArchive, RunRetention, Store, StoreError, WebhookOutbox};
use longrun_service::retention::RetentionStore;
use longrun_tests::new_run;
use serde_json::json;

/// What the retention pass and export/import need of a store.
trait ArchiveStore: Store + RetentionStore + WebhookOutbox {}
impl<T: Store + RunArchive + RunRetention + WebhookOutbox> ArchiveStore for T {}

type Fixture = (Arc<dyn ArchiveStore>, Option<tempfile::TempDir>);

async fn memory() -> Fixture {
    (Arc::new(InMemoryRunStore::new()), None)
}

async fn sqlite() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = SqliteDb::open(&dir.path().join("t.sqlite3")).unwrap();
    (Arc::new(SqliteRunStore::new(db)), Some(dir))
}

fn record(run_id: &str, n: u32) -> IterationRecord {
    IterationRecord {
        run_id: run_id.into(),
        n,
        outcome: RunStatus::Running,
        summary: format!("iteration {n}"),
        status_block: None,
        tool_results: vec![],
        executor_results: vec![],
        created_docs: vec![format!("notes/{n}.md")],
        updated_docs: vec![],
        metrics: Default::default(),
        error: None,
        progress: true,
        hints: vec!["keep going".into()],
        criteria: vec![],
        stopping_reason: None,
        started_at: n as i64,
        committed_at: n as i64 + 1,
    }
}

fn doc(path: &str, n: u32) -> Doc {
    Doc {
        path: path.into(),
        title: format!("Title of {path}"),
        content: format!("content {n} — ünïcode"),
        tags: vec!["tea".into()],
        created_iteration: 1,
        updated_iteration: n,
        version: n,
        updated_at: 1_700_000_000_000 + n as i64,
        sources: vec!["https://example.org/a".into()],
    }
}

fn pad(n: u32) -> PadEntry {
    PadEntry {
        at: n as i64,
        summary: format!("pad {n}"),
        ..longrun_domain::testing::sample_pad(n)
    }
}

fn outcome(run_id: &str, user: &str, at: i64) -> Notification {
    Notification {
        id: format!("{run_id}#2#completed"),
        user_id: user.into(),
        run_id: run_id.into(),
        status: RunStatus::Completed,
        title: "done".into(),
        summary: "it is done".into(),
        link: format!("https://app.example/runs/{run_id}"),
        at,
        read: false,
        metrics: NotificationMetrics::default(),
        questions: vec![],
        message: String::new(),
        action_url: String::new(),
        data: None,
    }
}

fn delivery(n: &Notification, hook: u32, state: DeliveryState) -> WebhookDelivery {
    WebhookDelivery {
        id: n.id.clone(),
        hook,
        user_id: n.user_id.clone(),
        run_id: n.run_id.clone(),
        url: format!("https://hooks.example/{hook}"),
        signature: "sha256=00".into(),
        body: "{}".into(),
        state,
        attempts: 1,
        next_at: n.at,
        created_at: n.at,
        last_error: None,
        history: vec![],
    }
}

/// A run of `user` created at 10 with two committed iterations (records, docs, scratchpad),
/// left running.
async fn worked_run(s: &dyn Store, id: &str, user: &str, parent: Option<&str>) {
    let mut run = new_run(id, user, 10);
    run.parent_run_id = parent.map(str::to_string);
    s.create_run(change::create(run, 50)).await.unwrap();
    for n in 1..=2u32 {
        s.update_run(id, Durability::Now, &|r| {
            change::claim(r, n, "w1", 20, 1000)
        })
        .await
        .unwrap();
        s.update_run(id, Durability::Now, &|r| {
            let mut next = r.clone();
            next.iteration = n;
            next.lease = None;
            let docs = vec![doc(&format!("notes/{n}.md"), n), doc("plan.md", n)];
            next.note_docs(docs.iter().map(Doc::meta));
            Ok(RunChange {
                iteration: Some(record(id, n)),
                docs,
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
}

/// `worked_run`, completed at `ended_at` and its outcome recorded with one delivered and one
/// webhook delivery in `second` state; notified.
async fn ended_run(
    s: &dyn ArchiveStore, id: &str, user: &str, ended_at: i64, second: DeliveryState,
) {
    worked_run(s, id, user, None).await;
    end(s, id, ended_at).await;
    let n = outcome(id, user, ended_at);
    let ds = [
        delivery(&n, 0, DeliveryState::Delivered),
        delivery(&n, 1, second),
    ];
    s.put_outcome(&n, &ds).await.unwrap();
    s.update_run(id, Durability::Now, &|r| {
        let next = change::mark_notified(r, 2, RunStatus::Completed).ok_or(Rejection::NotFound)?;
        Ok(RunChange::of(next, vec![]))
    })
    .await
    .unwrap();
}

async fn end(s: &dyn Store, id: &str, at: i64) {
    end_as(s, id, RunStatus::Completed, at).await
}

async fn end_as(s: &dyn Store, id: &str, status: RunStatus, at: i64) {
    s.update_run(id, Durability::Now, &|r| {
        let mut next = r.clone();
        next.transition_to(status, at)?;
        Ok(RunChange {
            active: ActiveDelta::Release,
            ..RunChange::of(
                next,
                vec![EventDraft::new(
                    EventKind::for_status(status).unwrap_or(EventKind::Warning),
                    json!({}),
                )],
            )
        })
    })
    .await
    .unwrap();
}

async fn export(s: &dyn ArchiveStore, id: &str) -> RunExport {
    s.export_run(id).await.unwrap().unwrap()
}

mod suite {
    use super::*;

    pub async fn an_exported_run_is_imported_exactly_with_the_same_ids(
        s: &dyn ArchiveStore, fresh: &dyn ArchiveStore,
    ) {
        // Arrange
        ended_run(s, "r1", "alice", 100, DeliveryState::Delivered).await;
        let exported = export(s, "r1").await;
        let through_json: RunExport =
            serde_json::from_str(&serde_json::to_string(&exported).unwrap()).unwrap();

        // Act
        fresh.import_run(&through_json).await.unwrap();

        // Assert: every part is back, and read through the ordinary ports too.
        assert_eq!(exported.iterations.len(), 2);
        assert_eq!(exported.docs.len(), 3);
        assert_eq!(
            exported.run.recent_docs.len(),
            3,
            "the planner's index of them too"
        );
        assert_eq!(exported.scratchpad.len(), 2);
        assert_eq!(exported.notifications.len(), 1);
        assert_eq!(exported.deliveries.len(), 2);
        assert_eq!(exported.events.len() as u64, exported.run.event_seq);
        assert_eq!(export(fresh, "r1").await, exported);
        assert_eq!(fresh.get_run("r1").await.unwrap().unwrap(), exported.run);
        assert_eq!(
            fresh.events("r1", 0, 100).await.unwrap(),
            s.events("r1", 0, 100).await.unwrap()
        );
        assert_eq!(
            fresh.doc("r1", "plan.md").await.unwrap(),
            s.doc("r1", "plan.md").await.unwrap()
        );
        assert_eq!(fresh.notifications("alice", 10).await.unwrap().len(), 1);
        assert_eq!(fresh.deliveries("alice", "r1").await.unwrap().len(), 2);
    }

    pub async fn importing_a_run_that_exists_is_a_conflict_and_writes_nothing(
        s: &dyn ArchiveStore,
    ) {
        // Arrange
        ended_run(s, "r1", "alice", 100, DeliveryState::Delivered).await;
        let before = export(s, "r1").await;
        let mut changed = before.clone();
        changed.docs.push(doc("new.md", 9));

        // Act
        let err = s.import_run(&changed).await.unwrap_err();

        // Assert
        assert!(
            matches!(&err, StoreError::Rejected(Rejection::Conflict(m)) if m.contains("already exists")),
            "{err}"
        );
        assert_eq!(export(s, "r1").await, before);
    }

    pub async fn retention_deletes_an_old_ended_run_and_everything_keyed_by_it(
        s: &dyn ArchiveStore,
    ) {
        // Arrange: two old ended runs of one user; only one is named.
        ended_run(s, "r1", "alice", 100, DeliveryState::Delivered).await;
        ended_run(s, "r2", "alice", 100, DeliveryState::GivenUp).await;

        // Act
        let listed = s.expired_runs(101, 10).await.unwrap();
        let deleted = s.delete_run("r1", 101).await.unwrap();
        let again = s.delete_run("r1", 101).await.unwrap();

        // Assert
        assert_eq!(listed.len(), 2);
        assert!(deleted);
        assert!(!again, "a run that is gone is not deleted twice");
        assert!(s.get_run("r1").await.unwrap().is_none());
        assert!(s.export_run("r1").await.unwrap().is_none());
        assert!(s.events("r1", 0, 10).await.unwrap().is_empty());
        assert!(s.iterations("r1", 0, 10).await.unwrap().is_empty());
        assert!(s.docs("r1", "", 10).await.unwrap().is_empty());
        assert!(s.scratchpad("r1", 10).await.unwrap().is_empty());
        assert!(s.deliveries("alice", "r1").await.unwrap().is_empty());
        let inbox = s.notifications("alice", 10).await.unwrap();
        assert_eq!(
            inbox.iter().map(|n| n.run_id.as_str()).collect::<Vec<_>>(),
            ["r2"]
        );
        assert_eq!(s.iterations("r2", 0, 10).await.unwrap().len(), 2);
        assert_eq!(s.expired_runs(101, 10).await.unwrap(), ["r2"]);
    }

    pub async fn retention_never_touches_an_active_young_or_still_delivering_run(
        s: &dyn ArchiveStore,
    ) {
        // Arrange: a running run, one ended at the cutoff, one with a pending delivery.
        worked_run(s, "active", "alice", None).await;
        ended_run(s, "young", "alice", 500, DeliveryState::Delivered).await;
        ended_run(s, "owed", "alice", 100, DeliveryState::Pending).await;
        let before: Vec<RunExport> = [
            export(s, "active").await,
            export(s, "young").await,
            export(s, "owed").await,
        ]
        .into();

        // Act
        let listed = s.expired_runs(500, 10).await.unwrap();
        let mut deleted = vec![];
        for id in ["active", "young", "owed"] {
            deleted.push(s.delete_run(id, 500).await.unwrap());
        }

        // Assert
        assert!(listed.is_empty(), "{listed:?}");
        assert_eq!(deleted, [false, false, false]);
        let after = [
            export(s, "active").await,
            export(s, "young").await,
            export(s, "owed").await,
        ];
        assert_eq!(after.to_vec(), before);
    }

    pub async fn a_child_stays_until_its_parent_has_ended(s: &dyn ArchiveStore) {
        // Arrange: a running parent and its ended child.
        worked_run(s, "parent", "alice", None).await;
        worked_run(s, "child", "alice", Some("parent")).await;
        end(s, "child", 100).await;
        s.update_run("child", Durability::Now, &|r| {
            let next =
                change::mark_notified(r, 2, RunStatus::Completed).ok_or(Rejection::NotFound)?;
            Ok(RunChange::of(next, vec![]))
        })
        .await
        .unwrap();

        // Act
        let while_running = (
            s.expired_runs(1_000, 10).await.unwrap(),
            s.delete_run("child", 1_000).await.unwrap(),
        );
        end(s, "parent", 200).await;
        let after_parent_ended = s.expired_runs(1_000, 10).await.unwrap();

        // Assert: the parent is not notified, so only the child may go now.
        assert_eq!(while_running, (vec![], false));
        assert_eq!(after_parent_ended, ["child"]);
    }

    pub async fn expired_runs_come_oldest_first_up_to_the_limit(s: &dyn ArchiveStore) {
        // Arrange: ended at 300, 100 and 200.
        for (id, at) in [("c", 300), ("a", 100), ("b", 200)] {
            ended_run(s, id, "alice", at, DeliveryState::Delivered).await;
        }

        // Act
        let two = s.expired_runs(1_000, 2).await.unwrap();

        // Assert
        assert_eq!(two, ["a", "b"]);
    }
}

macro_rules! conformance {
    ($adapter:ident) => {
        mod $adapter {
            #[tokio::test]
            async fn an_exported_run_is_imported_exactly_with_the_same_ids() {
                let (store, _g) = super::$adapter().await;
                let (fresh, _h) = super::$adapter().await;
                super::suite::an_exported_run_is_imported_exactly_with_the_same_ids(
                    &*store, &*fresh,
                )
                .await;
            }

            #[tokio::test]
            async fn importing_a_run_that_exists_is_a_conflict_and_writes_nothing() {
                let (store, _g) = super::$adapter().await;
                super::suite::importing_a_run_that_exists_is_a_conflict_and_writes_nothing(&*store)
                    .await;
            }

            #[tokio::test]
            async fn retention_deletes_an_old_ended_run_and_everything_keyed_by_it() {
                let (store, _g) = super::$adapter().await;
                super::suite::retention_deletes_an_old_ended_run_and_everything_keyed_by_it(
                    &*store,
                )
                .await;
            }

            #[tokio::test]
            async fn retention_never_touches_an_active_young_or_still_delivering_run() {
                let (store, _g) = super::$adapter().await;
                super::suite::retention_never_touches_an_active_young_or_still_delivering_run(
                    &*store,
                )
                .await;
            }

            #[tokio::test]
            async fn a_child_stays_until_its_parent_has_ended() {
                let (store, _g) = super::$adapter().await;
                super::suite::a_child_stays_until_its_parent_has_ended(&*store).await;
            }

            #[tokio::test]
            async fn expired_runs_come_oldest_first_up_to_the_limit() {
                let (store, _g) = super::$adapter().await;
                super::suite::expired_runs_come_oldest_first_up_to_the_limit(&*store).await;
            }
        }
    };
}

conformance!(memory);
conformance!(sqlite);

/// The retention pass over a store: what it deletes and exports, read back from the files.
mod pass {
    use super::*;
    use longrun_ports::ManualClock;
    use longrun_service::retention::{DAY_MS, Retention, RetentionPolicy};

    #[tokio::test]
    async fn an_export_pass_files_each_old_run_then_deletes_it_and_the_file_imports_exactly() {
        // Arrange: an old ended run, a young one and an active one; a 1-day export policy.
        let (store, _g) = sqlite().await;
        ended_run(&*store, "old", "alice", 100, DeliveryState::Delivered).await;
        ended_run(&*store, "young", "alice", DAY_MS, DeliveryState::Delivered).await;
        worked_run(&*store, "active", "alice", None).await;
        let before = export(&*store, "old").await;
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(DAY_MS + 101));
        let policy = RetentionPolicy::days(1, Some(dir.path().to_path_buf())).unwrap();
        let pass = Retention::new(store.clone() as Arc<dyn RetentionStore>, clock, policy);

        // Act
        let report = pass.pass().await.unwrap();
        let again = pass.pass().await.unwrap();

        // Assert
        assert_eq!(report.deleted, ["old"]);
        assert_eq!(report.exported, 1);
        assert!(again.deleted.is_empty());
        assert!(store.get_run("old").await.unwrap().is_none());
        assert!(store.get_run("young").await.unwrap().is_some());
        assert!(store.get_run("active").await.unwrap().is_some());
        let text = std::fs::read(dir.path().join("old.json")).unwrap();
        let filed: RunExport = serde_json::from_slice(&text).unwrap();
        assert_eq!(filed, before);
        store.import_run(&filed).await.unwrap();
        assert_eq!(export(&*store, "old").await, before);
    }

    #[tokio::test]
    async fn a_delete_pass_goes_through_more_runs_than_one_batch() {
        // Arrange: 7 old runs, batches of 3.
        let (store, _g) = memory().await;
        for i in 0..7 {
            ended_run(
                &*store,
                &format!("r{i}"),
                "alice",
                100 + i,
                DeliveryState::Delivered,
            )
            .await;
        }
        let clock = Arc::new(ManualClock::new(DAY_MS + 200));
        let mut policy = RetentionPolicy::days(1, None).unwrap();
        policy.batch = 3;

        // Act
        let report = Retention::new(store.clone() as Arc<dyn RetentionStore>, clock, policy)
            .pass()
            .await
            .unwrap();

        // Assert
        assert_eq!(report.deleted.len(), 7);
        assert!(store.expired_runs(i64::MAX, 10).await.unwrap().is_empty());
    }
}

/// DynamoDB keeps runs by the table's TTL (on `expires_at`) instead of a retention pass: every
/// item of a run that ended and was notified carries the time it may go, and a continue takes
/// it back from all of them.
mod dynamodb_ttl {
    use super::*;
    use aws_sdk_dynamodb::types::AttributeValue;
    use longrun_domain::run::BudgetsInput;
    use longrun_ports::RunLog;

    /// `expires_at` of every item of run `id`, by sort key.
    async fn expiries(
        c: &aws_sdk_dynamodb::Client, table: &str, id: &str,
    ) -> Vec<(String, Option<i64>)> {
        let out = c
            .query()
            .table_name(table)
            .key_condition_expression("PK = :pk")
            .expression_attribute_values(":pk", AttributeValue::S(format!("RUN#{id}")))
            .consistent_read(true)
            .send()
            .await
            .unwrap();
        out.items()
            .iter()
            .map(|i| {
                let sk = i["SK"].as_s().unwrap().clone();
                let at = i
                    .get("expires_at")
                    .map(|v| v.as_n().unwrap().parse().unwrap());
                (sk, at)
            })
            .collect()
    }

    #[tokio::test]
    async fn the_items_of_an_ended_notified_run_expire_and_a_continue_takes_that_back() {
        // Arrange: a 30-day policy; a run stopped at 1,000 s, and one still running.
        let c = longrun_tests::aws::clients().await;
        let table = longrun_tests::aws::table(&c).await;
        let store = longrun_aws::DynamoDbRunStore::new(
            c.dynamodb.clone(),
            table.clone(),
            longrun_tests::aws::test_sealer(),
        )
        .with_retention_days(Some(30));
        worked_run(&store, "r1", "alice", None).await;
        worked_run(&store, "live", "alice", None).await;
        end_as(&store, "r1", RunStatus::Stopped, 1_000_000).await;
        let unnotified = expiries(&c.dynamodb, &table, "r1").await;

        // Act
        store
            .update_run("r1", Durability::Now, &|r| {
                let next =
                    change::mark_notified(r, 2, RunStatus::Stopped).ok_or(Rejection::NotFound)?;
                Ok(RunChange::of(next, vec![]))
            })
            .await
            .unwrap();
        let notified = expiries(&c.dynamodb, &table, "r1").await;
        let more = BudgetsInput {
            max_iterations: Some(50),
            ..Default::default()
        };
        store
            .update_run("r1", Durability::Now, &|r| {
                change::continue_run(r, &more, 50, 2_000_000)
            })
            .await
            .unwrap();
        let continued = expiries(&c.dynamodb, &table, "r1").await;

        // Assert
        let want = 1_000 + 30 * 24 * 3600;
        assert!(
            unnotified.iter().all(|(_, at)| at.is_none()),
            "{unnotified:?}"
        );
        assert!(notified.len() >= 5, "run, iterations, docs: {notified:?}");
        assert!(
            notified.iter().all(|(_, at)| *at == Some(want)),
            "{notified:?}"
        );
        assert!(
            continued.iter().all(|(_, at)| at.is_none()),
            "{continued:?}"
        );
        let live = expiries(&c.dynamodb, &table, "live").await;
        assert!(live.iter().all(|(_, at)| at.is_none()), "{live:?}");
    }
}
