//! Webhooks in the simulation: the real `Outbox` over the faulty store, posting through a
//! simulated receiver per webhook. A live receiver is down, slow, answers 5xx, or takes the
//! POST and then sees its sender crash mid-attempt, each with a chance drawn from the seed
//! while faults are on; some webhooks refuse for good (410) or are never reachable, so the
//! outbox also has to give up. Checked at the end: every outcome of a run whose owner has
//! webhooks is delivered to each (the receiver got it) or recorded as given up.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use longrun_domain::{Attempt, DeliveryState, WebhookDelivery, delivery_id};
use longrun_local::InMemoryRunStore;
use longrun_ports::prelude::*;
use longrun_ports::{Clock, WebhookPoster};
use longrun_service::{Outbox, OutboxConfig};

use crate::{Sim, lock};

/// What stands behind a webhook's URL for the whole schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Receiver {
    /// Answers 2xx, except for the faults drawn while they are on.
    Live,
    /// Answers 410 Gone: the first attempt gives up.
    Gone,
    /// Never reachable: every attempt fails until the retry policy gives up.
    Dead,
}

/// What the receivers saw: each (URL, delivery id) and how often it arrived.
#[derive(Default)]
pub struct Received {
    pub receivers: BTreeMap<String, Receiver>,
    pub got: BTreeMap<(String, String), u32>,
    /// Deliveries whose attempt is under way: a second taker of one is a broken lease.
    /// Attempts under way, with when each began.
    in_flight: BTreeMap<(String, u32), i64>,
}

/// The time a slow receiver takes at most: inside the real sender's request timeout (5 s), so
/// inside the outbox's lease, as in production.
const SLOW_MS: u64 = 5_000;

/// The simulated receivers, as the outbox's `WebhookPoster`.
pub struct SimPoster {
    pub sim: Arc<Sim>,
}

/// Takes a delivery out of `in_flight` however its attempt ends, a crash (the future dropped)
/// included.
struct InFlight<'a> {
    sim: &'a Sim,
    key: (String, u32),
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        lock(&self.sim.received).in_flight.remove(&self.key);
    }
}

impl SimPoster {
    fn receive(&self, url: &str, id: &str) {
        *lock(&self.sim.received)
            .got
            .entry((url.to_string(), id.to_string()))
            .or_default() += 1;
    }

    /// A live receiver under the seed's faults.
    async fn live(&self, d: &WebhookDelivery) -> Attempt {
        let sim = &self.sim;
        if sim.roll(60) {
            return Attempt::Failed("connection refused".into());
        }
        if sim.roll(60) {
            // A receiver that quotes the secret it could not verify with.
            return Attempt::Failed(format!(
                "HTTP 503: cannot verify with {}",
                crate::secrets::HOOK_SECRET
            ));
        }
        if sim.roll(60) {
            // Slow: others act meanwhile; past the sender's timeout it may have taken the POST.
            let ms = sim.range(1_000, SLOW_MS + 1);
            sim.note(format!("webhook {} slow ({ms} ms)", d.id));
            crate::world::interleave_webhook(sim).await;
            sim.clock.advance(ms as i64);
            if ms >= SLOW_MS {
                if sim.chance(500) {
                    self.receive(&d.url, &d.id);
                }
                return Attempt::Failed("operation timed out".into());
            }
        }
        // The pass this attempt belongs to: the innermost one running (passes nest only
        // inside a slow attempt, which runs the nested one to its end before going on).
        let pass = lock(&sim.passes).last().cloned();
        if let Some(pass) = pass
            && sim.roll(40)
        {
            // The sender's process dies mid-attempt, before or after the receiver took it.
            if sim.chance(500) {
                self.receive(&d.url, &d.id);
            }
            sim.note(format!("outbox crashed posting {}#{}", d.id, d.hook));
            pass.notify_one();
            std::future::pending::<()>().await;
        }
        self.receive(&d.url, &d.id);
        Attempt::Delivered
    }
}

#[async_trait]
impl WebhookPoster for SimPoster {
    async fn post(&self, d: &WebhookDelivery) -> Attempt {
        let key = (d.id.clone(), d.hook);
        let (fresh, receiver) = {
            let mut r = lock(&self.sim.received);
            // The outbox begins an attempt only in the first half of its lease, so another
            // taker within half a lease of an attempt's start broke the lease. Later it did
            // not: in production the attempt has long ended (the sender's timeouts), though
            // here the actors interleaved inside a slow one may move the clock further.
            let now = self.sim.clock.now_ms();
            let half_lease = OutboxConfig::default().lease_ms / 2;
            let fresh = match r.in_flight.get(&key) {
                Some(began) if now - began < half_lease => false,
                _ => {
                    r.in_flight.insert(key.clone(), now);
                    true
                }
            };
            let receiver = r.receivers.get(&d.url).copied();
            (fresh, receiver.unwrap_or(Receiver::Dead))
        };
        if !fresh {
            self.sim.violation(format!(
                "delivery {}#{} attempted by two takers at once",
                d.id, d.hook
            ));
            return Attempt::Failed("simulated: taken twice".into());
        }
        if d.state != DeliveryState::Pending {
            self.sim.violation(format!(
                "delivery {}#{} attempted once settled",
                d.id, d.hook
            ));
        }
        let _in_flight = InFlight {
            sim: &self.sim,
            key,
        };
        match receiver {
            Receiver::Gone => Attempt::Refused("HTTP 410 Gone".into()),
            Receiver::Dead => Attempt::Failed("connection refused".into()),
            Receiver::Live => self.live(d).await,
        }
    }
}

