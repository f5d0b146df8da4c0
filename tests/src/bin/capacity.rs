//! `make capacity`: where AWS's quotas bind at 1k / 10k / 100k runs in flight. Computed from the
//! per-iteration request counts `make bench-aws` measured (read from BENCHMARKS.md), the model's
//! latency and calls per iteration, and the documented default quotas; writes the "Capacity
//! model" section of BENCHMARKS.md.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use longrun_tests::replace_section;

const SECTION: &str = "## Capacity model (AWS)";
const AWS_SECTION: &str = "## Serverless (AWS) cost per iteration";

/// Steps a worker invocation takes at once (the SQS event source's batch, FIFO maximum).
const BATCH: f64 = 10.0;
/// What an iteration adds to its model calls: claim, tools, commit, queue hops.
const OVERHEAD_S: f64 = 0.3;
/// The worker's memory (GB), as the stacks configure it: 256 MB, set from its measured peak
/// RSS of 31.7 MB for a full batch of 10 first iterations (`BATCH=10 make bench-lambda`; 26.6 MB
/// for one). 128 MB would hold it too, but Lambda's CPU share scales with memory and a batch's
/// JSON and TLS work would run at a fourteenth of a core.
const WORKER_GB: f64 = 0.25;

/// Default quotas (per Region and account unless said), from AWS's service quota pages; all but
/// the per-partition ones can be raised.
const LAMBDA_CONCURRENCY: f64 = 1_000.0;
/// SQS FIFO high-throughput mode, per API action per queue (us-east-1, us-west-2, eu-west-1;
/// other Regions have lower ceilings).
const SQS_FIFO_HT_TPS: f64 = 70_000.0;
/// DynamoDB on-demand: the table's default maximum throughput.
const DDB_TABLE_WRU: f64 = 40_000.0;
const DDB_TABLE_RRU: f64 = 40_000.0;
/// SNS Publish (us-east-1; 9,000 in most other Regions).
const SNS_PUBLISH_TPS: f64 = 30_000.0;

/// us-east-1 list prices, USD.
const LAMBDA_GB_S: f64 = 0.000_013_333_4; // arm64
const LAMBDA_REQUEST: f64 = 0.20 / 1e6;
const SQS_FIFO_REQUEST: f64 = 0.50 / 1e6;
const DDB_WRU: f64 = 0.625 / 1e6;
const DDB_RRU: f64 = 0.125 / 1e6;
const SNS_PUBLISH: f64 = 0.50 / 1e6;

/// DynamoDB Standard table storage, USD per GB-month (us-east-1; the first 25 GB are free).
const DDB_GB_MONTH: f64 = 0.25;
/// What an iteration leaves on the table: its log item and its doc, each under 1 KB as `make
/// bench-aws` measured them (its closing note), with DynamoDB's 100 bytes of per-item overhead
/// each: an upper bound. The run item (one per run) is left out.
const STORED_BYTES_PER_ITERATION: f64 = 2.0 * (1024.0 + 100.0);

/// GB on the table, and USD per month for them, when `its` iterations a second are kept `days`.
fn storage(its: f64, days: f64) -> (f64, f64) {
    let gb = its * days * 86_400.0 * STORED_BYTES_PER_ITERATION / 1e9;
    (gb, gb * DDB_GB_MONTH)
}

