//! The embedded platform (`longrun serve`, `run --embedded`, tests): SQLite store and queue,
//! the in-process worker loop, the notifier (inbox and webhook outbox) and the scheduler.

use std::path::Path;
use std::sync::Arc;

use longrun_domain::OutcomeMessage;
use longrun_engine::EngineConfig;
use longrun_llm::ModelRouter;
use longrun_local::{SqliteDb, SqliteRunStore, SqliteStepQueue};
use longrun_ports::Durability;
use longrun_ports::{AgentHost, LlmClient};
use longrun_ports::{Clock, Faults, Notifier, NotifyError, StepQueue, Store};
use longrun_ports::{NoFaults, SystemClock};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use longrun_service::{AppConfig, Outbox, OutboxConfig, Platform};
use longrun_service::{Retention, RetentionPolicy, WorkerConfig, WorkerLoop};

use crate::{Adapters, PlatformError};

/// Knobs for building the embedded platform; tests swap the clock, faults or model.
pub struct Embedded {
    pub llm: Option<Arc<dyn LlmClient>>,
    pub clock: Arc<dyn Clock>,
    pub faults: Arc<dyn Faults>,
    pub engine: EngineConfig,
    pub worker: WorkerConfig,
    pub outbox: OutboxConfig,
    /// Starts agent runs' processes; `None`: agent runs are refused.
    pub agents: Option<Arc<dyn AgentHost>>,
    pub adapters: Adapters,
}

impl Default for Embedded {
    fn default() -> Self {
        Embedded {
            llm: None,
            clock: Arc::new(SystemClock),
            faults: Arc::new(NoFaults),
            engine: EngineConfig {
                lease_ms: 30_000,
                ..EngineConfig::default()
            },
            worker: WorkerConfig::default(),
            outbox: OutboxConfig::default(),
            agents: None,
            adapters: Adapters::default(),
        }
    }
}

/// The embedded platform and the handles that drive it.
pub struct Running {
    pub platform: Platform,
    /// The embedded database, when there is one.
    pub db: Option<SqliteDb>,
    sqlite: Option<(Arc<SqliteRunStore>, Arc<SqliteStepQueue>)>,
    pub worker: Arc<WorkerLoop>,
    /// Outcome webhooks, when the platform's notifier records them in an outbox.
    pub outbox: Option<Arc<Outbox>>,
    /// The retention pass, when a policy is set.
    pub retention: Option<Arc<Retention>>,
}

impl Running {
    /// The worker loop over any platform (the embedded one, or adapters a test picks).
    pub fn new(platform: Platform, worker: WorkerConfig) -> Running {
        let worker = Arc::new(WorkerLoop::new(
            platform.engine.clone(),
            platform.queue.clone(),
            worker,
        ));
        Running {
            platform,
            worker,
            db: None,
            sqlite: None,
            outbox: None,
            retention: None,
        }
    }

