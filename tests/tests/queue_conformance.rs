//! The `StepQueue` contract (FIFO per run, dedup window, visibility, redelivery, dead
//! letters), run against every adapter.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use longrun_local::{InMemoryStepQueue, MAX_RECEIVES, SqliteDb, SqliteStepQueue};
use longrun_ports::{
    DEDUP_WINDOW_MS, Durability, Enqueued, ManualClock, QueueError, StepMessage, StepQueue,
    StepReason,
};

struct Fixture {
    queue: Arc<dyn StepQueue>,
    /// `None`: the adapter runs on real time (SQS), so time passes by sleeping.
    clock: Option<Arc<ManualClock>>,
    _dir: Option<tempfile::TempDir>,
}

impl Fixture {
    async fn pass(&self, ms: u64) {
        match &self.clock {
            Some(c) => c.advance(ms as i64),
            None => tokio::time::sleep(std::time::Duration::from_millis(ms)).await,
        }
    }

    /// The messages a receive finds once one is due. On a manual clock that is the next
    /// receive; on real time (SQS) a message whose timeout just ran out may take a moment to
    /// show under load, so this polls for up to 20 s instead of trusting one sleep.
    async fn receive_due(&self) -> Vec<longrun_ports::Delivery> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let got = self.queue.receive(10, 1000).await.unwrap();
            if !got.is_empty() || self.clock.is_some() || std::time::Instant::now() > deadline {
                return got;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// What reaches a worker after an ack that may carry a run on: the step handed back (then
    /// nothing is left for a receive), or what the next receive finds.
    async fn reaching_a_worker(
        &self, carried: Option<longrun_ports::Delivery>,
    ) -> Vec<StepMessage> {
        let Some(d) = carried else {
            return bodies(self.receive_due().await);
        };
        assert!(
            self.queue.receive(10, 1000).await.unwrap().is_empty(),
            "already in flight"
        );
        bodies(vec![d])
    }

    /// SQS drops a duplicate silently, and moto accepts a stale receipt (AWS rejects it), so
    /// those two reports are checked only where the adapter can make them.
    fn reports_everything(&self) -> bool {
        self.clock.is_some()
    }
}

async fn memory() -> Fixture {
    let clock = Arc::new(ManualClock::new(1_000_000));
    Fixture {
        queue: Arc::new(InMemoryStepQueue::new(clock.clone())),
        clock: Some(clock),
        _dir: None,
    }
}

async fn sqlite() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let db = SqliteDb::open(&dir.path().join("q.sqlite3")).unwrap();
    Fixture {
        queue: Arc::new(SqliteStepQueue::new(db, clock.clone())),
        clock: Some(clock),
        _dir: Some(dir),
    }
}

/// SQS FIFO on the emulator, dead-lettering after the same number of receives.
async fn sqs() -> Fixture {
    let c = longrun_tests::aws::clients().await;
    let (queue, _dlq) = longrun_tests::aws::step_queue(&c, MAX_RECEIVES).await;
    Fixture {
        queue: Arc::new(queue),
        clock: None,
        _dir: None,
    }
}

fn bodies(got: Vec<longrun_ports::Delivery>) -> Vec<StepMessage> {
    got.iter()
        .map(|d| StepMessage::parse(&d.body).unwrap())
        .collect()
}

fn msg(run: &str, n: u32) -> StepMessage {
    StepMessage::new(run, n, StepReason::Continue)
}

