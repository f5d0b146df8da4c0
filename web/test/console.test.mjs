// Drives the console in headless Chromium against a real `longrun serve` with scripted models:
// start a run from the composer, watch it advance live, answer its question, see it complete,
// read a workspace doc with its sources and the report; open a deep link cold; cancel a second run mid-way;
// go from a parent run to its detached child and back; approve a plan; read the inbox; sign in
// with a wrong token; open an unknown run; see the API's failures as readable messages.
// Screenshots of each page land in target/console-screenshots/.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createHash } from "node:crypto";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..");
const targetDir = process.env.CARGO_TARGET_DIR ?? join(repo, "target");
const BIN = process.env.LONGRUN_BIN ?? join(targetDir, "debug", "longrun");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const SHOTS = join(targetDir, "console-screenshots");
const TOKEN = "tok-console-test";

const status = (extra) => ({
  exit_signal: false, needs_user_input: false, blocking_questions: [], progress_summary: "",
  remaining_work: [], completion_evidence: [], next_action_hint: "execute", confidence: "medium", ...extra,
});

// A "public" page the run reads (loopback, trusted by the server's fetch policy).
const SITE = "SITE_URL/teas";

// Three iterations: read a page, plan and take notes; ask which tea to start with; write the
// guide (citing the page, still in the planner's view) and finish.
const guided = {
  planner: [
    { latency_ms: 2000, usage: { input_tokens: 1500, output_tokens: 300 }, content: {
      status: status({ progress_summary: "Planned the guide and took notes.", remaining_work: ["ask the reader", "write the guide"] }),
      plan_updates: [{ id: "s1", title: "Take notes", status: "done" }, { id: "s2", title: "Write guide.md", status: "pending" }],
      tool_calls: [{ name: "http_fetch", args: { url: SITE } },
        { name: "doc_write", args: { path: "notes/tea.md", title: "Tea notes", content: "Green: 75 °C. Black: 95 °C." } }] } },
    // Slow enough for the page to show iteration 2 in progress, at its planner.
    { latency_ms: 3000, usage: { input_tokens: 1700, output_tokens: 200 }, content: {
      status: status({ needs_user_input: true, blocking_questions: ["Which tea should the guide start with?"],
        progress_summary: "Need the reader's preference.", remaining_work: ["write the guide"], next_action_hint: "ask_user" }) } },
    { latency_ms: 700, usage: { input_tokens: 2000, output_tokens: 500 }, content: {
      status: status({ exit_signal: true, progress_summary: "Wrote guide.md starting with green tea, as asked.",
        completion_evidence: ["guide.md"], next_action_hint: "stop", confidence: "high" }),
      plan_updates: [{ id: "s2", status: "done" }],
      tool_calls: [{ name: "doc_write", args: { path: "guide.md", title: "Tea guide", content: "# Tea guide\n\nStart with green tea: 75 °C for 2 minutes." } }] } },
  ],
  executor: [], repair: [],
};

// Never done: a new log doc every iteration, slowly, until canceled.
const endless = {
  planner: [{ latency_ms: 1200, usage: { input_tokens: 900, output_tokens: 100 }, content: {
    status: status({ progress_summary: "Logged another step.", remaining_work: ["keep going"] }),
    plan_updates: [{ id: "s1", title: "Keep going", status: "in_progress" }],
    tool_calls: [{ name: "doc_write", args: { path: "log/{{iteration}}.md", content: "step {{iteration}}" } }] } }],
  executor: [], repair: [],
};

// Hands part of the work to a detached child run, then finishes. The child replays the same
// script: its own spawn is refused (its tokens are spent by its first call) and it stops.
const family = {
  planner: [
    { latency_ms: 300, usage: { input_tokens: 900, output_tokens: 100 }, content: {
      status: status({ progress_summary: "Handed the archive to a child run.", remaining_work: ["write the index"] }),
      tool_calls: [{ name: "spawn_run", args: { objective: "Archive the tea notes", detached: true,
        budgets: { max_iterations: 1, max_tokens: 1000 } } }] } },
    { latency_ms: 300, usage: { input_tokens: 900, output_tokens: 100 }, content: {
      status: status({ exit_signal: true, progress_summary: "Wrote the index.", completion_evidence: ["index.md"],
        next_action_hint: "stop", confidence: "high" }),
      tool_calls: [{ name: "doc_write", args: { path: "index.md", content: "# Index" } }] } },
  ],
  executor: [], repair: [],
};