/// One pass of the outbox as one process: a crash mid-attempt ends the pass there, leaving
/// what it had taken leased until the lease runs out.
pub async fn pass(sim: &Sim, outbox: &Outbox) {
    let crash = Arc::new(tokio::sync::Notify::new());
    lock(&sim.passes).push(crash.clone());
    tokio::select! {
        biased;
        r = outbox.deliver_due() => match r {
            Ok(0) => {}
            Ok(n) => sim.note(format!("outbox attempted {n}")),
            Err(e) => sim.note(format!("outbox: {e}")),
        },
        _ = crash.notified() => {}
    }
    lock(&sim.passes).pop();
}

/// Faults are off: passes, with time moved to the next delivery due, until none is pending.
/// True when the outbox drained.
pub async fn drain(sim: &Sim, outbox: &Outbox, users: &[String], steps: u32) -> bool {
    for _ in 0..steps {
        let pending: Vec<WebhookDelivery> = all_deliveries(&sim.inner, users)
            .await
            .into_iter()
            .filter(|d| d.state == DeliveryState::Pending)
            .collect();
        let Some(next) = pending.iter().map(|d| d.next_at).min() else {
            return true;
        };
        let now = sim.clock.now_ms();
        if next > now {
            sim.clock.advance(next - now);
        }
        pass(sim, outbox).await;
    }
    false
}

/// Deliveries recorded, and of them given up.
pub async fn tally(sim: &Sim, users: &[String]) -> (usize, usize) {
    let all = all_deliveries(&sim.inner, users).await;
    let given_up = all
        .iter()
        .filter(|d| d.state == DeliveryState::GivenUp)
        .count();
    (all.len(), given_up)
}

async fn all_deliveries(store: &InMemoryRunStore, users: &[String]) -> Vec<WebhookDelivery> {
    let mut out = vec![];
    for u in users {
        for n in store.notifications(u, 100_000).await.unwrap_or_default() {
            out.extend(store.deliveries(u, &n.run_id).await.unwrap_or_default());
        }
    }
    out.sort_by(|a, b| (&a.id, a.hook).cmp(&(&b.id, b.hook)));
    out.dedup_by(|a, b| (&a.id, a.hook) == (&b.id, b.hook));
    out
}

/// Every outcome of a user with webhooks has one delivery per webhook, each delivered (and
/// received) or given up with its reason; nothing reached a receiver that was not recorded.
pub async fn check(sim: &Sim, users: &[String], drained: bool, out: &mut Vec<String>) {
    let store = &sim.inner;
    if !drained {
        out.push("webhooks: the outbox still had pending deliveries after faults stopped".into());
    }
    let deliveries = all_deliveries(store, users).await;
    let received = lock(&sim.received).got.clone();
    for u in users {
        let hooks = store.webhooks(u).await.unwrap_or_default();
        for n in store.notifications(u, 100_000).await.unwrap_or_default() {
            for (i, hook) in hooks.iter().enumerate() {
                let id = delivery_id(&n.id, i as u32);
                let d = deliveries.iter().find(|d| d.id == id && d.hook == i as u32);
                let got = received.contains_key(&(hook.url.clone(), id));
                match d.map(|d| (d.state, d.last_error.is_some())) {
                    None => out.push(format!(
                        "webhooks: outcome {} has no delivery to hook {i}",
                        n.id
                    )),
                    Some((DeliveryState::Delivered, _)) if !got => out.push(format!(
                        "webhooks: {}#{i} recorded delivered, never received",
                        n.id
                    )),
                    Some((DeliveryState::GivenUp, false)) => {
                        out.push(format!("webhooks: {}#{i} given up without a reason", n.id))
                    }
                    Some((DeliveryState::Pending, _)) => out.push(format!(
                        "webhooks: {}#{i} neither delivered nor given up",
                        n.id
                    )),
                    Some(_) => {}
                }
            }
        }
    }
    // A run the retention policy deleted took its delivery records with it (only once none
    // was pending, which the retention check holds it to).
    let deleted = lock(&sim.deleted).clone();
    for (url, id) in received.keys() {
        let run = id.split('#').next().unwrap_or_default();
        if deleted.contains(run) {
            continue;
        }
        if !deliveries.iter().any(|d| &d.id == id && &d.url == url) {
            out.push(format!(
                "webhooks: {url} received {id}, which was never recorded"
            ));
        }
    }
}

/// The users' webhooks for this schedule: the first user one, the second two, the third
/// none; each live, gone or dead by the seed.
pub async fn register(sim: &Sim, users: &[String]) {
    for (u, count) in users.iter().zip([1, 2, 0]) {
        let mut hooks = vec![];
        for i in 0..count {
            let receiver = match sim.below(100) {
                0..=69 => Receiver::Live,
                70..=84 => Receiver::Gone,
                _ => Receiver::Dead,
            };
            let url = format!("https://hooks.sim/{u}/{i}");
            lock(&sim.received).receivers.insert(url.clone(), receiver);
            hooks.push(longrun_domain::Webhook {
                url,
                secret: crate::secrets::HOOK_SECRET.into(),
            });
        }
        if !hooks.is_empty()
            && let Err(e) = sim.inner.put_webhooks(u, &hooks).await
        {
            sim.note(format!("webhooks not stored: {e}"));
        }
        sim.note(format!(
            "{u} webhooks: {:?}",
            hooks.iter().map(|h| &h.url).collect::<Vec<_>>()
        ));
    }
}
