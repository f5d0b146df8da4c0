// Checks one scripts/agent-clis case against what the fake model server saw and billed: prints
// one line with the numbers, or the evidence and exits 1.
//   node check.mjs resume AGENT PORT TASK_DIR      a task whose first process ended before DONE
//   node check.mjs limit  AGENT PORT TASK_DIR      a task whose first request got a 429
//   node check.mjs api    AGENT PORT RUN_JSON PROJECTS_ROOT   an API run (scenario:resume)
import fs from "node:fs";
import path from "node:path";

const [mode, agent, port, target, projectsRoot] = process.argv.slice(2);
const problems = [];
const must = (ok, what) => { if (!ok) problems.push(what); return ok; };

// run-info.yaml: flat `key: <JSON value>` lines.
function runInfo(dir) {
  const info = { dir };
  for (const line of fs.readFileSync(path.join(dir, "run-info.yaml"), "utf8").split("\n")) {
    const i = line.indexOf(": ");
    if (i < 0) continue;
    const v = line.slice(i + 2);
    try { info[line.slice(0, i)] = JSON.parse(v); } catch { info[line.slice(0, i)] = v; }
  }
  return info;
}

function rootRuns(taskDir) {
  const runs = path.join(taskDir, "runs");
  if (!fs.existsSync(runs)) return [];
  return fs.readdirSync(runs).sort()
    .filter((d) => fs.existsSync(path.join(runs, d, "run-info.yaml")))
    .map((d) => runInfo(path.join(runs, d)))
    .filter((i) => !i.parent_run_id);
}

const read = (f) => { try { return fs.readFileSync(f, "utf8"); } catch { return ""; } };
const events = (f) => read(f).split("\n").flatMap((l) => { try { const e = JSON.parse(l); return e && typeof e === "object" ? [e] : []; } catch { return []; } });
// Claude's `total_cost_usd`: the running total of its session.
const reportedCost = (run) => events(run.stdout_path).filter((e) => e.type === "result").map((e) => e.total_cost_usd).pop();

const booked = (runs) => runs.reduce((s, r) => {
  const u = r.usage || {};
  s.input += u.input_tokens || 0; s.cached += u.cached_input_tokens || 0; s.output += u.output_tokens || 0;
  if (typeof u.cost_usd === "number") s.cost += u.cost_usd;
  return s;
}, { input: 0, cached: 0, output: 0, cost: 0 });

const fmt = (t) => `in ${t.input} (cached ${t.cached}), out ${t.output}`;
const resumeFlag = { claude: (s) => `--resume ${s}`, codex: (s) => `resume ${s}`, gemini: (s) => `--resume ${s}` }[agent];

const get = async (p) => (await fetch(`http://127.0.0.1:${port}${p}`)).json();
const ledgerAll = await get("/ledger");
const log = await get("/log");

function compareTokens(folder, got, label) {
  const billed = ledgerAll[folder] || { input: 0, cached: 0, output: 0, requests: 0 };
  const same = billed.input === got.input && billed.cached === got.cached && billed.output === got.output;
  must(same, `${label} ${fmt(got)} differs from the fake server's ledger ${fmt(billed)} (${JSON.stringify(billed.wire)})`);
  must(billed.input > 0, `the fake server billed nothing for ${folder}`);
  return `ledger ${fmt(billed)} over ${billed.requests} request(s) = ${label} ${fmt(got)}`;
}

// Claude's cost per process is the growth of its session's running total: the last total, not
// the sum of the totals.
function checkCost(runs, totalBooked) {
  if (agent !== "claude") return "";
  const reported = runs.map(reportedCost);
  let before = 0;
  runs.forEach((r, i) => {
    const want = (reported[i] ?? before) - before;
    must(Math.abs((r.usage?.cost_usd ?? 0) - want) < 1e-9, `run ${r.run_id} booked $${r.usage?.cost_usd} but its session total grew by $${want} (${before} → ${reported[i]})`);
    before = reported[i] ?? before;
  });
  const summed = reported.reduce((a, b) => a + (b || 0), 0);
  must(Math.abs(totalBooked - before) < 1e-9, `booked $${totalBooked} in all, the session's total is $${before}`);
  return `; cost: session totals $${reported.map((c) => c?.toFixed(6)).join(" → $")}, booked $${runs.map((r) => (r.usage?.cost_usd ?? 0).toFixed(6)).join(" + $")} = $${totalBooked.toFixed(6)} (summing the totals would give $${summed.toFixed(6)})`;
}

// The resumed session: the second process resumed the first's session with the CLI's flag, and
// its requests carried the first session's answer.
function checkResume(runs, folder) {
  if (!must(runs.length === 2, `${runs.length} process(es), expected 2 (the first ends without DONE, the second resumes)`)) return "";
  const [first, second] = runs;
  must(first.session_id, `the first process reported no session (${first.dir})`);
  must(second.resumed_session === first.session_id, `the second process resumed ${JSON.stringify(second.resumed_session)}, not the first's session ${first.session_id}`);
  must(String(second.commandline).includes(resumeFlag(first.session_id)), `the second command line lacks "${resumeFlag(first.session_id)}": ${second.commandline}`);
  const mine = log.filter((e) => e.folder === folder && e.answer && e.answer !== "side");
  const firstAnswer = mine.findIndex((e) => e.answer === "first");
  must(firstAnswer >= 0, "the fake server never gave the first session's answer");
  const later = mine.slice(firstAnswer + 1);
  must(later.length > 0 && later.every((e) => e.carried), `a request after the first session did not carry its answer: ${JSON.stringify(later)}`);
  return `2 processes; the 2nd ran \`${resumeFlag(first.session_id.slice(0, 8) + "…")}\` and its ${later.length} request(s) carried the 1st session's answer (${later.map((e) => e.messages).join(", ")} messages)`;
}

