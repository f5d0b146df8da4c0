//! The actors of a schedule — users (create, cancel, pause, continue, follow-up, respond, patch), workers,
//! the sweeper, the scheduler and time — each step chosen by the seed; then faults stop and the
//! liveness phase drives every run to an ended or waiting state.

use longrun_ports::prelude::*;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use longrun_domain::change::Approval;
use longrun_domain::run::{BudgetsInput, PermissionMode, Run, RunPatch, RunStatus, Thresholds};
use longrun_domain::{RunTemplate, Schedule};
use longrun_engine::EngineConfig;
use longrun_http::{AppConfig, Platform, Tokens};
use longrun_ports::{Clock, Store};
use longrun_service::{Outbox, OutboxConfig, carry_delivery, handle_delivery};

use crate::hooks::{self, SimPoster};
use crate::ports::{SimFaults, SimLlm, SimNotifier, SimQueue, SimStore};
use crate::{Failure, Options, Sim, Summary, check, lock};

const MODEL: &str = "sim:model";
const LEASE_MS: u64 = 30_000;
const VISIBILITY_MS: u64 = 30_000;
/// Runs a schedule creates at most (children and scheduled runs come on top).
const MAX_RUNS: u32 = 6;

pub(crate) fn users(n: u32) -> Vec<String> {
    (0..n).map(|i| format!("user{i}")).collect()
}

fn assemble(sim: &Arc<Sim>, queue: Arc<SimQueue>) -> Option<(Platform, Arc<Outbox>)> {
    let store: Arc<dyn Store> = Arc::new(SimStore {
        sim: sim.clone(),
        inner: sim.inner.clone(),
    });
    // The real outbox, with `serve`'s lease and retry policy, over the faulty store.
    let outbox = Arc::new(Outbox::new(
        store.clone(),
        store.clone(),
        Arc::new(SimPoster { sim: sim.clone() }),
        sim.clock.clone(),
        OutboxConfig {
            batch: 4,
            ..OutboxConfig::default()
        },
    ));
    let notifier = Arc::new(SimNotifier {
        sim: sim.clone(),
        outbox: outbox.clone(),
    });
    let mut config = AppConfig::new(Tokens::default(), vec![MODEL.into()]).ok()?;
    config.fetch.enabled = false;
    config.active_limit = 3;
    config.max_run_depth = 2;
    let engine = EngineConfig {
        lease_ms: LEASE_MS,
        ..Default::default()
    };
    let platform = longrun_wiring::assemble(
        store,
        queue,
        notifier,
        Arc::new(SimLlm { sim: sim.clone() }),
        config,
        &Default::default(),
        sim.clock.clone(),
        Arc::new(SimFaults { sim: sim.clone() }),
        engine,
        None,
    )
    .ok()?;
    Some((platform, outbox))
}

struct World {
    sim: Arc<Sim>,
    p: Platform,
    outbox: Arc<Outbox>,
    queue: Arc<SimQueue>,
    users: Vec<String>,
    created: u32,
}

pub(crate) async fn run(seed: u64, o: &Options) -> Result<Summary, Failure> {
    let sim = Arc::new(Sim::new(seed));
    let queue = Arc::new(SimQueue::new(sim.clone()));
    let Some((p, outbox)) = assemble(&sim, queue.clone()) else {
        return Err(Failure {
            seed,
            violations: vec!["the simulated platform could not be assembled".into()],
            trace: vec![],
        });
    };
    *lock(&sim.platform) = Some(p.clone());
    *lock(&sim.outbox) = Some(outbox.clone());
    let mut world = World {
        sim: sim.clone(),
        p,
        outbox,
        queue,
        users: users(o.users),
        created: 0,
    };
    hooks::register(&sim, &world.users).await;
    world.schedule().await;
    for _ in 0..o.fault_steps {
        world.act().await;
    }
    sim.chaos.store(false, Ordering::SeqCst);
    sim.note("faults stop".into());
    let settled = world.settle(o.settle_steps).await;
    let drained = hooks::drain(&sim, &world.outbox, &world.users, o.drain_steps).await;
    let mut violations = check::all(&sim, &world.p, &world.users, settled).await;
    hooks::check(&sim, &world.users, drained, &mut violations).await;
    let (deliveries, given_up) = hooks::tally(&sim, &world.users).await;
    lock(&sim.platform).take();
    lock(&sim.outbox).take();
    let trace = std::mem::take(&mut *lock(&sim.trace));
    let runs = check::all_runs(&sim.inner, &world.users).await;
    let ledger = lock(&sim.ledger);
    let mut violations: Vec<String> = ledger
        .violations
        .iter()
        .cloned()
        .chain(violations)
        .collect();
    violations.dedup();
    if !violations.is_empty() {
        return Err(Failure {
            seed,
            violations,
            trace,
        });
    }
    Ok(Summary {
        runs: runs.len(),
        iterations: runs.iter().map(|r| r.iteration as u64).sum(),
        model_calls: ledger.spent.values().map(|s| s.calls).sum(),
        faults: ledger.faults,
        deliveries,
        given_up,
        fingerprint: fingerprint(&trace),
        trace,
    })
}

