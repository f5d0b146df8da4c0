//! `longrun-sim`: runs seeded schedules and checks the invariants after each.
//!
//! ```text
//! longrun-sim [--seeds N] [--from S]      N schedules from seed S (default 1000 from 1)
//! longrun-sim --seed S                    one schedule, with its trace
//! longrun-sim --seeds N --expect-failure  succeed only if some schedule breaks an invariant
//! ```

use std::process::ExitCode;
use std::time::Instant;

use longrun_sim::{Options, run_seed};

struct Args {
    seeds: u64,
    from: u64,
    one: Option<u64>,
    expect_failure: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        seeds: 1_000,
        from: 1,
        one: None,
        expect_failure: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| -> Result<u64, String> {
            let v = it.next().ok_or(format!("{name} needs a number"))?;
            v.parse()
                .map_err(|_| format!("{name}: `{v}` is not a number"))
        };
        match flag.as_str() {
            "--seeds" => a.seeds = value("--seeds")?,
            "--from" => a.from = value("--from")?,
            "--seed" => a.one = Some(value("--seed")?),
            "--expect-failure" => a.expect_failure = true,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(a)
}

#[allow(clippy::print_stdout, clippy::print_stderr)]
fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let options = Options::default();
    if let Some(seed) = args.one {
        return match run_seed(seed, &options) {
            Ok(s) => {
                for line in &s.trace {
                    println!("{line}");
                }
                println!(
                    "seed {seed}: every invariant held ({} runs, {} iterations, {} model calls, {} faults, {} webhook deliveries, {} given up)",
                    s.runs, s.iterations, s.model_calls, s.faults, s.deliveries, s.given_up
                );
                ExitCode::SUCCESS
            }
            Err(f) => {
                for line in &f.trace {
                    println!("{line}");
                }
                eprintln!("{f}");
                ExitCode::FAILURE
            }
        };
    }
    let started = Instant::now();
    let (mut runs, mut iterations, mut calls, mut faults) = (0, 0, 0, 0);
    let (mut deliveries, mut given_up) = (0, 0);
    for seed in args.from..args.from + args.seeds {
        match run_seed(seed, &options) {
            Ok(s) => {
                runs += s.runs;
                iterations += s.iterations;
                calls += s.model_calls;
                faults += s.faults;
                deliveries += s.deliveries;
                given_up += s.given_up;
            }
            Err(f) if args.expect_failure => {
                println!("as expected, the simulator caught it:\n{f}");
                return ExitCode::SUCCESS;
            }
            Err(f) => {
                eprintln!("{f}");
                return ExitCode::FAILURE;
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    if args.expect_failure {
        eprintln!(
            "error: {} schedules ran and none broke an invariant",
            args.seeds
        );
        return ExitCode::FAILURE;
    }
    println!(
        "{} schedules ran in {secs:.1} s ({:.0} schedules/s): {runs} runs, {iterations} iterations, {calls} model calls, {faults} faults injected, {deliveries} webhook deliveries ({given_up} given up); every invariant held",
        args.seeds,
        args.seeds as f64 / secs.max(1e-9)
    );
    ExitCode::SUCCESS
}
