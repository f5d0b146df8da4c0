//! The run cache of `SqliteRunStore`: each run as last written or read through the store, with
//! its newest scratchpad entries once read.

use super::*;

#[derive(Default)]
pub(super) struct RunCache {
    pub(super) generation: u64,
    /// Each run with the tick it was last written or read at, and the group it was written in
    /// (it is committed once that group is).
    pub(super) map: HashMap<String, Cached>,
    tick: u64,
}

/// Room for every run in flight (at most `max_inflight`, 4,096 by default) and those queued
/// behind them at 10,000 runs: a run that falls out is parsed again on its next write, under the
/// connection lock, and a read of it waits for that lock.
const RUN_CACHE_MAX: usize = 16_384;

pub(super) struct Cached {
    pub(super) run: Arc<Run>,
    used: u64,
    pub(super) group: u64,
    /// Its newest scratchpad entries, once read (`None` until then, or after the run ends).
    pads: Option<PadTail>,
}

/// How many of a run's newest scratchpad entries the cache keeps: the planner's prompt reads
/// the last few every iteration, and reading them was a query and a parse per entry.
pub(super) const PAD_TAIL: usize = 4;

/// A run's newest scratchpad entries, oldest first, as written through this store.
#[derive(Clone, Debug)]
pub(super) struct PadTail {
    entries: std::collections::VecDeque<PadEntry>,
    /// The run has no entries but these (it has fewer than `PAD_TAIL`).
    whole: bool,
}

impl PadTail {
    /// The tail as read from the database with `limit` (newest first, as `LAST_PADS` reads).
    pub(super) fn read(newest_first: &[PadEntry], limit: usize) -> PadTail {
        PadTail {
            entries: newest_first.iter().take(PAD_TAIL).rev().cloned().collect(),
            whole: newest_first.len() < limit && newest_first.len() <= PAD_TAIL,
        }
    }

    /// The last `n` entries, oldest first, if the tail holds them all.
    fn last(&self, n: usize) -> Option<Vec<PadEntry>> {
        if n > self.entries.len() && !self.whole {
            return None;
        }
        let skip = self.entries.len().saturating_sub(n);
        Some(self.entries.iter().skip(skip).cloned().collect())
    }

    /// `None` when `pad` is not the newest entry (then the tail cannot tell what is).
    fn push(mut self, pad: PadEntry) -> Option<PadTail> {
        if self.entries.back().is_some_and(|last| last.n >= pad.n) {
            return None;
        }
        self.entries.push_back(pad);
        if self.entries.len() > PAD_TAIL {
            self.entries.pop_front();
            self.whole = false;
        }
        Some(self)
    }
}

impl RunCache {
    pub(super) fn get(&mut self, run_id: &str) -> Option<Arc<Run>> {
        self.tick += 1;
        let tick = self.tick;
        self.map.get_mut(run_id).map(|c| {
            c.used = tick;
            c.run.clone()
        })
    }

    /// The cached run if the group it was written in is committed (`committed` or older).
    pub(super) fn get_committed(&mut self, run_id: &str, committed: u64) -> Option<Arc<Run>> {
        let group = self.map.get(run_id)?.group;
        (group <= committed).then(|| self.get(run_id)).flatten()
    }

    /// A run as read from the database: what the cache knew of its scratchpad goes.
    pub(super) fn insert(&mut self, run: Arc<Run>, group: u64) {
        self.put(run, group, None);
    }

    /// A run as just written, with the scratchpad entry the write added: the tail known so
    /// far is kept, with the entry on it. An ended run's tail goes (no iteration reads it).
    pub(super) fn wrote(&mut self, run: Arc<Run>, group: u64, pad: Option<PadEntry>) {
        if run.status.is_ended() && run.notified {
            // Done with: no iteration will write it again, and a read finds it on a reader
            // (the write is in the open group, which a writer's read sees). Kept, ended runs
            // filled the cache to its bound, the largest part of `serve`'s memory after a
            // day's runs (BENCHMARKS.md, "Soak").
            self.map.remove(&run.id);
            return;
        }
        let tail = self.map.get_mut(&run.id).and_then(|c| c.pads.take());
        let tail = match pad {
            Some(pad) => tail.and_then(|t| t.push(pad)),
            None => tail,
        };
        let tail = tail.filter(|_| !run.status.is_ended());
        self.put(run, group, tail);
    }

    fn put(&mut self, run: Arc<Run>, group: u64, pads: Option<PadTail>) {
        if self.map.len() >= RUN_CACHE_MAX && !self.map.contains_key(&run.id) {
            self.evict();
        }
        self.tick += 1;
        let used = self.tick;
        self.map.insert(
            run.id.clone(),
            Cached {
                run,
                used,
                group,
                pads,
            },
        );
    }