// approve_plan: a three-step plan to approve (20,000 + 1,400 tokens: $0.0121), then a guide in
// Markdown with an HTML injection and a javascript: link in it.
const GUIDE_MD = [
  "# Brewing green tea",
  "",
  "Start with **green tea** at _75 °C_ for `2 min`.",
  "",
  "1. Heat the water",
  "2. Steep it",
  "   - two minutes",
  "   - no more",
  "",
  "| Tea | °C |",
  "|---|---|",
  "| Green | 75 |",
  "| Black | 95 |",
  "",
  "Read [the tea page](https://example.com/teas), not [this trick](javascript:alert(1)).",
  "",
  "<img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>",
].join("\n");
const planned = {
  planner: [
    { latency_ms: 200, usage: { input_tokens: 20000, output_tokens: 1400 }, content: {
      status: status({ progress_summary: "Proposed a plan for the guide.", remaining_work: ["read", "note", "write"] }),
      plan_updates: [{ id: "s1", title: "Read the tea page", status: "pending" },
        { id: "s2", title: "Take notes on temperatures", status: "pending" },
        { id: "s3", title: "Write guide.md", status: "pending" }],
      tool_calls: [{ name: "doc_write", args: { path: "guide.md", content: "too early" } }] } },
    { latency_ms: 200, usage: { input_tokens: 1000, output_tokens: 100 }, content: {
      status: status({ exit_signal: true, progress_summary: "Wrote guide.md.", completion_evidence: ["guide.md"],
        next_action_hint: "stop", confidence: "high" }),
      plan_updates: [{ id: "s1", status: "done" }, { id: "s2", status: "done" }, { id: "s3", status: "done" }],
      tool_calls: [{ name: "doc_write", args: { path: "guide.md", title: "Green tea", content: GUIDE_MD } }] } },
  ],
  executor: [], repair: [],
};

// Claims it is done with nothing to show: the exit gate refuses, and one iteration's budget
// stops the run, whose last summary still says the guide is complete.
const overclaim = {
  planner: [{ latency_ms: 100, usage: { input_tokens: 500, output_tokens: 50 }, content: {
    status: status({ exit_signal: true, progress_summary: "Looked around; the guide is complete.", confidence: "high",
      next_action_hint: "stop" }) } }],
  executor: [], repair: [],
};

let server, base, dir, browser, site, siteUrl;

/** Starts `longrun serve` on `port` (0: any free one) over the test's data dir. */
async function startServer(port = 0) {
  if (!dir) {
    dir = mkdtempSync(join(tmpdir(), "longrun-web-"));
    writeFileSync(join(dir, "guided.json"), JSON.stringify(guided).replaceAll("SITE_URL", siteUrl));
    writeFileSync(join(dir, "endless.json"), JSON.stringify(endless));
    writeFileSync(join(dir, "family.json"), JSON.stringify(family));
    writeFileSync(join(dir, "planned.json"), JSON.stringify(planned));
    writeFileSync(join(dir, "overclaim.json"), JSON.stringify(overclaim));
    // A scripted coding agent for agent runs: it states, posts, works 5 s, writes its output, DONE.
    const agent = [
      'echo "drafting the notes" > TASK_STATE.md',
      'longrun bus post --type INFO "started drafting" >/dev/null',
      'echo "drafting line 1"',
      "sleep 5",
      'printf "# Draft\\nAll notes written.\\n" > "$LONGRUN_RUN_DIR/output.md"',
      "touch DONE",
    ].join("; ");
    writeFileSync(join(dir, "config.hcl"), [
      `projects_root = ${JSON.stringify(join(dir, "projects"))}`,
      'agent_order = ["scripted"]',
      'backend "scripted" {',
      '  type = "command"',
      `  command = ["sh", "-c", ${JSON.stringify(agent)}]`,
      '  prompt = "stdin"',
      "}",
    ].join("\n"));
  }
  server = spawn(BIN, ["serve", "--data-dir", join(dir, "data"), "--port", String(port),
    "--model", `script:${join(dir, "guided.json")}`, "--model", `script:${join(dir, "endless.json")}`,
    "--model", `script:${join(dir, "family.json")}`, "--model", `script:${join(dir, "planned.json")}`,
    "--model", `script:${join(dir, "overclaim.json")}`], {
    env: { ...process.env, LONGRUN_TOKENS: `${TOKEN}:alice`, LONGRUN_FETCH_TRUSTED_PRIVATE: "localhost", RUST_LOG: "warn",
      LONGRUN_CONFIG: join(dir, "config.hcl"), LONGRUN_TASKS_USER: "alice" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  base = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`longrun serve did not start: ${out}`)), 30_000);
    server.stdout.on("data", (d) => {
      out += d;
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    server.on("exit", (code) => reject(new Error(`longrun serve exited with ${code}: ${out}`)));
  });
}

before(async () => {
  assert.ok(existsSync(BIN), `${BIN} is missing: build it with cargo build -p longrun`);
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: scripts/web installs Debian's chromium`);
  rmSync(SHOTS, { recursive: true, force: true });
  mkdirSync(SHOTS, { recursive: true });
  site = createServer((req, res) => {
    // A webhook receiver that is gone: its deliveries are given up at the first attempt.
    if (req.url === "/gone") { res.writeHead(410); res.end(); return; }
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end("<html><head><title>Teas</title></head><body><p>Green tea: 75 °C.</p></body></html>");
  });
  await new Promise((resolve) => site.listen(0, "127.0.0.1", resolve));
  siteUrl = `http://localhost:${site.address().port}`;
  await startServer();
  browser = await launchBrowser();
});

/**
 * A freshly installed Chromium has crashed (SIGSEGV) at its first launch on a clean machine
 * and then run fine. Only the start-up is retried — launch plus opening one blank page — and
 * every retry is logged; a page that fails later still fails its test.
 */