    /// Heals what a crash left behind: re-sends the next step of runs whose message was lost
    /// and publishes outcomes that were never published. The claim and the notification ids
    /// make both harmless if nothing was actually lost.
    /// At start-up it also resumes the iterations the gone process had in flight at once:
    /// their leases end and their messages become visible, instead of both running out.
    pub async fn recover(&self) -> Result<usize, longrun_engine::EngineError> {
        let Some((store, queue)) = &self.sqlite else {
            return Ok(0);
        };
        let now = self.platform.clock.now_ms();
        for run in store.leased_runs().await? {
            match self
                .platform
                .store
                .update_run(&run.id, Durability::Now, &|r| {
                    longrun_domain::change::expire_lease(r, now)
                })
                .await
            {
                Ok(_) | Err(longrun_ports::StoreError::Rejected(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        queue.release_in_flight().await?;
        store.release_outbox_leases(now).await?;
        heal(&self.platform, store).await
    }

    /// Heals again whenever the database rolled back a group (a failed commit or fsync, a write
    /// that failed half-way): that loses the group's unacknowledged writes, a next step among
    /// them, as a crash would, but the process goes on, so it does not wait for a restart. And
    /// every `SWEEP_TICKS` ticks regardless: a run left claimable with no step in the queue, by
    /// whatever path, is sent on within a minute instead of at the next start-up (a repeat of
    /// a step that was only late is dropped by its claim).
    pub fn spawn_healer(
        &self, every: std::time::Duration, mut shutdown: watch::Receiver<bool>,
    ) -> Option<JoinHandle<()>> {
        const SWEEP_TICKS: u32 = 30;
        let (db, (store, _)) = (self.db.clone()?, self.sqlite.clone()?);
        let platform = self.platform.clone();
        Some(tokio::spawn(async move {
            let mut healed = db.generation();
            let mut ticks = 0u32;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    _ = shutdown.changed() => return,
                }
                ticks += 1;
                let generation = db.generation();
                let rolled_back = generation != healed;
                if !rolled_back && ticks < SWEEP_TICKS {
                    continue;
                }
                match heal(&platform, &store).await {
                    Ok(n) => {
                        healed = generation;
                        ticks = 0;
                        if rolled_back {
                            tracing::warn!(runs = n, "healed runs after a rolled-back group");
                        } else if n > 0 {
                            tracing::warn!(runs = n, "sent on runs that had no step queued");
                        }
                    }
                    Err(e) => tracing::error!(error = %e, "healing failed; retrying"),
                }
            }
        }))
    }

    /// Deletes (or exports, then deletes) the ended runs `policy` names, in the background once
    /// `spawn` starts the loops; without it every run is kept. Only on the embedded database.
    pub fn set_retention(&mut self, policy: RetentionPolicy) {
        if let Some((store, _)) = &self.sqlite {
            let clock = self.platform.clock.clone();
            self.retention = Some(Arc::new(Retention::new(store.clone(), clock, policy)));
        }
    }

    /// Starts due scheduled runs, and sends on runs whose wait for their children timed out,
    /// every `every` until `shutdown` turns true.
    pub fn spawn_scheduler(
        &self, every: std::time::Duration, mut shutdown: watch::Receiver<bool>,
    ) -> JoinHandle<()> {
        let platform = self.platform.clone();
        tokio::spawn(async move {
            loop {
                if let Err(e) = longrun_service::schedules::start_due(&platform, 100).await {
                    tracing::error!(error = %e, "starting scheduled runs failed; retrying");
                }
                if let Err(e) = platform.follow_up.wake_waits(100).await {
                    tracing::error!(error = %e, "waking runs whose wait timed out failed; retrying");
                }
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    _ = shutdown.changed() => return,
                }
            }
        })
    }

    /// Starts the worker loop, the scheduler, the healer, the webhook outbox and the retention
    /// pass; they stop when
    /// `shutdown` turns true.
    pub fn spawn(&mut self, shutdown: watch::Receiver<bool>) -> Vec<JoinHandle<()>> {
        let mut handles =
            vec![self.spawn_scheduler(std::time::Duration::from_secs(15), shutdown.clone())];
        handles.extend(self.spawn_healer(std::time::Duration::from_secs(1), shutdown.clone()));
        if let Some(outbox) = self.outbox.clone() {
            let shutdown = shutdown.clone();
            handles.push(tokio::spawn(async move { outbox.run(shutdown).await }));
        }
        if let Some(retention) = self.retention.clone() {
            let shutdown = shutdown.clone();
            handles.push(tokio::spawn(async move { retention.run(shutdown).await }));
        }
        let worker = self.worker.clone();
        handles.push(tokio::spawn(async move { worker.run(shutdown).await }));
        handles
    }
}

/// SQLite in `data_dir` (or in memory with `None`), the in-process queue and notifier.
pub fn embedded(
    data_dir: Option<&Path>, config: AppConfig, opts: Embedded,
) -> Result<Running, PlatformError> {
    let db = match data_dir {
        Some(dir) => {
            longrun_service::files::private_dir(dir).map_err(|e| PlatformError::DataDir {
                path: dir.display().to_string(),
                message: e.to_string(),
            })?;
            SqliteDb::open(&dir.join("longrun.sqlite3"))
        }
        None => SqliteDb::open_in_memory(),
    }
    .map_err(|e| PlatformError::DataDir {
        path: data_dir
            .map(|d| d.display().to_string())
            .unwrap_or_else(|| ":memory:".into()),
        message: e.to_string(),
    })?;
    let sqlite_store = Arc::new(SqliteRunStore::new(db.clone()));
    let store: Arc<dyn Store> = sqlite_store.clone();
    let sqlite_queue = Arc::new(SqliteStepQueue::new(db.clone(), opts.clock.clone()));
    let queue: Arc<dyn StepQueue> = sqlite_queue.clone();
    // The outbox records through the notifier and posts through the platform's poster,
    // which exists only once the platform is assembled.
    let notifier = Arc::new(LocalNotifier {
        outbox: std::sync::OnceLock::new(),
    });
    let llm: Arc<dyn LlmClient> = match opts.llm {
        Some(llm) => llm,
        None => Arc::new(ModelRouter::build(
            &config.models,
            &opts.adapters.llm_settings(),
        )?),
    };
    let platform = crate::assemble(
        store.clone(),
        queue,
        notifier.clone(),
        llm,
        config,
        &opts.adapters,
        opts.clock.clone(),
        opts.faults,
        opts.engine,
        opts.agents,
    )?;
    let outbox = Arc::new(Outbox::new(
        sqlite_store.clone(),
        store,
        platform.webhooks.clone(),
        opts.clock,
        opts.outbox,
    ));
    let _ = notifier.outbox.set(outbox.clone());
    let mut running = Running::new(platform, opts.worker);
    running.db = Some(db);
    running.sqlite = Some((sqlite_store, sqlite_queue));
    running.outbox = Some(outbox);
    Ok(running)
}

/// The embedded stand-in for SNS → notifier Lambda: the inbox entry and the outcome's webhook
/// deliveries are durable, in one write, before `publish` returns (so the run is marked
/// notified only then); the outbox's loop POSTs them.
struct LocalNotifier {
    outbox: std::sync::OnceLock<Arc<Outbox>>,
}

#[async_trait::async_trait]
impl Notifier for LocalNotifier {
    async fn publish(&self, msg: &OutcomeMessage) -> Result<(), NotifyError> {
        let Some(outbox) = self.outbox.get() else {
            return Err(NotifyError("the outbox is not set up yet".into()));
        };
        outbox
            .record(msg)
            .await
            .map(|_| ())
            .map_err(|e| NotifyError(format!("recording the notification: {e}")))
    }
}

/// What a crash (or a rolled-back group) may have lost, through the one recovery path.
async fn heal(
    platform: &Platform, store: &SqliteRunStore,
) -> Result<usize, longrun_engine::EngineError> {
    let stranded = store.stranded().await?;
    let now = platform.clock.now_ms();
    let report = platform
        .follow_up
        .recover(stranded, &format!("recover-{now}"))
        .await?;
    Ok(report.requeued.len() + report.republished.len())
}