/// The retention policy's effect on storage at 1k / 10k / 100k runs (20 s a call, one call per
/// iteration): the table holds what the policy keeps, or grows by a month's iterations a month.
fn storage_section(per: &PerIteration) -> String {
    let mut rows = String::new();
    for runs in [1_000.0, 10_000.0, 100_000.0] {
        let load = Load {
            runs,
            latency_s: 20.0,
            calls: 1.0,
        };
        let its = model(&load, per).iterations_per_s;
        let cell = |days: f64| {
            let (gb, usd) = storage(its, days);
            format!("{gb:.0} GB, ${usd:.0}")
        };
        rows.push_str(&format!(
            "| {runs:.0} | {:.2} M | {} | {} | {} |\n",
            its * 86_400.0 / 1e6,
            cell(30.0),
            cell(90.0),
            cell(365.0),
        ));
    }
    format!(
        "### Storage with a retention policy\n\n\
         At 20 s a call, one call an iteration, every run kept in flight: the table's storage and its\n\
         monthly cost (${DDB_GB_MONTH}/GB-month) once a `LONGRUN_RETENTION_DAYS` policy holds it steady,\n\
         and without a policy after a year (it keeps growing by the 30-day figure each month).\n\
         {STORED_BYTES_PER_ITERATION:.0} bytes an iteration: its log item and doc, each under 1 KB\n\
         (above), with DynamoDB's per-item overhead; an upper bound. TTL deletes within days of\n\
         the time, so a policy keeps a few days more than it says.\n\n\
         | runs N | iterations/day | policy 30 days | policy 90 days | no policy, after a year |\n\
         |---|---|---|---|---|\n{rows}"
    )
}

/// What one iteration costs in requests, as measured by `make bench-aws`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PerIteration {
    sqs: f64,
    wru: f64,
    rru: f64,
    sns: f64,
}

impl PerIteration {
    /// Reads the AWS section of BENCHMARKS.md: SQS and SNS request rows, and the WRU / RRU
    /// figures of its cost table.
    fn from_benchmarks(md: &str) -> Option<PerIteration> {
        let aws = &md[md.find(AWS_SECTION)?..];
        let per = |prefix: &str| -> f64 {
            aws.lines()
                .filter(|l| l.starts_with(&format!("| `{prefix}")))
                .filter_map(|l| l.split('|').nth(3)?.trim().parse::<f64>().ok())
                .sum()
        };
        let units = |unit: &str| -> Option<f64> {
            aws.lines()
                .find(|l| l.contains(unit) && l.contains(" × 1,000"))?
                .split('|')
                .nth(2)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        };
        Some(PerIteration {
            sqs: per("sqs:"),
            wru: units("WRU")?,
            rru: units("RRU")?,
            sns: per("sns:"),
        })
    }
}

/// One row of the model: `runs` in flight, `latency_s` a model call, `calls` per iteration.
#[derive(Clone, Debug, PartialEq)]
struct Load {
    runs: f64,
    latency_s: f64,
    calls: f64,
}