async function launchBrowser(attempts = 3) {
  for (let i = 1; ; i++) {
    let b;
    try {
      b = await chromium.launch({
        executablePath: CHROMIUM,
        args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
      });
      const probe = await b.newPage();
      await probe.close();
      return b;
    } catch (err) {
      await b?.close().catch(() => {});
      if (i >= attempts) throw err;
      console.error(`chromium start-up failed (attempt ${i} of ${attempts}), retrying: ${err.message}`);
      await new Promise((r) => setTimeout(r, 1_000 * i));
    }
  }
}

after(async () => {
  await browser?.close();
  server?.kill("SIGINT");
  site?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function signIn(page) {
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  await page.getByLabel("API token").fill(TOKEN);
  await page.getByRole("button", { name: "Sign in" }).click();
}

const shot = (page, name) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

let guidedRunId;

test("signed out, the page says where the token is, a wrong one is refused as such, and the nav waits for sign-in", { timeout: 60_000 }, async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(base);
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  const nav = page.getByRole("navigation", { name: "Main" });
  for (const name of ["Runs", "Notifications"]) assert.ok(await nav.getByRole("link", { name }).isHidden(), `${name} is hidden signed out`);
  assert.ok(await nav.getByRole("button", { name: "Sign out" }).isHidden(), "Sign out is hidden signed out");
  // serve prints the token file's path, never the token: the hint names the file.
  const hint = await page.locator("#token-hint").textContent();
  assert.match(hint, /\.longrun\/token/);
  assert.match(hint, /DATA_DIR\/token/);

  await page.getByLabel("API token").fill("not-the-token");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText("The server did not accept this token.", { exact: false }).waitFor();
  assert.equal(await page.getByText("Your session has ended").count(), 0, "a refused token is not an ended session");
  assert.equal(await page.getByLabel("API token").getAttribute("aria-invalid"), "true");
  assert.ok(await nav.getByRole("link", { name: "Runs" }).isHidden());
  await shot(page, "signin-refused");

  await page.getByLabel("API token").fill(TOKEN);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Start a run" }).waitFor();
  await nav.getByRole("link", { name: "Runs" }).waitFor();
  await nav.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  assert.ok(await nav.getByRole("link", { name: "Notifications" }).isHidden(), "hidden again after signing out");
  await context.close();
});

test("a run started from the composer advances live, waits on the user, completes and is read", { timeout: 120_000 }, async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));

  await page.goto(base);
  await signIn(page);
  await page.getByRole("heading", { name: "Start a run" }).waitFor();
  await page.getByLabel("Objective").fill("Write a short tea guide");
  await page.getByLabel("Model").selectOption({ label: `script:${join(dir, "guided.json")}` });
  await page.getByRole("button", { name: "Start run" }).click();
  await page.waitForURL(/\/runs\/run_[0-9a-f]+$/);
  guidedRunId = page.url().split("/").pop();

  // Live: iterations and cost move while the page stays loaded (no navigation happens).
  const navigations = [];
  page.on("framenavigated", (f) => { if (f === page.mainFrame()) navigations.push(f.url()); });
  await page.getByTestId("iterations").filter({ hasText: /^1 of 25$/ }).waitFor({ timeout: 20_000 });
  const costAfterOne = await page.getByTestId("cost").textContent();
  assert.notEqual(costAfterOne, "$0.00");
  // Iteration 2 is at its planner (3 s): a row of its own, counting the time it has taken.
  const now = page.getByTestId("iteration-in-progress");
  await now.filter({ hasText: "Iteration 2 in progress" }).waitFor();
  assert.equal(await now.getAttribute("data-phase"), "planner");
  assert.match(await now.textContent(), /for \d+ s.*Phase: planner/);
  await shot(page, "run-mid-run");

  const answer = page.getByLabel("Your answer");
  await answer.waitFor({ timeout: 20_000 });
  await page.getByText("Which tea should the guide start with?", { exact: true }).waitFor();
  assert.equal(await page.getByTestId("iterations").textContent(), "2 of 25");
  assert.notEqual(await page.getByTestId("cost").textContent(), costAfterOne, "cost advanced with iteration 2");
  assert.equal(await now.count(), 0, "a run waiting on the user has no iteration in progress");
  await shot(page, "run-waiting-on-user");
  await answer.fill("Start with green tea.");
  await page.getByRole("button", { name: "Send answer" }).click();

  await page.locator('.run-status [data-status="completed"]').waitFor({ timeout: 20_000 });
  assert.equal(await page.getByTestId("iterations").textContent(), "3 of 25");
  assert.deepEqual(navigations, [], "the page updated without reloading");
  // 5,200 input and 1,000 output tokens at $0.50 / $1.50 per 1M: $0.0026 + $0.0015.
  assert.equal(await page.getByTestId("tokens").textContent(), "6,200");
  assert.equal(await page.getByTestId("cost").textContent(), "$0.0041");
  await page.getByRole("heading", { name: "Timeline" }).waitFor();
  await page.locator('.timeline [data-iteration="2"]').getByText(/Waiting on you/).waitFor();
  // The chart has its axes: tokens on the left, dollars on the right, each iteration below.
  const chart = page.getByTestId("cost-chart");
  assert.deepEqual(await chart.locator(".axis-title").allTextContents(), ["tokens", "cost (USD)", "iteration"]);
  assert.deepEqual(await chart.locator(".tick-iteration").allTextContents(), ["1", "2", "3"]);
  // Iteration 3 cost $0.00175, the most of the three: the cost axis tops out at $0.002.
  assert.deepEqual(await chart.locator(".tick-cost").allTextContents(), ["$0.00", "$0.001", "$0.002"]);
  assert.deepEqual(await chart.locator(".tick-tokens").allTextContents(), ["0", "1,250", "2,500"]);
  await shot(page, "run-ended");

  await page.locator('.tree button[data-path="guide.md"]').click();
  await page.locator(".doc-content").getByText("Start with green tea: 75 °C for 2 minutes.").waitFor();
  assert.equal(await page.getByTestId("doc-sources").textContent(), `${siteUrl}/teas`, "the doc cites the page read");
  assert.match(await page.getByTestId("report-sources").textContent(), /\/teas cited by guide\.md, notes\/tea\.md$/);
  // The title names the outcome and the work the evidence cites; the summary is the narrative
  // (built from the records: this script has no reporter), the headline the last step's line;
  // then the claim's evidence, the typed changes and how they link.
  assert.equal(await page.locator(".report-title").textContent(), "Complete: Tea guide");
  assert.match(await page.getByTestId("report-summary").textContent(), /^You asked: Write a short tea guide\./);
  assert.equal(await page.getByTestId("report-headline").textContent(), "Last step: Wrote guide.md starting with green tea, as asked.");
  await page.getByText(/^Built from the iteration records: no model answered/).waitFor();
  assert.equal(await page.getByTestId("report-evidence").textContent(), "guide.md");
  assert.match(await page.getByTestId("report-changes").textContent(), /document guide\.md created in iteration 3 — Tea guide/);
  assert.match(await page.getByTestId("report-links").textContent(), /guide\.md supports this run/);
  await page.getByText("Stopping reason: completed").waitFor();
  // An ended run takes a follow-up question; a blank one is refused before any request.
  await page.getByRole("heading", { name: "Ask a follow-up" }).waitFor();
  await page.getByRole("button", { name: "Ask", exact: true }).click();
  await page.getByText("Write a question first.").waitFor();
  await shot(page, "run-report-and-doc");

  await page.getByRole("button", { name: "Live view" }).click();
  await page.getByRole("dialog").getByText("run_completed").first().waitFor();
  await page.getByRole("dialog").getByRole("button", { name: "Close" }).click();

  // The phone layout still reads: nothing wider than the screen.
  await page.setViewportSize({ width: 390, height: 844 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than a phone screen`);
  await shot(page, "run-phone");

  assert.deepEqual(pageErrors, []);
  await context.close();
});

test("a deep link opened cold lands on its run page after sign-in", { timeout: 60_000 }, async () => {
  assert.ok(guidedRunId, "the first test created the run");
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${base}/runs/${guidedRunId}`);
  await signIn(page);
  await page.waitForURL(`${base}/runs/${guidedRunId}`);
  await page.getByRole("heading", { name: "Write a short tea guide" }).waitFor();
  await page.locator('.run-status [data-status="completed"]').waitFor();

  // The inbox has the outcomes, unread, each linking to its run.
  await page.getByTestId("unread").filter({ hasText: /^[1-9]/ }).waitFor({ timeout: 10_000 });
  await page.getByRole("link", { name: /^Notifications/ }).click();
  await page.getByRole("link", { name: "Write a short tea guide — completed" }).click();
  await page.waitForURL(`${base}/runs/${guidedRunId}`);
  await page.getByRole("link", { name: /^Notifications/ }).click();
  await page.locator(`[data-notification="${guidedRunId}#3#completed"].read`).waitFor();
  await context.close();
});

