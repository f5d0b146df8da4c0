# The two commands a new user needs: `make demo` and `make test`.
CARGO ?= cargo

.PHONY: soak demo test test-dynamodb-local agent-clis lint web bench bench-runner bench-store bench-aws bench-llm bench-lambda capacity serve build synth package sim sim-broken

## A real multi-iteration run on the embedded platform: no cloud account, no API key.
demo:
	@echo "make demo: building longrun first (the first build compiles for a few minutes; cargo shows its progress)"
	$(CARGO) run -p longrun -- demo

## Every test: unit, port conformance suites (SQLite, memory, and DynamoDB/SQS/SNS on the moto
## emulator, which scripts/with-moto installs into .venv and runs on a free loopback port),
## crash/redelivery, API, CLI (including `kill -9` of `longrun serve` under load), Lambda handlers
## (again with DynamoDB on DynamoDB Local), the simulator, the MCP server under the official MCP
## TypeScript SDK client, the OpenAPI document under Redocly's recommended rules, the Python
## client (in sync with the document; installed into a fresh venv outside the repository and
## run against `longrun serve`, sync and async), the API fuzzed from its own OpenAPI document
## (schemathesis, every check, 0 failures allowed), provider wire tests, and a run against a real
## model (SmolLM2-135M on llama.cpp's OpenAI-compatible server, which scripts/with-llm builds
## once into .venv-llm and serves on loopback); then the infrastructure,
## offline: CDK assertions and cdk-nag, cfn-lint and checkov on the synthesized template,
## terraform fmt and checkov on the Terraform module (scripts/infra installs what it needs).
## The web console is built first so the binary under test embeds it, and driven last in
## headless Chromium against `longrun serve` (scripts/web installs Debian's chromium if absent).
test:
	scripts/web build
	scripts/with-llm scripts/with-moto $(CARGO) test --workspace --all-targets
	$(MAKE) test-dynamodb-local
	$(MAKE) sim-broken
	scripts/node-tests
	scripts/python-client test
	scripts/readme-examples
	scripts/schemathesis
	scripts/web test
	scripts/infra check

## The DynamoDB conformance suites (store, outbox) and the Lambda handlers again, with DynamoDB on AWS's own
## emulator (DynamoDB Local, stricter than moto about transactions and item sizes) and
## SQS/SNS still on moto.
test-dynamodb-local:
	scripts/with-moto scripts/with-dynamodb-local sh -c '$(CARGO) test -q -p longrun-tests --test store_conformance dynamodb && $(CARGO) test -q -p longrun-tests --test outbox_conformance dynamodb && $(CARGO) test -q -p longrun-tests --test aws_lambda'

## The real coding-agent CLIs (Claude Code, Codex, Gemini CLI; ~0.9 GB from npm on first use)
## each completing one `longrun task` against fake model servers on loopback.
agent-clis:
	$(CARGO) build -q -p longrun
	scripts/agent-clis

## The black-box soak: 3,000 scripted runs through 110 `kill -9` and 35 SIGTERM of `serve`, with
## failing webhook receivers, every run then checked through the API; then serve's RSS across
## 20,000 ended runs (about 15 minutes; numbers go in BENCHMARKS.md, "Soak").
soak:
	$(CARGO) build -q -p longrun -p longrun-tests --bin longrun --bin soak
	target/debug/soak target/debug/longrun 3000 110 35 20000

## The deterministic simulator (sim/): SEEDS seeded fault schedules from seed FROM, every
## invariant checked after each (`make sim SEEDS=100000` is a soak); `make sim SEED=n` replays
## one schedule with its trace.
SEEDS ?= 10000
FROM ?= 1
sim:
ifdef SEED
	$(CARGO) run --quiet --release -p longrun-sim -- --seed $(SEED)
else
	$(CARGO) run --quiet --release -p longrun-sim -- --seeds $(SEEDS) --from $(FROM)
endif

## Proof the simulator can fail: a build with the commit's claim fence removed must be caught.
sim-broken:
	$(CARGO) run --quiet -p longrun-sim --features unfenced -- --seeds 2000 --expect-failure

## Formatting and lints, as CI runs them.
lint:
	scripts/check-crates
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## The web console (web/dist), embedded by the next cargo build of `longrun`.
web:
	scripts/web build

## Throughput, memory and per-iteration cost, then capacity at model latency (thousands of runs
## in flight, fair share, a model limit); writes BENCHMARKS.md.
bench:
	$(CARGO) run --release -p longrun-tests --bin bench -- BENCHMARKS.md
	$(CARGO) run --release -p longrun-tests --bin bench_capacity -- BENCHMARKS.md

## The API on an empty store and on one filled with a year of ended runs (100,000), start-up
## recovery, bytes per iteration; updates BENCHMARKS.md.
bench-store:
	$(CARGO) run --release -p longrun-tests --bin bench_store -- BENCHMARKS.md 100000

## AWS requests, capacity units and cost per iteration on the emulator; updates BENCHMARKS.md.
bench-aws:
	scripts/with-moto $(CARGO) run -p longrun-tests --bin bench_aws -- BENCHMARKS.md

## Where AWS's quotas bind at 1k / 10k / 100k runs, from bench-aws's request counts; updates BENCHMARKS.md.
capacity:
	$(CARGO) run -p longrun-tests --bin capacity -- BENCHMARKS.md

## The model client's own overhead against a real model server's latency, then what prompt caching
## saves over a 30-iteration run (canned Anthropic- and OpenAI-shaped servers); updates BENCHMARKS.md.
bench-llm:
	scripts/with-llm $(CARGO) run --release -p longrun-tests --bin bench_llm -- BENCHMARKS.md
	$(CARGO) run -p longrun-tests --bin bench_cache -- BENCHMARKS.md

## The runner's own cost per restart and 100 tasks at once, each side by side with a shell
## `while` loop over the same fake agent; updates BENCHMARKS.md. The dev build (dependencies
## optimised): the runner's cost is processes and files, not compute.
bench-runner:
	$(CARGO) build -q -p longrun
	$(CARGO) run -q -p longrun-tests --bin bench_runner -- target/debug/longrun BENCHMARKS.md

## The Lambda binaries: zipped sizes and the worker's peak RSS for one iteration (release build).
bench-lambda:
	scripts/with-moto scripts/measure-worker

## The API, worker and notifier in one process (SQLite in ./.longrun).
serve:
	scripts/web build --optional
	$(CARGO) run --quiet -p longrun -- serve

build:
	scripts/web build --optional
	$(CARGO) build --workspace --release

## The CDK stack, synthesized offline to infra/cdk.out.
synth:
	scripts/infra synth

## The four functions as Lambda zips in target/lambda/ (arm64 via cargo-lambda), each then
## answering its event from events/ under a local Lambda Runtime API.
package:
	scripts/package