#[derive(Clone, Debug, PartialEq)]
struct Outcome {
    iterations_per_s: f64,
    lambda_concurrency: f64,
    sqs_tps: f64,
    wru_s: f64,
    rru_s: f64,
    sns_tps: f64,
    /// The quota reached first (its share of the quota is the highest) and that share.
    binding: (&'static str, f64),
    /// Other quotas the load is also over.
    also_over: Vec<&'static str>,
    usd_per_hour: f64,
    usd_per_1k_iterations: f64,
}

fn model(load: &Load, per: &PerIteration) -> Outcome {
    let iteration_s = load.calls * load.latency_s + OVERHEAD_S;
    let its = load.runs / iteration_s;
    let concurrency = (load.runs / BATCH).ceil();
    let sqs = its * per.sqs;
    let (wru, rru, sns) = (its * per.wru, its * per.rru, its * per.sns);
    let shares = [
        (
            "Lambda concurrency (1,000)",
            concurrency / LAMBDA_CONCURRENCY,
        ),
        ("SQS FIFO high-throughput TPS", its / SQS_FIFO_HT_TPS),
        ("DynamoDB table WRU (40,000/s)", wru / DDB_TABLE_WRU),
        ("DynamoDB table RRU (40,000/s)", rru / DDB_TABLE_RRU),
        ("SNS Publish TPS", sns / SNS_PUBLISH_TPS),
    ];
    let binding = shares
        .into_iter()
        .max_by(|a, b| a.1.partial_cmp(&b.1).unwrap())
        .unwrap();
    let also_over = shares
        .into_iter()
        .filter(|(name, share)| *share > 1.0 && *name != binding.0)
        .map(|(name, _)| name)
        .collect();
    // The worker waits on the model the whole iteration: its GB-seconds are the cost that
    // grows with latency.
    let invocations_s = its / BATCH;
    let per_s = concurrency * WORKER_GB * LAMBDA_GB_S
        + invocations_s * LAMBDA_REQUEST
        + sqs * SQS_FIFO_REQUEST
        + wru * DDB_WRU
        + rru * DDB_RRU
        + sns * SNS_PUBLISH;
    Outcome {
        iterations_per_s: its,
        lambda_concurrency: concurrency,
        sqs_tps: sqs,
        wru_s: wru,
        rru_s: rru,
        sns_tps: sns,
        binding,
        also_over,
        usd_per_hour: per_s * 3_600.0,
        usd_per_1k_iterations: per_s / its * 1_000.0,
    }
}

fn advice(binding: &str, share: f64) -> &'static str {
    if share <= 1.0 {
        "within the defaults"
    } else if binding.starts_with("Lambda") {
        "raise the account's Lambda concurrency quota (and `workerMaxConcurrency`)"
    } else if binding.starts_with("SQS") {
        "shard the step queue (runs hashed over several queues)"
    } else if binding.starts_with("DynamoDB") {
        "raise the table's maximum on-demand throughput (the account quota with it)"
    } else {
        "raise the SNS publish quota"
    }
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "BENCHMARKS.md".into());
    let md = std::fs::read_to_string(&path).expect("BENCHMARKS.md");
    let per = PerIteration::from_benchmarks(&md)
        .expect("the AWS section of BENCHMARKS.md (run `make bench-aws` first)");
    let mut rows = String::new();
    for runs in [1_000.0, 10_000.0, 100_000.0] {
        for (latency_s, calls) in [(5.0, 1.0), (20.0, 1.0), (20.0, 3.0), (60.0, 1.0)] {
            let o = model(
                &Load {
                    runs,
                    latency_s,
                    calls,
                },
                &per,
            );
            rows.push_str(&format!(
                "| {runs:.0} | {latency_s:.0} s × {calls:.0} | {:.0} | {:.0} | {:.0} | {:.0} / {:.0} | {:.1} | {} at {:.0} % — {}{} | ${:.2} | ${:.3} |\n",
                o.iterations_per_s,
                o.lambda_concurrency,
                o.sqs_tps,
                o.wru_s,
                o.rru_s,
                o.sns_tps,
                o.binding.0,
                o.binding.1 * 100.0,
                advice(o.binding.0, o.binding.1),
                if o.also_over.is_empty() {
                    String::new()
                } else {
                    format!("; also over: {}", o.also_over.join(", "))
                },
                o.usd_per_hour,
                o.usd_per_1k_iterations,
            ));
        }
    }
    let section = format!(
        "{SECTION}\n\n\
         Reproduce with `make capacity` (= `cargo run -p longrun-tests --bin capacity -- BENCHMARKS.md`),\n\
         after `make bench-aws`: per iteration {:.2} SQS requests, {:.1} WRU, {:.1} RRU and {:.2} SNS\n\
         publishes, read from the section above. Each run has one iteration in flight; an iteration\n\
         takes k model calls of latency L plus {OVERHEAD_S} s; a worker invocation takes a batch of\n\
         {BATCH:.0} steps (each a different run) and lives as long as its slowest, so Lambda\n\
         concurrency ≈ N / {BATCH:.0}. Quotas are AWS's defaults (Lambda 1,000 concurrent executions;\n\
         SQS FIFO high-throughput {SQS_FIFO_HT_TPS:.0} TPS per API action in us-east-1; DynamoDB\n\
         on-demand 40,000 RRU and 40,000 WRU per table; SNS Publish {SNS_PUBLISH_TPS:.0} TPS);\n\
         prices us-east-1, the worker at {WORKER_GB} GB on arm64. The cost includes the worker's\n\
         GB-seconds spent waiting on the model, which dominate; the model's own tokens are not in it.\n\n\
         | runs N | model L × k | iterations/s | Lambda concurrency | SQS TPS | WRU/s / RRU/s | SNS TPS | binds first | per hour | per 1,000 iterations |\n\
         |---|---|---|---|---|---|---|---|---|---|\n{rows}\n\
         Lambda concurrency is what binds first: at 10,000 runs it is exactly used up, past that\n\
         raise the account quota (a soft limit) and `workerMaxConcurrency` together. With a fast\n\
         model at 100,000 runs the table's on-demand maximum (writes and reads) is over too: raise\n\
         the table's maximum throughput. The step queue in high-throughput mode stays under its\n\
         per-action rate (shard it past ~70,000 iterations/s). A run's own message group\n\
         needs one message per iteration, far below its 300 TPS. Waiting Lambdas cost more than\n\
         the requests: a longer model latency lowers the hourly bill but raises the cost per\n\
         iteration.\n\n{}",
        per.sqs,
        per.wru,
        per.rru,
        per.sns,
        storage_section(&per),
    );
    replace_section(&path, SECTION, &section);
    println!("{section}");
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEASURED: PerIteration = PerIteration {
        sqs: 3.0,
        wru: 7.3,
        rru: 3.1,
        sns: 0.02,
    };

    #[test]
    fn a_thousand_runs_fit_the_defaults_and_a_hundred_thousand_need_lambda_raised() {
        let small = model(
            &Load {
                runs: 1_000.0,
                latency_s: 20.0,
                calls: 1.0,
            },
            &MEASURED,
        );
        let big = model(
            &Load {
                runs: 100_000.0,
                latency_s: 20.0,
                calls: 1.0,
            },
            &MEASURED,
        );
        assert!(small.binding.1 <= 1.0, "{small:?}");
        assert!(big.binding.0.starts_with("Lambda"), "{big:?}");
        assert!((big.lambda_concurrency - 10_000.0).abs() < 1.0);
        assert!(big.binding.1 > 1.0);
        assert!(small.also_over.is_empty());
    }

    #[test]
    fn fast_models_move_the_bottleneck_to_the_table() {
        // At 0.1 s a call, 100k runs make ~250k iterations/s: the table binds before Lambda.
        let o = model(
            &Load {
                runs: 100_000.0,
                latency_s: 0.1,
                calls: 1.0,
            },
            &MEASURED,
        );
        assert!(o.binding.0.starts_with("DynamoDB table WRU"), "{o:?}");
        assert!(o.also_over.iter().any(|q| q.starts_with("Lambda")), "{o:?}");
        assert!((o.iterations_per_s - 250_000.0).abs() < 1.0);
    }

    #[test]
    fn a_retention_policy_holds_storage_at_its_age_and_none_grows_with_time() {
        let its = 1_000.0 / 20.3;

        let (month, usd) = storage(its, 30.0);
        let (year, _) = storage(its, 365.0);

        // ~49 iterations/s for 30 days at 2,248 bytes each: ~288 GB, ~$72 a month.
        assert!((month - 287.0).abs() < 1.0, "{month}");
        assert!((usd - month * 0.25).abs() < 1e-9);
        assert!((year / month - 365.0 / 30.0).abs() < 1e-9);
    }

    #[test]
    fn the_measured_counts_are_read_from_the_aws_section() {
        let md = format!(
            "# x\n\n{AWS_SECTION}\n\n| request | total | per iteration |\n|---|---|---|\n\
             | `sqs:ReceiveMessage` | 50 | 1.00 |\n| `sqs:SendMessage` | 50 | 1.00 |\n\
             | `sns:Publish` | 1 | 0.02 |\n\n\
             | DynamoDB writes | 7.3 WRU × 1,000 × $0.625/M | 0.00459 |\n\
             | DynamoDB reads | 3.1 RRU × 1,000 × $0.125/M | 0.00038 |\n"
        );
        assert_eq!(
            PerIteration::from_benchmarks(&md),
            Some(PerIteration {
                sqs: 2.0,
                wru: 7.3,
                rru: 3.1,
                sns: 0.02
            })
        );
    }
}