test("with OIDC, a cold deep link signs in by authorization code + PKCE and lands on its run", { timeout: 60_000 }, async () => {
  assert.ok(guidedRunId, "the first test created the run");
  const context = await browser.newContext();
  const page = await context.newPage();
  // An identity provider under the console's own origin (the local CSP allows only 'self'),
  // played by the test: it checks the PKCE proof and hands out the token the API accepts.
  const issuer = `${base}/idp`;
  const seen = {};
  await page.route("**/config.json", (route) => route.fulfill({ json: {
    apiUrl: "", live: "sse", auth: { mode: "oidc", issuer, clientId: "console-client", scopes: "openid email" } } }));
  await page.route(`${issuer}/**`, async (route) => {
    const url = new URL(route.request().url());
    if (url.pathname.endsWith("/.well-known/openid-configuration")) {
      return route.fulfill({ json: { issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token` } });
    }
    if (url.pathname.endsWith("/authorize")) {
      Object.assign(seen, Object.fromEntries(url.searchParams));
      const back = new URL(url.searchParams.get("redirect_uri"));
      back.search = new URLSearchParams({ code: "code-123", state: url.searchParams.get("state") }).toString();
      return route.fulfill({ status: 302, headers: { location: back.toString() } });
    }
    if (url.pathname.endsWith("/token")) {
      const form = new URLSearchParams(route.request().postData() ?? "");
      const proof = createHash("sha256").update(form.get("code_verifier") ?? "").digest("base64url");
      const ok = form.get("code") === "code-123" && form.get("client_id") === "console-client" && proof === seen.code_challenge;
      return ok
        ? route.fulfill({ json: { access_token: TOKEN, id_token: "unused", token_type: "Bearer", expires_in: 3600 } })
        : route.fulfill({ status: 400, json: { error: "invalid_grant" } });
    }
    return route.fulfill({ status: 404, body: "" });
  });

  await page.goto(`${base}/runs/${guidedRunId}`);
  await page.getByRole("button", { name: /^Sign in with / }).click();
  await page.waitForURL(`${base}/runs/${guidedRunId}`);
  await page.getByRole("heading", { name: "Write a short tea guide" }).waitFor();
  assert.equal(seen.response_type, "code");
  assert.equal(seen.code_challenge_method, "S256");
  assert.equal(seen.redirect_uri, `${base}/callback`);
  assert.equal(seen.client_id, "console-client");
  await context.close();
});

test("a second run, followed by long-poll as behind API Gateway, is canceled mid-way", { timeout: 60_000 }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  // The deployed console's config: no SSE, so the page must follow /events?after=&wait=.
  await page.route("**/config.json", (route) =>
    route.fulfill({ json: { apiUrl: "", auth: { mode: "token" }, live: "poll" } }));
  const polls = [];
  page.on("request", (r) => { if (/\/events\?after=\d+&wait=20$/.test(r.url())) polls.push(r.url()); });
  const streams = [];
  page.on("request", (r) => { if (r.url().includes("/stream")) streams.push(r.url()); });
  await page.goto(base);
  await signIn(page);
  await page.getByLabel("Objective").fill("Keep logging until stopped");
  await page.getByLabel("Model").selectOption({ label: `script:${join(dir, "endless.json")}` });
  await page.getByRole("button", { name: "Start run" }).click();
  await page.waitForURL(/\/runs\/run_[0-9a-f]+$/);
  await page.getByTestId("iterations").filter({ hasText: /^[2-9] of 25$/ }).waitFor({ timeout: 20_000 });
  assert.ok(polls.length >= 1, "the page long-polls the event log");
  assert.deepEqual(streams, [], "and never opens the SSE stream");

  // Told something while it runs: the message is in the run's log for its next iteration.
  const runId = page.url().split("/").pop();
  await page.getByLabel("Message").fill("Log in metric units.");
  await page.getByRole("button", { name: "Send message" }).click();
  await page.getByText("Sent: the next iteration reads it.").waitFor();
  const log = await (await fetch(`${base}/v1/runs/${runId}/events?after=0`, { headers: { authorization: `Bearer ${TOKEN}` } })).json();
  assert.ok(log.events.some((e) => e.type === "message_posted" && e.payload.text === "Log in metric units."));

  await page.getByRole("button", { name: "Cancel run" }).click();
  await page.getByRole("button", { name: "Yes, cancel" }).click();
  await page.locator('.run-status [data-status="canceled"]').waitFor({ timeout: 20_000 });
  const iterations = Number((await page.getByTestId("iterations").textContent()).split(" ")[0]);
  assert.ok(iterations >= 2 && iterations < 25, `canceled mid-way, after ${iterations} iterations`);
  await page.getByText("Stopping reason: canceled").waitFor();
  await shot(page, "run-canceled");
  await context.close();
});

test("after a server crash the page reconnects and resumes after the last event it saw", { timeout: 120_000 }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(base);
  await signIn(page);
  await page.getByLabel("Objective").fill("Log through a crash");
  await page.getByLabel("Model").selectOption({ label: `script:${join(dir, "endless.json")}` });
  await page.getByRole("button", { name: "Start run" }).click();
  await page.waitForURL(/\/runs\/run_[0-9a-f]+$/);
  await page.getByTestId("iterations").filter({ hasText: /^[2-9] of 25$/ }).waitFor({ timeout: 20_000 });

  server.kill("SIGKILL");
  await new Promise((r) => server.once("exit", r));
  await page.locator(".live-state.live-reconnecting").waitFor({ timeout: 10_000 });
  const before = Number((await page.getByTestId("iterations").textContent()).split(" ")[0]);
  await startServer(Number(new URL(base).port));

  // The restarted server re-enqueues the stranded run, which goes on once the dead worker's
  // 30 s lease on it has expired; the page follows without a reload.
  await page.getByTestId("iterations").filter({ hasText: new RegExp(`^(${before + 2}|${before + 3}|${before + 4}) of 25$`) })
    .waitFor({ timeout: 60_000 });
  await page.locator(".live-state.live-live").waitFor();
  await page.getByRole("button", { name: "Live view" }).click();
  const seqs = await page.locator(".live-events li[data-seq]").evaluateAll((els) => els.map((e) => Number(e.dataset.seq)));
  assert.ok(seqs.length > 5, `${seqs}`);
  assert.equal(new Set(seqs).size, seqs.length, `no event shown twice: ${seqs}`);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => b - a), "newest first, in log order");
  await page.getByRole("dialog").getByRole("button", { name: "Close" }).click();
  await page.getByRole("button", { name: "Cancel run" }).click();
  await page.getByRole("button", { name: "Yes, cancel" }).click();
  await page.locator('.run-status [data-status="canceled"]').waitFor({ timeout: 20_000 });
  await context.close();
});

test("an agent run's page shows its processes, live output, bus, state and output", { timeout: 60_000 }, async () => {
  const res = await fetch(`${base}/v1/runs`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ objective: "Draft the notes with an agent", agent: "scripted" }),
  });
  assert.equal(res.status, 201);
  const { id } = await res.json();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  await page.goto(`${base}/runs/${id}`);
  await signIn(page);

  // While the agent works: its process, what it posted and its state, polled live.
  const panel = page.locator("#agent");
  await panel.getByText("started drafting").waitFor({ timeout: 20_000 });
  await panel.locator(".agent-chain li").filter({ hasText: "iteration 1" }).waitFor();
  await panel.getByText("drafting the notes").waitFor();
  // The iteration at work, and the agent's running time, both counting while it works.
  const now = page.getByTestId("iteration-in-progress");
  await now.filter({ hasText: "Iteration 1 in progress" }).waitFor();
  assert.equal(await now.getAttribute("data-phase"), "agent");
  await panel.locator(".agent-chain li").filter({ hasText: /running for \d+ s/ }).waitFor();
  const running = page.getByTestId("agent-running-time");
  const before = await running.textContent();
  await page.waitForFunction((t) => document.querySelector('[data-testid="agent-running-time"]')?.textContent !== t, before, { timeout: 3_000 });
  await shot(page, "agent-working");

  // Done: completed, with the agent's output.
  await page.locator('.run-status [data-status="completed"]').waitFor({ timeout: 20_000 });
  await panel.getByText("All notes written.").first().waitFor();
  await panel.locator(".agent-chain li").filter({ hasText: /exited \(exit 0\) after \d+ s/ }).waitFor();
  assert.equal(await now.count(), 0);
  await shot(page, "agent-done");
  assert.deepEqual(pageErrors, []);
  await context.close();
});

test("a task started in a terminal is listed under Tasks and its page follows it live to the end", { timeout: 60_000 }, async () => {
  // `longrun task` from a terminal on the server's machine, with the same runner config.
  const task = spawn(BIN, ["task", "notes", "draft", "--objective", "# Draft the notes\n\nFrom the terminal."], {
    env: { ...process.env, LONGRUN_CONFIG: join(dir, "config.hcl"), LONGRUN_TASK_DIR: "", LONGRUN_RUN_ID: "" },
    stdio: "ignore",
  });
  const ended = new Promise((resolve) => task.on("exit", resolve));
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  await page.goto(`${base}/tasks`);
  await signIn(page);

  const row = page.locator('[data-task="notes/draft"]');
  await row.locator('[data-status="running"]').waitFor({ timeout: 20_000 });
  await row.getByRole("link", { name: "Draft the notes" }).click();
  await page.getByRole("heading", { name: "TASK.md" }).waitFor();
  await page.getByText("From the terminal.").waitFor();
  const panel = page.locator("#agent");
  await panel.getByText("started drafting").waitFor({ timeout: 20_000 });
  await panel.locator(".agent-chain li").filter({ hasText: /running for \d+ s/ }).waitFor();
  await shot(page, "task-working");

  // Done: the page follows it without a reload.
  await page.locator('.run-meta [data-status="done"]').waitFor({ timeout: 20_000 });
  await panel.getByText("All notes written.").first().waitFor();
  assert.equal(await ended, 0);
  await shot(page, "task-done");
  assert.deepEqual(pageErrors, []);
  await context.close();
});

test("a plan awaiting approval is a list with Approve and Reject, and the guide it leads to renders as safe Markdown", { timeout: 60_000 }, async () => {
  const res = await fetch(`${base}/v1/runs`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ objective: "Plan a green tea guide", model: `script:${join(dir, "planned.json")}`, permission_mode: "approve_plan" }),
  });
  assert.equal(res.status, 201);
  const { id } = await res.json();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  await page.goto(`${base}/runs/${id}`);
  await signIn(page);

  const ask = page.getByRole("form", { name: "The run asks you to approve its plan" });
  await ask.waitFor({ timeout: 20_000 });
  assert.deepEqual(await ask.getByTestId("plan-to-approve").locator("li").allTextContents(),
    ["Read the tea page", "Take notes on temperatures", "Write guide.md"]);
  assert.equal(await page.getByText("approve: true").count(), 0, "the API's wording is not the page's");
  await ask.getByRole("button", { name: "Reject" }).waitFor();
  // 20,000 input and 1,400 output tokens at $0.50 / $1.50 per 1M: $0.0100 + $0.0021.
  assert.equal(await page.getByTestId("cost").textContent(), "$0.0121");
  await shot(page, "approve-plan");

  await ask.getByRole("button", { name: "Approve" }).click();
  await page.locator('.run-status [data-status="completed"]').waitFor({ timeout: 20_000 });
  await page.locator('.tree button[data-path="guide.md"]').click();
  const body = page.getByTestId("doc-body");
  await body.getByRole("heading", { name: "Brewing green tea" }).waitFor();
  assert.equal(await body.locator("strong").textContent(), "green tea");
  assert.equal(await body.locator("em").textContent(), "75 °C");
  assert.equal(await body.locator("code").textContent(), "2 min");
  assert.deepEqual(await body.locator("ol > li > ul > li").allTextContents(), ["two minutes", "no more"]);
  assert.deepEqual(await body.locator("tbody td").allTextContents(), ["Green", "75", "Black", "95"]);
  assert.equal(await body.getByRole("link", { name: "the tea page" }).getAttribute("href"), "https://example.com/teas");
  assert.equal(await body.getByRole("link", { name: "this trick" }).count(), 0, "a javascript: link stays text");
  await body.getByText("this trick").waitFor();
  // The HTML in the document is shown as text, never run.
  assert.equal(await body.locator("img, script").count(), 0);
  await body.getByText(`<img src=x onerror="document.title='pwned'"><script>`, { exact: false }).waitFor();
  assert.notEqual(await page.title(), "pwned");
  await shot(page, "markdown-doc");
  assert.deepEqual(pageErrors, []);
  await context.close();
});

test("a run whose webhook delivery was given up shows it on its page, with its attempts and error", { timeout: 60_000 }, async () => {
  // Arrange: a webhook to a receiver that answers 410, and a run that ends (canceled).
  const api = (method, path, body) => fetch(`${base}${path}`, {
    method, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: body && JSON.stringify(body),
  });
  assert.equal((await api("PUT", "/v1/webhooks", { webhooks: [{ url: `${siteUrl}/gone`, secret: "0123456789abcdef-console" }] })).status, 200);
  const run = await (await api("POST", "/v1/runs", { objective: "Log until canceled", model: `script:${join(dir, "endless.json")}` })).json();
  assert.equal((await api("POST", `/v1/runs/${run.id}/cancel`, {})).status, 200);
  let log = { deliveries: [] };
  for (let i = 0; i < 100 && log.deliveries[0]?.state !== "given_up"; i++) {
    await new Promise((r) => setTimeout(r, 100));
    log = await (await api("GET", `/v1/runs/${run.id}/deliveries`)).json();
  }
  await api("PUT", "/v1/webhooks", { webhooks: [] });
  const context = await browser.newContext();
  const page = await context.newPage();

  // Act
  await page.goto(`${base}/runs/${run.id}`);
  await signIn(page);

  // Assert
  const card = page.getByRole("region", { name: "Webhook deliveries" });
  const row = card.locator('tr[data-state="given_up"]');
  await row.waitFor({ timeout: 20_000 });
  assert.equal(await row.locator("td").nth(0).textContent(), `${siteUrl}/gone`);
  assert.equal(await row.locator("td").nth(1).textContent(), "given up");
  await row.locator("td").nth(2).getByText("each").click();
  assert.match(await row.locator("td").nth(2).locator("ol.attempts li").textContent(), / — HTTP 410 Gone$/);
  assert.equal(await row.locator("td").nth(3).textContent(), "HTTP 410 Gone");
  await shot(page, "webhook-given-up");
  await context.close();
});

test("a parent run's page lists its child runs, marks the detached one, and each links to the other, as the list of runs does", { timeout: 60_000 }, async () => {
  // Arrange: a run that spawned a detached child; both ended.
  const api = (method, path, body) => fetch(`${base}${path}`, {
    method, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: body && JSON.stringify(body),
  });
  const parent = await (await api("POST", "/v1/runs", { objective: "Index the tea notes", model: `script:${join(dir, "family.json")}` })).json();
  const childId = `${parent.id}-c1-1`;
  const ended = async (id) => ["completed", "stopped"].includes((await (await api("GET", `/v1/runs/${id}`)).json()).status);
  for (let i = 0; i < 200 && !(await ended(parent.id) && await ended(childId)); i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const context = await browser.newContext();
  const page = await context.newPage();

  // Act
  await page.goto(`${base}/runs/${parent.id}`);
  await signIn(page);

  // Assert
  const row = page.getByRole("region", { name: "Child runs" }).locator(`tr[data-child="${childId}"]`);
  await row.waitFor({ timeout: 20_000 });
  assert.equal(await row.locator("td").nth(0).textContent(), "Archive the tea notesdetached");
  assert.equal(await row.locator('[data-status="stopped"]').count(), 1);
  assert.match(await row.locator("td").nth(2).textContent(), /^1,?000 tokens · \$/);
  await shot(page, "children");
  await row.getByRole("link", { name: "Archive the tea notes" }).click();
  await page.waitForURL(`${base}/runs/${childId}`);
  await page.getByTestId("parent-run").filter({ hasText: parent.id }).waitFor();
  assert.ok(await page.getByRole("region", { name: "Child runs" }).isHidden(), "a run without children has no such card");
  await page.getByTestId("parent-run").click();
  await page.waitForURL(`${base}/runs/${parent.id}`);
  // In the list of runs the child is marked, and leads to its parent too.
  const listed = (await (await api("GET", "/v1/runs")).json()).runs;
  assert.equal(listed.find((r) => r.id === childId).parent_run_id, parent.id);
  assert.equal(listed.find((r) => r.id === parent.id).parent_run_id, null);
  await page.locator(".crumbs").getByRole("link", { name: "Runs" }).click();
  const childRow = page.locator(`li[data-run-id="${childId}"]`);
  await childRow.waitFor();
  await shot(page, "runs-list");
  assert.equal(await page.locator(`li[data-run-id="${parent.id}"] .parent-link`).count(), 0);
  await childRow.getByRole("link", { name: "child run" }).click();
  await page.waitForURL(`${base}/runs/${parent.id}`);
  await context.close();
});

test("the inbox shows each notification's message, not the run's last summary", { timeout: 60_000 }, async () => {
  // Arrange: a run that claims it is done with no evidence, and stops at its one iteration.
  const api = (method, path, body) => fetch(`${base}${path}`, {
    method, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: body && JSON.stringify(body),
  });
  const run = await (await api("POST", "/v1/runs", { objective: "Write the brewing guide",
    model: `script:${join(dir, "overclaim.json")}`, budgets: { max_iterations: 1 } })).json();
  let n;
  for (let i = 0; i < 200 && !n; i++) {
    await new Promise((r) => setTimeout(r, 100));
    n = (await (await api("GET", "/v1/notifications?limit=100")).json()).notifications.find((x) => x.run_id === run.id);
  }
  assert.ok(n, "the stopped run was notified");
  assert.equal(n.status, "stopped");
  assert.match(n.summary, /the guide is complete/);
  assert.ok(n.message && n.message !== n.summary, `message ${JSON.stringify(n.message)}`);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();

  // Act
  await page.goto(`${base}/notifications`);
  await signIn(page);

  // Assert
  const item = page.locator(`[data-notification="${n.id}"]`);
  await item.waitFor({ timeout: 20_000 });
  assert.equal(await item.locator("p.message").textContent(), n.message);
  // The message says the run stopped, and why; the summary alone would say it was done.
  assert.match(n.message, /stopped after 1 iteration\(s\): reached max_iterations = 1/);
  assert.equal(await item.getByText(n.summary, { exact: true }).count(), 0, "the summary is not the line shown");
  assert.match(await item.locator(".run-meta").textContent(), /Stopped1 iteration550 tokens\$/);
  // A plan to approve reads as its steps, not as the API's instructions run together.
  const plan = page.locator("li", { has: page.getByRole("link", { name: "Plan a green tea guide — needs your answer" }) });
  assert.equal(await plan.locator("p.message").textContent(),
    "Approve this plan: Read the tea page; Take notes on temperatures; Write guide.md");
  await shot(page, "notifications");
  await context.close();
});

test("a report shows each criterion's verdict: what was checked and why it passed or failed", { timeout: 60_000 }, async () => {
  // Arrange: the guide holds "75" but no "oolong"; the run stops at its budget.
  const api = (method, path, body) => fetch(`${base}${path}`, {
    method, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: body && JSON.stringify(body),
  });
  const run = await (await api("POST", "/v1/runs", { objective: "Write the green tea guide",
    model: `script:${join(dir, "planned.json")}`, budgets: { max_iterations: 2 },
    completion_criteria: [{ check: "contains", doc: "guide.md", text: "75" },
      { check: "contains", doc: "guide.md", text: "oolong" }] })).json();
  assert.ok(run.id, JSON.stringify(run));
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();

  // Act
  await page.goto(`${base}/runs/${run.id}`);
  await signIn(page);

  // Assert
  await page.locator('.run-status [data-status="stopped"]').waitFor({ timeout: 20_000 });
  const items = page.getByTestId("report-criterion");
  await items.first().waitFor();
  assert.match(await items.nth(0).textContent(), /^guide\.md contains “75” — ✓ passed \(contains\): `guide\.md` holds the text "75"$/);
  assert.match(await items.nth(1).textContent(), /^guide\.md contains “oolong” — ✗ failed \(contains\): `guide\.md` does not hold the text "oolong"$/);
  await context.close();
});

test("the API's failures show as readable messages, never a blank page", { timeout: 60_000 }, async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${base}/runs/run_doesnotexist`);
  await signIn(page);
  // An unknown run is a page saying so, not the run page's cards left empty.
  const notFound = page.getByTestId("run-not-found");
  await notFound.getByRole("heading", { name: "Run not found" }).waitFor();
  await notFound.getByText("run_doesnotexist").waitFor();
  assert.equal(await page.locator(".card").count(), 1, "one card, no empty run sections");
  assert.equal(await page.getByRole("alert").filter({ hasText: /\S/ }).count(), 0, "the page says it; no banner repeats it");
  await shot(page, "unknown-run");
  await notFound.getByRole("link", { name: "Go to your runs" }).click();
  await page.getByRole("heading", { name: "Start a run" }).waitFor();

  await page.goto(base);
  await page.getByLabel("Objective").fill("Too small a budget");
  await page.getByText("Advanced").click();
  await page.getByLabel("Max iterations").fill("0");
  await page.getByRole("button", { name: "Start run" }).click();
  await page.getByRole("alert").getByText(/budgets\.max_iterations must be between 1 and 10000, got 0/).waitFor();
  assert.equal(new URL(page.url()).pathname, "/", "a refused run leaves the composer in place");

  server.kill("SIGKILL");
  await new Promise((r) => server.once("exit", r));
  await page.getByRole("button", { name: "Start run" }).click();
  await page.getByRole("alert").getByText(/The API cannot be reached/).waitFor();
  await page.getByRole("heading", { name: "Start a run" }).waitFor();
  await shot(page, "api-down");
  await context.close();
});