    pub(super) fn pads(&self, run_id: &str, last: usize) -> Option<Vec<PadEntry>> {
        self.map.get(run_id)?.pads.as_ref()?.last(last)
    }

    /// Keeps a tail read from the database, unless the run was written (or dropped) since
    /// `seen` was its cached copy: then the read may be missing the write's entry.
    pub(super) fn keep_pads(&mut self, run_id: &str, seen: &Arc<Run>, tail: PadTail) {
        if let Some(c) = self.map.get_mut(run_id)
            && Arc::ptr_eq(&c.run, seen)
            && !c.run.status.is_ended()
        {
            c.pads = Some(tail);
        }
    }

    /// Drops the ended runs and the least recently used half of the rest: the runs at work
    /// stay, so a full cache does not make every run in flight a miss at once.
    fn evict(&mut self) {
        self.map.retain(|_, c| !c.run.status.is_ended());
        if self.map.len() < RUN_CACHE_MAX * 3 / 4 {
            return;
        }
        let mut ticks: Vec<u64> = self.map.values().map(|c| c.used).collect();
        let mid = ticks.len() / 2;
        let (_, median, _) = ticks.select_nth_unstable(mid);
        let median = *median;
        self.map.retain(|_, c| c.used > median);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn run(id: &str, status: RunStatus) -> Arc<Run> {
        let mut run = longrun_domain::testing::sample_run();
        run.id = id.to_string();
        run.transition_to(RunStatus::Running, 0).unwrap();
        if status != RunStatus::Running {
            run.transition_to(status, 0).unwrap();
        }
        Arc::new(run)
    }

    #[test]
    fn a_full_run_cache_keeps_the_runs_at_work_and_lets_ended_and_idle_ones_go() {
        // Arrange: a full cache of running runs, a few of them ended, the first ones idle.
        let mut cache = RunCache::default();
        for i in 0..RUN_CACHE_MAX {
            let status = if i % 100 == 99 {
                RunStatus::Completed
            } else {
                RunStatus::Running
            };
            cache.insert(run(&format!("r{i}"), status), 1);
        }
        let busy = format!("r{}", 10);
        assert!(cache.get(&busy).is_some());

        // Act
        cache.insert(run("new", RunStatus::Running), 1);

        // Assert
        assert!(cache.get("new").is_some(), "the new run is kept");
        assert!(cache.get(&busy).is_some(), "a run just used is kept");
        assert!(cache.get("r99").is_none(), "ended runs go first");
        assert!(
            cache.get("r11").is_none(),
            "the least recently used go next"
        );
        let last = format!("r{}", RUN_CACHE_MAX - 2);
        assert!(cache.get(&last).is_some(), "recently written runs stay");
        assert!(cache.map.len() < RUN_CACHE_MAX, "room is made");
    }

    #[test]
    fn a_kept_scratchpad_tail_answers_only_for_what_it_holds() {
        // Arrange: a run with two entries in all, and one with many (the newest four kept).
        let newest_first = |ns: &[u32]| -> Vec<PadEntry> {
            ns.iter()
                .map(|n| longrun_domain::testing::sample_pad(*n))
                .collect()
        };
        let numbers =
            |pads: Option<Vec<PadEntry>>| pads.map(|p| p.iter().map(|e| e.n).collect::<Vec<_>>());
        let short = PadTail::read(&newest_first(&[2, 1]), PAD_TAIL);
        let long = PadTail::read(&newest_first(&[9, 8, 7, 6]), PAD_TAIL);

        // Act
        let short_pushed = short.clone().push(longrun_domain::testing::sample_pad(3));
        let long_pushed = long.clone().push(longrun_domain::testing::sample_pad(10));
        let out_of_order = long.clone().push(longrun_domain::testing::sample_pad(8));

        // Assert
        assert_eq!(
            numbers(short.last(10)),
            Some(vec![1, 2]),
            "every entry the run has"
        );
        assert_eq!(numbers(long.last(3)), Some(vec![7, 8, 9]));
        assert_eq!(
            numbers(long.last(5)),
            None,
            "older entries are only in the database"
        );
        assert_eq!(
            numbers(short_pushed.and_then(|t| t.last(10))),
            Some(vec![1, 2, 3])
        );
        let long_pushed = long_pushed.unwrap();
        assert_eq!(numbers(long_pushed.last(4)), Some(vec![7, 8, 9, 10]));
        assert_eq!(numbers(long_pushed.last(5)), None);
        assert!(
            out_of_order.is_none(),
            "a tail that cannot tell the newest is dropped"
        );
    }
}
