//! The simulator as part of `make test`: thousands of seeded fault schedules over the real
//! engine and run actions, every invariant checked after each.

use longrun_sim::{Options, run_seed};

fn assert_holds(seeds: impl IntoIterator<Item = u64>) -> usize {
    let options = Options::default();
    let mut ran = 0;
    for seed in seeds {
        if let Err(f) = run_seed(seed, &options) {
            let tail: Vec<&String> = f.trace.iter().rev().take(40).rev().collect();
            panic!(
                "{f}\nlast trace lines:\n{}",
                tail.iter()
                    .map(|l| l.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        ran += 1;
    }
    ran
}

#[test]
fn two_thousand_seeded_fault_schedules_hold_every_invariant() {
    let ran = assert_holds(1..=2_000);

    assert_eq!(ran, 2_000);
}

#[test]
fn a_seed_replays_exactly_the_same_schedule() {
    let options = Options::default();

    let first = run_seed(7, &options).map_err(|f| f.to_string());
    let again = run_seed(7, &options).map_err(|f| f.to_string());
    let other = run_seed(8, &options).map_err(|f| f.to_string());

    let (first, again, other) = (
        first.unwrap_or_default(),
        again.unwrap_or_default(),
        other.unwrap_or_default(),
    );
    assert!(!first.trace.is_empty());
    assert_eq!(first.trace, again.trace);
    assert_eq!(first.fingerprint, again.fingerprint);
    assert_ne!(first.fingerprint, other.fingerprint);
}

/// Seeds that broke an invariant when the simulator first ran (each fix also has a unit test
/// in `shared/domain` or `shared/engine`):
/// - 1: a model call's spend was lost when the store failed writing it;
/// - 3: an answer to a run with no iteration left ran an empty, over-budget iteration;
/// - 29: children waking a parent with no iteration left did the same;
/// - 536: a run canceled while its wait was being announced was marked notified without its
///   cancel ever being announced.
/// - 21 (with the claim fence removed, `make sim-broken`): the store refused a double commit.
/// - 20372: a webhook attempt began after its lease ran out, so two takers attempted it.
/// - 28087: a child canceled (its parent ended) while its iteration ran, which then asked its
///   user a question, waited forever holding its slot.
/// - 321: the same, ended by going on to an iteration past the budget instead.
/// - 35233: a scheduled run whose first step failed to send left its schedule unmoved; after
///   retention deleted the run, the occurrence started again under the same id.
#[test]
fn the_seeds_that_found_bugs_now_hold() {
    // 39545: a user raised a paused child's budget past its parent's carve.
    let ran = assert_holds([1, 3, 21, 29, 321, 536, 20372, 28087, 35233, 39545]);

    assert_eq!(ran, 10);
}
