//! The `StepQueue` contract (FIFO per run, dedup window, visibility, redelivery, dead
//! letters), run against every adapter.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use longrun_engine::ports::{
    DEDUP_WINDOW_MS, Enqueued, ManualClock, QueueError, StepMessage, StepQueue, StepReason,
};
use longrun_local::{InMemoryStepQueue, MAX_RECEIVES, SqliteDb, SqliteStepQueue};

struct Fixture {
    queue: Arc<dyn StepQueue>,
    clock: Arc<ManualClock>,
    _dir: Option<tempfile::TempDir>,
}

fn memory() -> Fixture {
    let clock = Arc::new(ManualClock::new(1_000_000));
    Fixture {
        queue: Arc::new(InMemoryStepQueue::new(clock.clone())),
        clock,
        _dir: None,
    }
}

fn sqlite() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let db = SqliteDb::open(&dir.path().join("q.sqlite3")).unwrap();
    Fixture {
        queue: Arc::new(SqliteStepQueue::new(db, clock.clone())),
        clock,
        _dir: Some(dir),
    }
}

fn msg(run: &str, n: u32) -> StepMessage {
    StepMessage::new(run, n, StepReason::Continue)
}

async fn send(q: &dyn StepQueue, m: &StepMessage) -> Enqueued {
    q.enqueue(m, &m.dedup_id(), 0).await.unwrap()
}

mod suite {
    use super::*;

    pub async fn a_message_is_received_then_gone_after_ack(f: Fixture) {
        send(&*f.queue, &msg("r1", 1)).await;
        let got = f.queue.receive(10, 1000).await.unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(StepMessage::parse(&got[0].body).unwrap(), msg("r1", 1));
        assert_eq!(got[0].receive_count, 1);
        f.queue.ack(&got[0].receipt).await.unwrap();
        f.clock.advance(5_000);
        assert!(f.queue.receive(10, 1000).await.unwrap().is_empty());
    }

    pub async fn the_same_dedup_id_within_five_minutes_is_dropped(f: Fixture) {
        assert_eq!(send(&*f.queue, &msg("r1", 1)).await, Enqueued::Sent);
        assert_eq!(send(&*f.queue, &msg("r1", 1)).await, Enqueued::Duplicate);
        f.clock.advance(DEDUP_WINDOW_MS + 1);
        assert_eq!(send(&*f.queue, &msg("r1", 1)).await, Enqueued::Sent);
    }

    pub async fn an_unacknowledged_message_comes_back_after_its_visibility_timeout(f: Fixture) {
        send(&*f.queue, &msg("r1", 1)).await;
        let first = f.queue.receive(10, 1000).await.unwrap();
        assert!(
            f.queue.receive(10, 1000).await.unwrap().is_empty(),
            "invisible while in flight"
        );
        f.clock.advance(1_001);
        let again = f.queue.receive(10, 1000).await.unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].receive_count, 2);
        assert!(matches!(
            f.queue.ack(&first[0].receipt).await,
            Err(QueueError::StaleReceipt)
        ));
        f.queue.ack(&again[0].receipt).await.unwrap();
    }

    pub async fn one_message_per_run_is_in_flight_and_order_is_kept(f: Fixture) {
        send(&*f.queue, &msg("r1", 1)).await;
        send(&*f.queue, &msg("r1", 2)).await;
        send(&*f.queue, &msg("r2", 1)).await;
        let got = f.queue.receive(10, 1000).await.unwrap();
        let bodies: Vec<StepMessage> = got
            .iter()
            .map(|d| StepMessage::parse(&d.body).unwrap())
            .collect();
        assert_eq!(bodies, vec![msg("r1", 1), msg("r2", 1)]);
        assert!(f.queue.receive(10, 1000).await.unwrap().is_empty());
        f.queue.ack(&got[0].receipt).await.unwrap();
        let next = f.queue.receive(10, 1000).await.unwrap();
        assert_eq!(StepMessage::parse(&next[0].body).unwrap(), msg("r1", 2));
    }

    pub async fn a_delayed_message_waits_and_blocks_its_run(f: Fixture) {
        let m = msg("r1", 1);
        f.queue.enqueue(&m, &m.dedup_id(), 2_000).await.unwrap();
        send(&*f.queue, &msg("r1", 2)).await;
        assert!(f.queue.receive(10, 1000).await.unwrap().is_empty());
        f.clock.advance(2_000);
        let got = f.queue.receive(10, 1000).await.unwrap();
        assert_eq!(StepMessage::parse(&got[0].body).unwrap(), m);
    }

    pub async fn extend_moves_the_visibility(f: Fixture) {
        send(&*f.queue, &msg("r1", 1)).await;
        let got = f.queue.receive(10, 1000).await.unwrap();
        f.queue.extend(&got[0].receipt, 10_000).await.unwrap();
        f.clock.advance(5_000);
        assert!(f.queue.receive(10, 1000).await.unwrap().is_empty());
        f.queue.extend(&got[0].receipt, 0).await.unwrap();
        assert_eq!(f.queue.receive(10, 1000).await.unwrap().len(), 1);
    }

    pub async fn a_message_that_keeps_failing_is_dead_lettered(f: Fixture) {
        send(&*f.queue, &msg("r1", 1)).await;
        send(&*f.queue, &msg("r1", 2)).await;
        for _ in 0..MAX_RECEIVES {
            assert_eq!(f.queue.receive(10, 1000).await.unwrap().len(), 1);
            f.clock.advance(1_001);
        }
        let next = f.queue.receive(10, 1000).await.unwrap();
        assert_eq!(
            StepMessage::parse(&next[0].body).unwrap(),
            msg("r1", 2),
            "the dead head no longer blocks its run"
        );
    }
}

macro_rules! conformance {
    ($($adapter:ident),*) => {
        $(
            mod $adapter {
                #[tokio::test] async fn a_message_is_received_then_gone_after_ack() { super::suite::a_message_is_received_then_gone_after_ack(super::$adapter()).await }
                #[tokio::test] async fn the_same_dedup_id_within_five_minutes_is_dropped() { super::suite::the_same_dedup_id_within_five_minutes_is_dropped(super::$adapter()).await }
                #[tokio::test] async fn an_unacknowledged_message_comes_back_after_its_visibility_timeout() { super::suite::an_unacknowledged_message_comes_back_after_its_visibility_timeout(super::$adapter()).await }
                #[tokio::test] async fn one_message_per_run_is_in_flight_and_order_is_kept() { super::suite::one_message_per_run_is_in_flight_and_order_is_kept(super::$adapter()).await }
                #[tokio::test] async fn a_delayed_message_waits_and_blocks_its_run() { super::suite::a_delayed_message_waits_and_blocks_its_run(super::$adapter()).await }
                #[tokio::test] async fn extend_moves_the_visibility() { super::suite::extend_moves_the_visibility(super::$adapter()).await }
                #[tokio::test] async fn a_message_that_keeps_failing_is_dead_lettered() { super::suite::a_message_that_keeps_failing_is_dead_lettered(super::$adapter()).await }
            }
        )*
    };
}

conformance!(memory, sqlite);