async fn send(q: &dyn StepQueue, m: &StepMessage) -> Enqueued {
    q.enqueue(m, &m.dedup_id(), 0, Durability::Now)
        .await
        .unwrap()
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
        f.pass(1_100).await;
        assert!(f.queue.receive(10, 1000).await.unwrap().is_empty());
    }

    pub async fn the_same_dedup_id_within_five_minutes_is_dropped(f: Fixture) {
        assert_eq!(send(&*f.queue, &msg("r1", 1)).await, Enqueued::Sent);
        let again = send(&*f.queue, &msg("r1", 1)).await;
        if f.reports_everything() {
            assert_eq!(again, Enqueued::Duplicate);
        }
        let got = f.queue.receive(10, 1000).await.unwrap();
        assert_eq!(got.len(), 1, "the duplicate was dropped");
        f.queue.ack(&got[0].receipt).await.unwrap();
        assert!(f.queue.receive(10, 1000).await.unwrap().is_empty());
        if let Some(clock) = &f.clock {
            clock.advance(DEDUP_WINDOW_MS + 1);
            assert_eq!(send(&*f.queue, &msg("r1", 1)).await, Enqueued::Sent);
        }
    }

    pub async fn an_unacknowledged_message_comes_back_after_its_visibility_timeout(f: Fixture) {
        send(&*f.queue, &msg("r1", 1)).await;
        let first = f.queue.receive(10, 1000).await.unwrap();
        assert!(
            f.queue.receive(10, 1000).await.unwrap().is_empty(),
            "invisible while in flight"
        );
        f.pass(1_100).await;
        let again = f.receive_due().await;
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].receive_count, 2);
        if f.reports_everything() {
            assert!(matches!(
                f.queue.ack(&first[0].receipt).await,
                Err(QueueError::StaleReceipt)
            ));
        }
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
        let next = f.receive_due().await;
        assert_eq!(StepMessage::parse(&next[0].body).unwrap(), msg("r1", 2));
    }

    pub async fn a_delayed_message_waits_and_blocks_its_run(f: Fixture) {
        let m = msg("r1", 1);
        let Some(clock) = &f.clock else {
            // SQS FIFO queues have no per-message delay: refused, never silently sent at once.
            assert!(matches!(
                f.queue
                    .enqueue(&m, &m.dedup_id(), 2_000, Durability::Now)
                    .await,
                Err(QueueError::Unsupported(_))
            ));
            assert!(f.queue.receive(10, 1000).await.unwrap().is_empty());
            return;
        };
        f.queue
            .enqueue(&m, &m.dedup_id(), 2_000, Durability::Now)
            .await
            .unwrap();
        send(&*f.queue, &msg("r1", 2)).await;
        assert!(f.queue.receive(10, 1000).await.unwrap().is_empty());
        clock.advance(2_000);
        let got = f.queue.receive(10, 1000).await.unwrap();
        assert_eq!(StepMessage::parse(&got[0].body).unwrap(), m);
    }

    /// A deferred send (its cause not yet acknowledged) is delivered, ordered and
    /// deduplicated as a durable one is.
    pub async fn a_deferred_send_is_delivered_and_deduplicated_as_a_durable_one(f: Fixture) {
        let (first, second) = (msg("r1", 1), msg("r1", 2));
        f.queue
            .enqueue(&first, &first.dedup_id(), 0, Durability::Deferred)
            .await
            .unwrap();
        send(&*f.queue, &second).await;
        let again = f
            .queue
            .enqueue(&first, &first.dedup_id(), 0, Durability::Deferred)
            .await
            .unwrap();

        let got = f.receive_due().await;
        assert_eq!(bodies(got.clone()), vec![first]);
        f.queue.ack(&got[0].receipt).await.unwrap();
        assert_eq!(bodies(f.receive_due().await), vec![second]);
        if f.reports_everything() {
            assert_eq!(again, Enqueued::Duplicate);
        }
    }

    pub async fn extend_moves_the_visibility(f: Fixture) {
        send(&*f.queue, &msg("r1", 1)).await;
        let got = f.queue.receive(10, 1000).await.unwrap();
        f.queue.extend(&got[0].receipt, 3_000).await.unwrap();
        f.pass(1_100).await;
        assert!(f.queue.receive(10, 1000).await.unwrap().is_empty());
        f.queue.extend(&got[0].receipt, 0).await.unwrap();
        assert_eq!(f.receive_due().await.len(), 1);
    }

    pub async fn a_run_carried_on_by_its_worker_gets_its_next_message_exactly_once(f: Fixture) {
        send(&*f.queue, &msg("r1", 1)).await;
        let got = f.queue.receive(10, 1000).await.unwrap();
        send(&*f.queue, &msg("r1", 2)).await;

        let next = f
            .queue
            .ack_and_next(&got[0].receipt, None, 1000)
            .await
            .unwrap();

        assert_eq!(f.reaching_a_worker(next).await, vec![msg("r1", 2)]);
    }

    pub async fn a_next_step_sent_with_the_ack_is_delivered_exactly_once(f: Fixture) {
        send(&*f.queue, &msg("r1", 1)).await;
        let got = f.queue.receive(10, 1000).await.unwrap();

        let next = f
            .queue
            .ack_and_next(&got[0].receipt, Some(&msg("r1", 2)), 1000)
            .await
            .unwrap();

        assert_eq!(f.reaching_a_worker(next).await, vec![msg("r1", 2)]);
        if !f.reports_everything() {
            return;
        }
        assert_eq!(
            f.queue
                .enqueue(&msg("r1", 2), &msg("r1", 2).dedup_id(), 0, Durability::Now)
                .await
                .unwrap(),
            Enqueued::Duplicate,
            "its dedup id was recorded"
        );
    }

    pub async fn a_run_is_not_carried_on_past_another_that_waits_for_its_turn(f: Fixture) {
        send(&*f.queue, &msg("r1", 1)).await;
        let got = f.queue.receive(1, 1000).await.unwrap();
        send(&*f.queue, &msg("r2", 1)).await;
        send(&*f.queue, &msg("r1", 2)).await;

        let next = f
            .queue
            .ack_and_next(&got[0].receipt, None, 1000)
            .await
            .unwrap();

        assert!(
            next.is_none(),
            "r2 waits, so r1's next step goes by receive"
        );
        let mut delivered = vec![];
        while delivered.len() < 2 {
            let got = bodies(f.receive_due().await);
            assert!(!got.is_empty(), "both runs' messages are delivered");
            delivered.extend(got);
        }
        if f.reports_everything() {
            assert_eq!(
                delivered,
                vec![msg("r2", 1), msg("r1", 2)],
                "r2's turn first"
            );
        }
    }

    pub async fn a_message_that_keeps_failing_is_dead_lettered(f: Fixture) {
        send(&*f.queue, &msg("r1", 1)).await;
        send(&*f.queue, &msg("r1", 2)).await;
        for _ in 0..MAX_RECEIVES {
            assert_eq!(f.receive_due().await.len(), 1);
            f.pass(1_100).await;
        }
        let next = f.receive_due().await;
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
                #[tokio::test] async fn a_message_is_received_then_gone_after_ack() { super::suite::a_message_is_received_then_gone_after_ack(super::$adapter().await).await }
                #[tokio::test] async fn the_same_dedup_id_within_five_minutes_is_dropped() { super::suite::the_same_dedup_id_within_five_minutes_is_dropped(super::$adapter().await).await }
                #[tokio::test] async fn an_unacknowledged_message_comes_back_after_its_visibility_timeout() { super::suite::an_unacknowledged_message_comes_back_after_its_visibility_timeout(super::$adapter().await).await }
                #[tokio::test] async fn one_message_per_run_is_in_flight_and_order_is_kept() { super::suite::one_message_per_run_is_in_flight_and_order_is_kept(super::$adapter().await).await }
                #[tokio::test] async fn a_delayed_message_waits_and_blocks_its_run() { super::suite::a_delayed_message_waits_and_blocks_its_run(super::$adapter().await).await }
                #[tokio::test] async fn a_deferred_send_is_delivered_and_deduplicated_as_a_durable_one() { super::suite::a_deferred_send_is_delivered_and_deduplicated_as_a_durable_one(super::$adapter().await).await }
                #[tokio::test] async fn extend_moves_the_visibility() { super::suite::extend_moves_the_visibility(super::$adapter().await).await }
                #[tokio::test] async fn a_run_carried_on_by_its_worker_gets_its_next_message_exactly_once() { super::suite::a_run_carried_on_by_its_worker_gets_its_next_message_exactly_once(super::$adapter().await).await }
                #[tokio::test] async fn a_next_step_sent_with_the_ack_is_delivered_exactly_once() { super::suite::a_next_step_sent_with_the_ack_is_delivered_exactly_once(super::$adapter().await).await }
                #[tokio::test] async fn a_run_is_not_carried_on_past_another_that_waits_for_its_turn() { super::suite::a_run_is_not_carried_on_past_another_that_waits_for_its_turn(super::$adapter().await).await }
                #[tokio::test] async fn a_message_that_keeps_failing_is_dead_lettered() { super::suite::a_message_that_keeps_failing_is_dead_lettered(super::$adapter().await).await }
            }
        )*
    };
}

conformance!(memory, sqlite, sqs);
