//! A deterministic simulator of the whole protocol: one seed is one schedule of users, workers,
//! the sweeper and the scheduler acting on the real `Engine` and the API's run actions over the
//! memory ports, with faults at every port (see `ports`), and the invariants checked at the end
//! (see `check`), the webhooks' among them (see `hooks`). Everything runs on one thread against a manual clock, so a seed replays
//! exactly: `make sim SEED=…`.

mod check;
mod hooks;
mod ports;
mod retention;
mod rng;
mod secrets;
mod world;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use longrun_http::Platform;
use longrun_local::InMemoryRunStore;
use longrun_ports::ManualClock;
use longrun_service::Outbox;

pub use self::ports::Spent;
use self::rng::Rng;

/// What one schedule did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub runs: usize,
    pub iterations: u64,
    pub model_calls: u64,
    pub faults: usize,
    /// Webhook deliveries recorded, and of them given up (a webhook gone or never reachable).
    pub deliveries: usize,
    pub given_up: usize,
    /// The schedule's trace, hashed: equal for two replays of one seed.
    pub fingerprint: u64,
    pub trace: Vec<String>,
}

/// A schedule that broke an invariant: the seed replays it.
#[derive(Clone, Debug)]
pub struct Failure {
    pub seed: u64,
    pub violations: Vec<String>,
    pub trace: Vec<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "seed {} broke {} invariant(s):",
            self.seed,
            self.violations.len()
        )?;
        for v in &self.violations {
            writeln!(f, "  - {v}")?;
        }
        write!(f, "replay: make sim SEED={}", self.seed)
    }
}

/// The shared state of one schedule: its randomness, clock, trace and what the model saw.
pub struct Sim {
    rng: Mutex<Rng>,
    clock: Arc<ManualClock>,
    chaos: AtomicBool,
    depth: AtomicU32,
    /// Worker identities handed out: each delivery is stepped by a fresh owner.
    workers: AtomicU32,
    trace: Mutex<Vec<String>>,
    ledger: Mutex<Ledger>,
    /// The store without faults: what the checks and the model's cancel check read.
    inner: Arc<InMemoryRunStore>,
    /// Set while the schedule runs; cleared after, to break the cycle through the model.
    platform: Mutex<Option<Platform>>,
    /// The retention policy's age (ms after a run's end); the seed picks it.
    retention_ms: i64,
    /// Runs the retention policy deleted: their children and parents may name them.
    deleted: Mutex<BTreeSet<String>>,
    /// The webhook outbox, likewise.
    outbox: Mutex<Option<Arc<Outbox>>>,
    /// What the simulated webhook receivers got.
    received: Mutex<hooks::Received>,
    /// The outbox passes under way, innermost last: a receiver signals the innermost when its
    /// process dies mid-attempt, which ends that pass (see `hooks::pass`).
    passes: Mutex<Vec<Arc<tokio::sync::Notify>>>,
}

#[derive(Default)]
struct Ledger {
    spent: BTreeMap<String, Spent>,
    violations: Vec<String>,
    faults: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Sim {
    fn new(seed: u64) -> Sim {
        secrets::register();
        let mut rng = Rng::new(seed);
        let retention_ms = rng.range(5, 120) as i64 * 1_000;
        Sim {
            rng: Mutex::new(rng),
            clock: Arc::new(ManualClock::new(1_700_000_000_000)),
            chaos: AtomicBool::new(true),
            depth: AtomicU32::new(0),
            workers: AtomicU32::new(0),
            trace: Mutex::new(vec![]),
            ledger: Mutex::new(Ledger::default()),
            inner: Arc::new(InMemoryRunStore::new()),
            platform: Mutex::new(None),
            retention_ms,
            deleted: Mutex::default(),
            outbox: Mutex::new(None),
            received: Mutex::default(),
            passes: Mutex::default(),
        }
    }

    /// A fault with this chance, only while faults are on.
    fn roll(&self, per_mille: u64) -> bool {
        if !self.chaos.load(Ordering::SeqCst) {
            return false;
        }
        let hit = lock(&self.rng).chance(per_mille);
        if hit {
            lock(&self.ledger).faults += 1;
        }
        hit
    }

    fn chance(&self, per_mille: u64) -> bool {
        lock(&self.rng).chance(per_mille)
    }

    fn range(&self, lo: u64, hi: u64) -> u64 {
        lock(&self.rng).range(lo, hi)
    }

    fn below(&self, n: u64) -> u64 {
        lock(&self.rng).below(n)
    }

    fn note(&self, line: String) {
        lock(&self.trace).push(format!("{} {line}", self.clock_s()));
    }

    fn clock_s(&self) -> String {
        use longrun_ports::Clock;
        format!(
            "t+{:.1}s",
            (self.clock.now_ms() - 1_700_000_000_000) as f64 / 1000.0
        )
    }

    fn violation(&self, v: String) {
        self.note(format!("VIOLATION {v}"));
        lock(&self.ledger).violations.push(v);
    }

    fn spent(&self, run_id: &str, tokens: u64, cost_usd: f64) {
        let mut l = lock(&self.ledger);
        let s = l.spent.entry(run_id.to_string()).or_default();
        s.calls += 1;
        s.tokens += tokens;
        s.cost_usd += cost_usd;
        s.max_call = s.max_call.max(tokens);
    }

    fn platform(&self) -> Option<Platform> {
        lock(&self.platform).clone()
    }

    fn outbox(&self) -> Option<Arc<Outbox>> {
        lock(&self.outbox).clone()
    }
}

/// How a batch of schedules is run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Actor steps with faults on; then faults stop and the liveness phase begins.
    pub fault_steps: u32,
    /// Steps the liveness phase may take before a run still in flight is a violation.
    pub settle_steps: u32,
    /// Outbox passes after that before a pending webhook delivery is a violation.
    pub drain_steps: u32,
    pub users: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fault_steps: 120,
            settle_steps: 2_000,
            drain_steps: 200,
            users: 3,
        }
    }
}

/// Runs the schedule of `seed` and checks every invariant.
pub fn run_seed(seed: u64, options: &Options) -> Result<Summary, Failure> {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return Err(Failure {
                seed,
                violations: vec![format!("cannot start a runtime: {e}")],
                trace: vec![],
            });
        }
    };
    // On a thread of its own with a deep stack: a model call in the simulator may carry another
    // worker's whole step inside it (a takeover while it is in flight), nested several deep,
    // and unoptimised builds keep every frame of that on the stack.
    let options = options.clone();
    let ran = std::thread::Builder::new()
        .name(format!("sim-{seed}"))
        .stack_size(SIM_STACK_BYTES)
        .spawn(move || rt.block_on(world::run(seed, &options)));
    match ran.map(|h| h.join()) {
        Ok(Ok(result)) => result,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(e) => Err(Failure {
            seed,
            violations: vec![format!("cannot start the simulation's thread: {e}")],
            trace: vec![],
        }),
    }
}

/// The simulation thread's stack.
const SIM_STACK_BYTES: usize = 64 << 20;