fn fingerprint(trace: &[String]) -> u64 {
    // FNV-1a: stable across toolchains, unlike the std hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for line in trace {
        for b in line.bytes().chain(std::iter::once(b'\n')) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

impl World {
    /// A schedule every five minutes for the first user, so the scheduler has work.
    async fn schedule(&self) {
        let now = self.sim.clock.now_ms();
        let schedule = Schedule {
            id: "sch_sim".into(),
            user_id: self.users[0].clone(),
            cron: "*/5 * * * *".into(),
            template: template("scheduled digest", BudgetsInput::default(), None),
            next_at: now + 60_000,
            created_at: now,
            last_run_id: None,
        };
        if let Err(e) = self.p.store.put_schedule(&schedule).await {
            self.sim.note(format!("schedule not stored: {e}"));
        }
    }

    async fn act(&mut self) {
        match self.sim.below(100) {
            0..=39 => worker(&self.sim, &self.p).await,
            40..=51 => self.create().await,
            52..=71 => {
                if let Some(id) = self.random_run().await {
                    user_action(&self.sim, &self.p, &id).await;
                }
            }
            72..=79 => sweep(&self.sim, &self.p).await,
            80..=83 => match longrun_http::schedules::start_due(&self.p, 5).await {
                Ok(ids) if !ids.is_empty() => self.sim.note(format!("scheduler started {ids:?}")),
                Ok(_) => {}
                Err(e) => self.sim.note(format!("scheduler: {e}")),
            },
            84..=87 => hooks::pass(&self.sim, &self.outbox).await,
            88..=89 => crate::retention::pass(&self.sim, &self.users).await,
            _ => {
                let ms = if self.sim.chance(100) {
                    self.sim.range(31_000, 120_000)
                } else {
                    self.sim.range(0, 5_000)
                };
                self.sim.clock.advance(ms as i64);
            }
        }
    }

    async fn create(&mut self) {
        if self.created >= MAX_RUNS {
            return;
        }
        self.created += 1;
        let id = format!("run{}", self.created);
        let user = self.users[self.sim.below(self.users.len() as u64) as usize].clone();
        let budgets = BudgetsInput {
            max_iterations: Some(self.sim.range(2, 12) as i64),
            max_tokens: self
                .sim
                .chance(400)
                .then(|| self.sim.range(1_500, 12_000) as i64),
            ..Default::default()
        };
        let mode = match self.sim.below(4) {
            0 => Some(PermissionMode::ApprovePlan),
            1 => Some(PermissionMode::PerWrite),
            _ => None,
        };
        let mut req = template("research the topic", budgets, mode);
        // Some parents give up on their children after a few idle sweeps.
        if self.sim.chance(500) {
            req.thresholds = Some(Thresholds {
                child_wait_timeout_s: self.sim.range(30, 300),
                ..Default::default()
            });
        }
        // Some runs name criteria their completion claim must map to evidence.
        req.completion_criteria = (1..=self.sim.below(3))
            .map(|i| longrun_domain::criteria::Criterion::Text(format!("criterion {i}")))
            .collect();
        // Some check a document too; some leave grading off.
        if !req.completion_criteria.is_empty() && self.sim.chance(3) {
            req.completion_criteria
                .push(longrun_domain::criteria::Criterion::Check(
                    longrun_domain::criteria::Check::Contains {
                        doc: "final.md".into(),
                        text: "done".into(),
                    },
                ));
        }
        if self.sim.chance(4) {
            req.grading = Some(longrun_domain::criteria::Grading {
                text: false,
                model: None,
            });
        }
        match longrun_http::api::create_run_with_id(&self.p, &user, req, id.clone()).await {
            Ok(_) => self.sim.note(format!("{user} created {id}")),
            Err(e) => self.sim.note(format!("{user} could not create {id}: {e}")),
        }
    }

    async fn random_run(&self) -> Option<String> {
        let runs = check::all_runs(&self.sim.inner, &self.users).await;
        let ids: Vec<String> = runs.into_iter().map(|r| r.id).collect();
        lock(&self.sim.rng).pick(&ids).cloned()
    }

    /// Faults are off: workers drain the queue; when it is idle, time passes and the sweeper
    /// nudges what is owed. True when every run ended or waits, with its outcome published.
    async fn settle(&self, steps: u32) -> bool {
        for _ in 0..steps {
            let runs = check::all_runs(&self.sim.inner, &self.users).await;
            if runs.iter().all(settled) && no_child_owed(&runs, &lock(&self.sim.deleted)) {
                return true;
            }
            if self.sim.chance(20) {
                crate::retention::pass(&self.sim, &self.users).await;
            }
            if self.queue.is_empty() || self.sim.chance(200) {
                self.sim.clock.advance(31_000);
                sweep(&self.sim, &self.p).await;
            }
            worker(&self.sim, &self.p).await;
        }
        false
    }
}

/// Ended or waiting (on the user, on live children, paused by the user), outcome published.
pub(crate) fn settled(r: &Run) -> bool {
    let at_rest = r.status.is_ended()
        || r.status == RunStatus::WaitingOnUser
        || r.status == RunStatus::Paused
        || (r.status == RunStatus::WaitingOnChildren && r.active_children() > 0);
    at_rest && r.notified
}

/// Children are created after the commit that lists them: a crash in between leaves them owed
/// to the redelivery of that iteration's message, so their parent is not at rest yet. A child
/// the retention policy deleted was there.
fn no_child_owed(runs: &[Run], deleted: &std::collections::BTreeSet<String>) -> bool {
    let ids: std::collections::HashSet<&str> = runs.iter().map(|r| r.id.as_str()).collect();
    runs.iter()
        .flat_map(|r| &r.children)
        .all(|c| ids.contains(c.id.as_str()) || deleted.contains(&c.id))
}

fn template(objective: &str, budgets: BudgetsInput, mode: Option<PermissionMode>) -> RunTemplate {
    RunTemplate {
        agent: None,
        objective: objective.into(),
        completion_criteria: vec![],
        grading: None,
        budgets,
        thresholds: None,
        model: None,
        models: vec![],
        permission_mode: mode,
        allowed_tools: None,
        context: None,
        scope: None,
        project_ids: None,
    }
}

/// One worker receive: every message taken is stepped; a crash makes the next worker a new
/// process with a new identity.
async fn worker(sim: &Sim, p: &Platform) {
    let max = sim.range(1, 3) as usize;
    let deliveries = match p.queue.receive(max, VISIBILITY_MS).await {
        Ok(d) => d,
        Err(e) => {
            sim.note(format!("receive: {e}"));
            return;
        }
    };
    for d in deliveries {
        let owner = format!("worker{}", sim.workers.fetch_add(1, Ordering::SeqCst));
        sim.note(format!("{owner} got {} ({})", d.body, d.receive_count));
        // Half the workers carry their run on while the queue hands its next step back,
        // as `serve`'s do; each carried step may be the last this worker takes.
        let crashed = if sim.chance(500) {
            let go_on = || sim.chance(800);
            carry_delivery(&p.engine, &*p.queue, d, &owner, VISIBILITY_MS, go_on).await
        } else {
            handle_delivery(&p.engine, &*p.queue, &d, &owner).await
        };
        if crashed {
            sim.note(format!("{owner} crashed"));
        }
    }
}

async fn sweep(sim: &Sim, p: &Platform) {
    match p.follow_up.sweep(60_000, 20).await {
        Ok(r) => sim.note(format!("sweep: {r:?}")),
        Err(e) => sim.note(format!("sweep: {e}")),
    }
}

/// What a user does to a run: cancel, pause, continue with more budget (or ask an ended run a
/// follow-up question), respond, or edit.
async fn user_action(sim: &Sim, p: &Platform, id: &str) {
    let Some(run) = sim.inner.get_run(id).await.ok().flatten() else {
        return;
    };
    let user = run.user_id.as_str();
    let (what, result) = match sim.below(100) {
        0..=14 => ("cancel", longrun_http::api::cancel_run(p, user, id).await),
        15..=29 => ("pause", longrun_http::api::pause_run(p, user, id).await),
        30..=49 => {
            let b = &run.budgets;
            let more = BudgetsInput {
                max_iterations: Some(b.max_iterations as i64 + 3),
                max_tokens: b.max_tokens.map(|t| t as i64 + 3_000),
                ..Default::default()
            };
            if sim.chance(400) {
                let question = "and what did the sources disagree on?";
                (
                    "follow-up",
                    longrun_http::api::follow_up_run(p, user, id, question, &more).await,
                )
            } else {
                (
                    "continue",
                    longrun_http::api::continue_run_with(p, user, id, &more).await,
                )
            }
        }
        50..=79 => {
            let approval = Approval {
                approve: sim.chance(800).then_some(sim.chance(800)),
                decisions: vec![],
            };
            let answer = if sim.chance(500) {
                "use the first source"
            } else {
                ""
            };
            (
                "respond",
                longrun_http::api::respond_run(p, user, id, answer, approval).await,
            )
        }
        _ => {
            let edit = RunPatch {
                objective: Some(format!("research the topic (revision {})", sim.below(100))),
                plan: vec![],
            };
            (
                "patch",
                longrun_http::api::patch_run_with(p, user, id, edit).await,
            )
        }
    };
    match result {
        Ok(r) => sim.note(format!("user {what} {id}: now {}", r.status)),
        Err(e) => sim.note(format!("user {what} {id}: {e}")),
    }
}

/// Another actor's turn while a model call is in flight: a user on this run or another, the
/// sweeper, or a second worker (whose step may nest one level).
pub(crate) async fn interleave(sim: &Arc<Sim>, run_id: &str) {
    let Some(p) = sim.platform() else { return };
    if sim.depth.fetch_add(1, Ordering::SeqCst) >= 2 {
        sim.depth.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let roll = sim.below(100);
    let fut: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> = match roll {
        0..=39 => Box::pin(user_action(sim, &p, run_id)),
        40..=59 => Box::pin(async {
            let runs = check::all_runs(&sim.inner, &users(3)).await;
            let ids: Vec<String> = runs.into_iter().map(|r| r.id).collect();
            let other = lock(&sim.rng).pick(&ids).cloned();
            if let Some(other) = other {
                user_action(sim, &p, &other).await;
            }
        }),
        60..=69 => Box::pin(sweep(sim, &p)),
        _ => Box::pin(worker(sim, &p)),
    };
    fut.await;
    sim.depth.fetch_sub(1, Ordering::SeqCst);
}

/// A second worker receives while this one is stuck in a call past its lease: it may take the
/// same iteration over.
pub(crate) async fn take_over(sim: &Arc<Sim>) {
    let Some(p) = sim.platform() else { return };
    if sim.depth.fetch_add(1, Ordering::SeqCst) < 2 {
        sim.note("another worker receives".into());
        let fut: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> =
            Box::pin(worker(sim, &p));
        fut.await;
    }
    sim.depth.fetch_sub(1, Ordering::SeqCst);
}

/// A change by another actor that lands just before this write: the store re-evaluates the
/// write against it.
pub(crate) async fn race(sim: &Arc<Sim>, run_id: &str) {
    let Some(p) = sim.platform() else { return };
    if sim.depth.fetch_add(1, Ordering::SeqCst) >= 2 {
        sim.depth.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let fut: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> =
        Box::pin(user_action(sim, &p, run_id));
    fut.await;
    sim.depth.fetch_sub(1, Ordering::SeqCst);
}

/// Another actor's turn while a webhook POST is slow: a worker, or another pass of the outbox
/// (which must not take the delivery in flight: it is leased).
pub(crate) async fn interleave_webhook(sim: &Arc<Sim>) {
    let (Some(p), Some(outbox)) = (sim.platform(), sim.outbox()) else {
        return;
    };
    if sim.depth.fetch_add(1, Ordering::SeqCst) < 2 {
        let fut: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> =
            if sim.chance(500) {
                Box::pin(hooks::pass(sim, &outbox))
            } else {
                Box::pin(worker(sim, &p))
            };
        fut.await;
    }
    sim.depth.fetch_sub(1, Ordering::SeqCst);
}