let line = "";
if (mode === "resume") {
  const runs = rootRuns(target);
  must(fs.existsSync(path.join(target, "DONE")), "no DONE in the task folder");
  const resumed = checkResume(runs, target);
  const got = booked(runs);
  line = `${resumed}; ${compareTokens(target, got, "booked")}${checkCost(runs, got.cost)}`;
} else if (mode === "limit") {
  const runs = rootRuns(target);
  const bus = read(path.join(target, "TASK-MESSAGE-BUS.md"));
  const billed = ledgerAll[target] || {};
  must(fs.existsSync(path.join(target, "DONE")), "no DONE in the task folder");
  must(billed.refused > 0, "the fake server refused no request");
  const mine = log.filter((e) => e.folder === target);
  const firstOk = mine.find((e) => e.status === 200);
  must(firstOk && Date.parse(firstOk.at) / 1000 >= billed.reset_at, `a request was answered before the reset (${firstOk?.at} < ${billed.reset_at})`);
  must(!/restarting the root agent/.test(bus), "a restart was counted: the bus says \"restarting the root agent\"");
  must(/task complete: DONE after 1 run\(s\)/.test(bus), "the bus lacks \"task complete: DONE after 1 run(s)\"");
  const limited = runs.slice(0, -1);
  let how;
  if (runs.length === 1) {
    const evidence = agent === "claude"
      ? events(runs[0].stdout_path).filter((e) => e.subtype === "api_retry").map((e) => `api_retry ${e.error_status} after ${e.retry_delay_ms} ms`)
      : read(runs[0].stderr_path).split("\n").filter((l) => /retry/i.test(l)).map((l) => l.trim());
    how = `the CLI retried its ${billed.refused} 429(s) itself and finished in one process (${evidence.join("; ") || "no retry message"})`;
  } else {
    const waits = [...bus.matchAll(/usage limit reached on \S+; waiting (\d+)s for the reset/g)].map((m) => Number(m[1]));
    must(waits.length === limited.length, `${limited.length} limited process(es) but ${waits.length} wait(s) on the bus`);
    for (const r of limited) {
      must(!r.usage, `the limited process ${r.run_id} booked spend: ${JSON.stringify(r.usage)}`);
      must(r.usage_limit_resets_at >= billed.reset_at && r.usage_limit_resets_at - billed.reset_at <= 61, `the limited process ${r.run_id} read the reset as ${r.usage_limit_resets_at}, the server's is ${billed.reset_at}`);
    }
    const said = events(limited[0].stdout_path).find((e) => e.type === "error" || e.type === "turn.failed" || e.is_error);
    how = `the CLI gave up (${JSON.stringify(said?.message ?? said?.error?.message ?? said?.result ?? "").slice(0, 90)}…); longrun read the reset as ${limited.map((r) => new Date(r.usage_limit_resets_at * 1000).toISOString().slice(11, 19)).join(", ")} (server's ${new Date(billed.reset_at * 1000).toISOString().slice(11, 19)}), waited ${waits.join("s, ")}s (bus) and continued with no restart counted; the limited process booked nothing`;
  }
  line = `${how}; ${compareTokens(target, booked(runs), "booked")}`;
} else if (mode === "api") {
  let r = {};
  try { r = JSON.parse(read(target)); } catch { problems.push(`no run JSON in ${target}`); }
  const m = r.metrics || {};
  must(r.status === "completed", `the run is ${r.status}`);
  const id = r.id ?? r.run_id;
  const infos = [];
  const walk = (d) => { for (const e of fs.readdirSync(d, { withFileTypes: true })) { const p = path.join(d, e.name); if (e.isDirectory()) walk(p); else if (e.name === "run-info.yaml") infos.push(runInfo(d)); } };
  if (fs.existsSync(projectsRoot)) walk(projectsRoot);
  const runs = infos.filter((i) => i.longrun_run_id === id && !i.parent_run_id).sort((a, b) => (a.run_id < b.run_id ? -1 : 1));
  if (!must(runs.length > 0, `no agent process recorded for run ${id}`)) { line = ""; }
  else {
    const folder = runs[0].task_dir;
    const resumed = checkResume(runs, folder);
    // The run's report leaves out the cached tokens: those are the processes' run-info's.
    const got = { input: m.input_tokens, cached: m.cached_tokens ?? booked(runs).cached, output: m.output_tokens };
    const billed = ledgerAll[folder] || {};
    must(m.tokens === billed.input + billed.output, `metrics.tokens ${m.tokens} differs from the ledger's ${billed.input + billed.output}`);
    line = `${r.status} in ${m.iterations} iteration(s); ${resumed}; ${compareTokens(folder, got, `metrics (tokens ${m.tokens})`)}${checkCost(runs, m.cost_usd)}`;
  }
} else {
  problems.push(`unknown mode ${mode}`);
}
if (problems.length) {
  console.error(`agent-clis: ${agent} ${mode} FAILED:\n  - ${problems.join("\n  - ")}`);
  process.exit(1);
}
console.log(`agent-clis: ${agent} ${mode}: ${line}`);
