// The run page: overview, live cost, timeline (with the iteration in progress), plan, outputs,
// research tree, scratchpad, report,
// webhook deliveries and the controls. Data sections are re-rendered from fresh API reads whenever an event arrives;
// forms and the open document are kept, so typing is never lost to a refresh.

import type { AgentView } from "../../clients/typescript/src/index";
import {
  ApiError, ENDED, type DocMeta, type Iteration, type Run, type RunEvent, type ScratchEntry, type TreeNode,
  type WebhookDelivery,
} from "./api";
import type { Page } from "./app";
import { agentPanel, runningProcess } from "./agent";
import { costChart } from "./chart";
import { h, replace } from "./dom";
import { asked, count, duration, elapsed, statusBadge, tickElapsed, usd, when } from "./format";
import { Follower, type LiveState } from "./live";
import { markdown } from "./markdown";

interface State {
  run: Run | null;
  iterations: Iteration[];
  docs: DocMeta[];
  tree: TreeNode | null;
  scratch: ScratchEntry[];
  allScratch: boolean;
  events: RunEvent[];
  deliveries: WebhookDelivery[];
  agent: AgentView | null;
}

const section = (id: string, title: string, ...body: (Node | null)[]) =>
  h("section", { class: "card", id, "aria-labelledby": `${id}-h` }, h("h2", { id: `${id}-h` }, title), ...body);

/** A table of records, one row each, under column headings (`data-testid` names it for tests). */
const rowTable = (testid: string, heads: string[], rows: Node[]) =>
  h("table", { class: "rows", "data-testid": testid },
    h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows));

/** A source as a link when it is a web page; tool results (`tool:NAME`) and anything else stay text. */
function sourceLink(src: string): HTMLElement {
  let url: URL | null = null;
  try { url = new URL(src); } catch { /* not a URL */ }
  if (url && (url.protocol === "https:" || url.protocol === "http:")) {
    return h("a", { href: url.href, target: "_blank", rel: "noopener noreferrer nofollow" }, src);
  }
  return h("span", {}, src);
}

export const runPage: Page = (ctx, root, params) => {
  const id = params.id;
  const s: State = { run: null, iterations: [], docs: [], tree: null, scratch: [], allScratch: false, events: [], deliveries: [], agent: null };
  const openDirs = new Set<string>();
  let follower: Follower | null = null;
  let closed = false;
  let refreshFailed = false;

  const title = h("h1", { class: "objective" }, "Loading run…");
  const badge = h("span", { class: "badge-slot" });
  const liveDot = h("span", { class: "live-state", "aria-live": "polite" });
  const controls = h("div", { class: "controls" });
  const warning = h("div", { class: "warning-slot" });
  const waiting = h("div", { class: "waiting-slot" });
  const cont = h("div", { class: "continue-slot" });
  const tell = h("div", { class: "tell-slot" });
  const followUp = h("div", { class: "follow-up-slot" });
  const overview = h("dl", { class: "facts" });
  const cost = h("div", { class: "cost" });
  const report = h("div", {});
  const timeline = h("ol", { class: "timeline", reversed: true });
  const plan = h("ul", { class: "plan" });
  const outputs = h("ul", { class: "outputs" });
  const tree = h("div", { class: "tree" });
  const docView = h("article", { class: "doc-view", "aria-live": "polite", tabindex: "-1" },
    h("p", { class: "muted" }, "Choose a document to read it."));
  const scratch = h("div", { class: "scratch" });
  const liveList = h("ol", { class: "live-events" });
  const liveScratch = h("div", {});
  const dialog = h("dialog", { class: "live-view", "aria-labelledby": "live-h" },
    h("div", { class: "section-head" },
      h("h2", { id: "live-h" }, "Live view"),
      h("button", { type: "button", onclick: () => dialog.close() }, "Close")),
    h("h3", {}, "Latest events"), liveList, h("h3", {}, "Scratchpad"), liveScratch);

  const reportCard = section("report", "Report", report);
  const deliveries = h("div", {});
  const deliveriesCard = section("deliveries", "Webhook deliveries", deliveries);
  const children = h("div", {});
  const childrenCard = section("children", "Child runs", children);
  const agent = agentPanel();
  const agentSlot = h("div", { class: "agent-slot" });
  replace(root,
    h("article", { class: "run-page" },
      h("header", { class: "run-head" },
        h("p", { class: "crumbs" }, h("a", { href: "/" }, "Runs"), " / ", h("code", {}, id)),
        title,
        h("div", { class: "run-status" }, badge, liveDot),
        controls),
      warning, waiting, cont, followUp, tell,
      h("div", { class: "cols" },
        section("overview", "Overview", overview),
        section("cost", "Cost", cost)),
      reportCard,
      deliveriesCard,
      childrenCard,
      agentSlot,
      section("timeline-s", "Timeline", timeline),
      h("div", { class: "cols" },
        section("plan-s", "Plan", plan),
        section("outputs-s", "Outputs", outputs)),
      h("div", { class: "cols" },
        section("research", "Research tree", tree),
        section("doc-s", "Document", docView)),
      section("scratchpad", "Scratchpad", scratch)),
    dialog);

  let pending: ReturnType<typeof setTimeout> | null = null;
  const soon = () => {
    if (pending) return;
    pending = setTimeout(() => { pending = null; void refresh(); }, 150);
  };

  async function refresh() {
    try {
      const [run, its, ws, sp, dl] = await Promise.all([
        ctx.api.getRun(id),
        ctx.api.iterations(id),
        ctx.api.workspace(id),
        ctx.api.scratchpad(id, s.allScratch ? 1000 : 3),
        ctx.api.deliveries(id),
      ]);
      if (closed) return;
      s.run = run; s.iterations = its.iterations; s.docs = ws.docs; s.tree = ws.tree; s.scratch = sp.entries;
      s.deliveries = dl.deliveries;
      if (run.agent) {
        s.agent = await ctx.api.agent(id);
        agent.show(s.agent);
        if (!agentSlot.contains(agent.el)) replace(agentSlot, agent.el);
      }
      // The API is back: the message its outage left is stale now.
      if (refreshFailed) ctx.clearError();
      refreshFailed = false;
      render();
      follow();
    } catch (e) {
      if (!s.run && e instanceof ApiError && e.status === 404) { notFound(); return; }
      refreshFailed = true;
      ctx.fail(e);
      if (!s.run) {
        replace(title, "This run could not be loaded");
        replace(overview, h("p", { class: "error-inline" }, "Check the link, or go back to the runs list."));
      }
    }
  }

  // No run of this user has the id: one page that says so, instead of the run page's cards.
  function notFound() {
    closed = true;
    follower?.stop();
    document.title = "Run not found · longrun";
    replace(root, h("section", { class: "card narrow", "aria-labelledby": "not-found-h", "data-testid": "run-not-found" },
      h("h1", { id: "not-found-h" }, "Run not found"),
      h("p", {}, "You have no run with the id ", h("code", {}, id), ". The link may be mistyped or cut short, or the run was deleted."),
      h("p", {}, h("a", { href: "/" }, "Go to your runs"))));
  }

  const settled = (r: Run) => ENDED.includes(r.status) || r.status === "waiting_on_user" || r.status === "paused";

  function follow() {
    const run = s.run;
    if (!run) return;
    if (settled(run)) {
      follower?.stop();
      follower = null;
      setLive("settled");
      // An ended or waiting run has just put a notification in the inbox.
      ctx.refreshUnread();
      return;
    }
    if (follower) return;
    follower = new Follower(ctx.api, ctx.config, id, Math.max(run.event_seq, lastSeq()), (events) => {
      s.events = [...s.events, ...events].slice(-100);
      renderLive();
      soon();
    }, (st) => {
      setLive(st);
      if (st === "settled") { follower = null; soon(); }
    });
  }

  const lastSeq = () => (s.events.length ? s.events[s.events.length - 1].seq : 0);

  function setLive(st: LiveState) {
    liveDot.textContent = st === "live" ? "● live" : st === "reconnecting" ? "reconnecting…" : "";
    liveDot.className = `live-state live-${st}`;
  }

  function render() {
    const run = s.run!;
    document.title = `${run.objective.slice(0, 60)} · longrun`;
    replace(title, run.objective);
    replace(badge, statusBadge(run.status));
    renderControls(run);
    replace(warning, run.streaks?.no_progress > 1 && !ENDED.includes(run.status)
      ? h("p", { class: "warning", role: "status" },
          `No progress for ${run.streaks.no_progress} iterations in a row: the run stops after ${run.thresholds?.no_progress_limit ?? 3}. Edit the plan or cancel if it is stuck.`)
      : null);
    renderWaiting(run);
    renderContinue(run);
    renderFollowUp(run);
    renderTell(run);
    renderOverview(run);
    renderCost(run);
    renderReport(run);
    renderDeliveries();
    renderChildren(run);
    renderTimeline();
    renderPlan(run);
    renderOutputs();
    renderTree();
    renderScratch();
    renderLive();
  }

  async function act(path: string, body: unknown = {}) {
    try {
      s.run = await ctx.api.request<Run>("POST", `/v1/runs/${encodeURIComponent(id)}/${path}`, body);
      ctx.clearError();
      render();
      follow();
      soon();
      return true;
    } catch (e) {
      ctx.fail(e);
      return false;
    }
  }

  let controlsKey = "";
  function renderControls(run: Run) {
    // Rebuilt only when they change, so a refresh never pulls a button from under a click.
    const key = `${run.status}|${run.cancel_requested}|${run.pause_requested}`;
    if (key === controlsKey) return;
    controlsKey = key;
    const ended = ENDED.includes(run.status);
    const confirm = h("span", { class: "confirm", hidden: true },
      "Cancel this run? ",
      h("button", { type: "button", class: "danger", onclick: () => act("cancel") }, "Yes, cancel"),
      h("button", { type: "button", onclick: () => { confirm.hidden = true; cancelBtn.hidden = false; } }, "Keep it"));
    const cancelBtn = h("button", {
      type: "button", class: "danger", disabled: run.cancel_requested,
      onclick: () => { confirm.hidden = false; cancelBtn.hidden = true; (confirm.querySelector("button") as HTMLButtonElement).focus(); },
    }, run.cancel_requested ? "Cancel requested…" : "Cancel run");
    replace(controls,
      !run.status.startsWith("waiting") && (run.status === "running" || run.status === "queued") && !run.pause_requested
        ? h("button", { type: "button", onclick: () => act("pause") }, "Pause") : null,
      ended ? null : cancelBtn, ended ? null : confirm,
      h("button", { type: "button", onclick: () => { renderLive(); dialog.showModal(); } }, "Live view"));
  }

  // Built once so a half-typed answer survives refreshes.
  const answer = h("textarea", { id: "answer", rows: 3, "aria-describedby": "questions" });
  const sendBtn = h("button", { type: "submit", class: "primary" }, "Send answer");
  const questions = h("ul", { id: "questions", class: "questions" });
  const approvals = h("div", { class: "row approvals" });
  const answerHead = h("h2", { id: "answer-h" }, "The run is waiting on you");
  const answerLabel = h("label", { for: "answer" }, "Your answer");
  const answerForm = h("form", { class: "card answer", "aria-labelledby": "answer-h" },
    answerHead,
    questions,
    approvals,
    h("div", { class: "field" }, answerLabel, answer),
    h("div", { class: "row" }, sendBtn));
  answerForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!answer.value.trim()) { ctx.fail(new Error("Write an answer first.")); answer.focus(); return; }
    sendBtn.disabled = true;
    if (await act("respond", { answer: answer.value.trim() })) answer.value = "";
    sendBtn.disabled = false;
  });

  function renderWaiting(run: Run) {
    if (run.status !== "waiting_on_user") { replace(waiting); return; }
    const planAsked = run.permission_mode === "approve_plan" && !run.plan_approved;
    replace(answerHead, planAsked ? "The run asks you to approve its plan" : "The run is waiting on you");
    replace(answerLabel, planAsked ? "What to change (optional)" : run.permission_mode === "autopilot" ? "Your answer" : "Your answer (optional with Approve or Reject)");
    replace(questions, (run.questions.length ? run.questions : ["The run needs your input to go on."]).map((q) => questionItem(q, run)));
    replace(approvals, run.permission_mode !== "autopilot"
      ? [h("button", { type: "button", class: "primary", onclick: () => act("respond", { answer: answer.value.trim(), approve: true }) }, "Approve"),
         h("button", { type: "button", class: "danger", onclick: () => act("respond", { answer: answer.value.trim(), approve: false }) }, "Reject"),
         h("span", { class: "muted" }, planAsked
           ? "Approve starts the work. Reject, or an answer saying what to change, sends the planner back to the plan."
           : "Approve or reject what waits; an answer goes with it.")]
      : null);
    if (!waiting.contains(answerForm)) replace(waiting, answerForm);
  }

  /**
   * One question: the plan awaiting approval as its list of steps (the API asks in one string,
   * "Approve this plan? Respond with approve: true …" and a "- [status] title" line per step);
   * any other question as its paragraphs and "- " lists.
   */
  function questionItem(q: string, run: Run): HTMLElement {
    const [first, ...lines] = q.split("\n");
    if (/^Approve this plan\?/.test(first)) {
      const steps = lines.map((l) => /^\s*- \[([\w ]+)\] (.*)$/.exec(l)).filter((m) => m !== null)
        .map((m) => ({ status: m[1], title: m[2] }));
      const plan = steps.length ? steps : run.plan.map((p) => ({ status: p.status, title: p.title }));
      return h("li", { class: "plan-ask" },
        h("p", {}, h("strong", {}, "Approve this plan?")),
        plan.length
          ? h("ol", { class: "plan-steps", "data-testid": "plan-to-approve" }, plan.map((st) =>
              h("li", {}, st.title, st.status !== "pending" ? h("span", { class: "tag" }, st.status.replace(/_/g, " ")) : null)))
          : h("p", { class: "muted" }, "The planner proposed no plan steps."));
    }
    const out: Node[] = [];
    let items: string[] = [];
    const flush = () => { if (items.length) out.push(h("ul", {}, items.map((t) => h("li", {}, t)))); items = []; };
    for (const l of [first, ...lines]) {
      const item = /^\s*[-*] (.*)$/.exec(l);
      if (item) { items.push(item[1]); continue; }
      flush();
      if (l.trim()) out.push(h("p", {}, l));
    }
    flush();
    return h("li", {}, out);
  }

  // Built once so a half-typed message survives refreshes.
  const note = h("textarea", { id: "tell", rows: 2 });
  const tellBtn = h("button", { type: "submit" }, "Send message");
  const told = h("span", { class: "muted", role: "status" });
  const tellForm = h("form", { class: "card tell", "aria-labelledby": "tell-h" },
    h("h2", { id: "tell-h" }, "Tell the run"),
    h("p", { class: "muted" }, "A correction, a new fact, a priority: the run's next iteration reads it."),
    h("div", { class: "field" }, h("label", { for: "tell" }, "Message"), note),
    h("div", { class: "row" }, tellBtn, told));
  tellForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const text = note.value.trim();
    if (!text) { ctx.fail(new Error("Write a message first.")); note.focus(); return; }
    tellBtn.disabled = true;
    if (await act("messages", { text })) {
      note.value = "";
      told.textContent = "Sent: the next iteration reads it.";
    }
    tellBtn.disabled = false;
  });

  function renderTell(run: Run) {
    // A waiting run has its answer form; an ended one takes no messages.
    if (ENDED.includes(run.status) || run.status === "waiting_on_user") { replace(tell); return; }
    if (!tell.contains(tellForm)) replace(tell, tellForm);
  }

  // Built once so a half-typed question survives refreshes.
  const question = h("textarea", { id: "follow-up", rows: 2, maxlength: "4096" });
  const askBtn = h("button", { type: "submit", class: "primary" }, "Ask");
  const followForm = h("form", { class: "card follow-up", "aria-labelledby": "follow-up-h" },
    h("h2", { id: "follow-up-h" }, "Ask a follow-up"),
    h("p", { class: "muted" }, "The run goes on with your question, on the budgets it has left; its next end writes a new report."),
    h("div", { class: "field" }, h("label", { for: "follow-up" }, "Question"), question),
    h("div", { class: "row" }, askBtn));
  followForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const text = question.value.trim();
    if (!text) { ctx.fail(new Error("Write a question first.")); question.focus(); return; }
    askBtn.disabled = true;
    if (await act("follow-up", { question: text })) question.value = "";
    askBtn.disabled = false;
  });

  function renderFollowUp(run: Run) {
    // Ended runs but canceled ones take a follow-up; agent runs do not.
    const open = ["completed", "stopped", "failed"].includes(run.status) && !run.agent;
    if (!open) { replace(followUp); return; }
    if (!followUp.contains(followForm)) replace(followUp, followForm);
  }

  const contForm = h("form", { class: "card continue", "aria-labelledby": "continue-h" });
  contForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const v = (n: string) => {
      const raw = (contForm.querySelector(`[name=${n}]`) as HTMLInputElement).value.trim();
      return raw === "" ? undefined : Number(raw);
    };
    const minutes = v("max_running_minutes");
    await act("continue", { budgets: {
      max_iterations: v("max_iterations"),
      max_running_ms: minutes === undefined ? undefined : Math.round(minutes * 60_000),
      max_tokens: v("max_tokens"), max_cost_usd: v("max_cost_usd"),
    } });
  });

  function renderContinue(run: Run) {
    if (run.status !== "stopped" && run.status !== "paused") { replace(cont); return; }
    if (cont.contains(contForm) && contForm.dataset.status === run.status) return;
    contForm.dataset.status = run.status;
    const b = run.budgets;
    const field = (name: string, label: string, value: number | null, step = "1") =>
      h("div", { class: "field" }, h("label", { for: `c-${name}` }, label),
        h("input", { id: `c-${name}`, name, type: "number", min: "0", step, value: value ?? "" }));
    replace(contForm,
      h("h2", { id: "continue-h" }, run.status === "paused" ? "Paused" : "Continue with raised budgets"),
      h("p", { class: "muted" }, run.status === "paused"
        ? "Resume the run where it paused; raise a budget on the way if you like."
        : "Spend so far is kept; raise the budget that stopped the run."),
      h("div", { class: "grid" },
        field("max_iterations", "Max iterations", run.status === "stopped" ? Math.max(b.max_iterations, run.iteration) + 10 : null),
        field("max_running_minutes", "Max running time (minutes)", null),
        field("max_tokens", "Max tokens", null),
        field("max_cost_usd", "Max cost (USD)", null, "0.01")),
      h("button", { type: "submit", class: "primary" }, run.status === "paused" ? "Resume" : "Continue run"));
    replace(cont, contForm);
  }

  function renderOverview(run: Run) {
    const end = run.ended_at ?? (ENDED.includes(run.status) ? run.updated_at : null);
    const fact = (k: string, v: Node | string) => [h("dt", {}, k), h("dd", {}, v)];
    replace(overview,
      fact("Status", statusBadge(run.status)),
      fact("Started", when(run.created_at)),
      fact("Ended", end ? when(end) : "—"),
      fact("Duration", end ? duration(end - run.created_at) : elapsed(run.created_at)),
      fact("Running time", agentRunningTime(run)),
      fact("Iterations", h("span", { "data-testid": "iterations" }, `${run.iteration} of ${run.budgets.max_iterations}`)),
      run.agent ? fact("Agent", run.agent) : fact("Model", (run.models?.length ? run.models : [run.model]).join(", ")),
      fact("Permission mode", run.permission_mode.replace(/_/g, " ")),
      run.parent_run_id
        ? fact("Parent run", h("a", { href: `/runs/${run.parent_run_id}`, "data-testid": "parent-run" }, h("code", {}, run.parent_run_id)))
        : null,
      run.stopping_reason ? fact("Stopping reason", `${run.stopping_reason.type.replace(/_/g, " ")}: ${
        run.stopping_reason.type === "waiting_on_user" ? asked(run.stopping_reason.detail) : run.stopping_reason.detail}`) : null);
  }

  // An agent's iteration is one process: its time so far counts from the process's start, on
  // top of the committed iterations' (metrics.running_ms is written at each commit).
  function agentRunningTime(run: Run): Node | string {
    const proc = run.agent && !ENDED.includes(run.status) && s.agent ? runningProcess(s.agent) : null;
    if (!proc) return duration(run.metrics.running_ms);
    return h("span", { "data-testid": "agent-running-time" }, elapsed(Date.parse(proc.start_time), run.metrics.running_ms));
  }

  function bar(label: string, used: number, limit: number | null, fmt: (n: number) => string) {
    const pct = limit ? Math.min(100, (100 * used) / limit) : 0;
    const fill = h("div", { class: "bar-fill" });
    // Through CSSOM: the console's CSP allows no inline style attributes.
    fill.style.width = `${pct}%`;
    return h("div", { class: "budget" },
      h("div", { class: "budget-label" }, h("span", {}, label),
        h("span", {}, limit ? `${fmt(used)} of ${fmt(limit)}` : `${fmt(used)} (no limit)`)),
      h("div", {
        class: `bar-track${pct >= 90 ? " bar-hot" : ""}`, role: "progressbar", "aria-label": label,
        "aria-valuemin": 0, "aria-valuemax": 100, "aria-valuenow": Math.round(pct),
      }, fill));
  }

  function renderCost(run: Run) {
    const m = run.metrics;
    replace(cost,
      h("div", { class: "big-numbers" },
        h("div", {}, h("strong", { "data-testid": "tokens" }, count(run.tokens)), h("span", {}, "tokens")),
        h("div", {}, h("strong", { "data-testid": "cost" }, usd(m.cost_usd)), h("span", {}, "spent")),
        h("div", {}, h("strong", {}, count(m.llm_calls)), h("span", {}, "model calls"))),
      m.unpriced_calls ? h("p", { class: "warning" }, `${m.unpriced_calls} calls had no known price: the cost is a lower bound.`) : null,
      bar("Iterations", run.iteration, run.budgets.max_iterations, count),
      bar("Running time", m.running_ms, run.budgets.max_running_ms, duration),
      bar("Tokens", run.tokens, run.budgets.max_tokens, count),
      bar("Cost", m.cost_usd, run.budgets.max_cost_usd, usd),
      h("table", { class: "by-model" },
        h("caption", {}, "By model"),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Model"), h("th", { scope: "col" }, "Calls"),
          h("th", { scope: "col" }, "Tokens in / out"), h("th", { scope: "col" }, "Cost"))),
        h("tbody", {}, Object.entries(m.by_model ?? {}).map(([name, u]) =>
          h("tr", {}, h("td", {}, name), h("td", {}, count(u.calls)),
            h("td", {}, `${count(u.input_tokens)} / ${count(u.output_tokens)}`), h("td", {}, usd(u.cost_usd)))))),
      costChart(s.iterations));
  }

  function renderReport(run: Run) {
    reportCard.hidden = !run.report;
    const r = run.report;
    if (!r) return;
    const by = r.summary_source === "model" ? "Written by the model at the run's end."
      : `Built from the iteration records: ${r.summary_note ?? "no model wrote it"}.`;
    // The last completion claim the planner made, as the exit gate judged it.
    const claimed = [...s.iterations].reverse().find((it) => it.status_block?.exit_signal);
    const claim = claimed?.status_block;
    // What the gate found of each criterion at that claim (checks and the grader).
    const verdicts = claimed?.criteria ?? [];
    const mapped = (i: number, text: string) => claim?.criteria_evidence?.find((c) =>
      c.criterion === `c${i + 1}` || c.criterion === text)?.evidence ?? [];
    const criteria = run.completion_criteria ?? [];
    const kinds = { document: "document", plan_step: "plan step", run: "run" } as const;
    // A document opens in the viewer; a plan step or a run is named by its id.
    const named = (type: keyof typeof kinds, id: string) => type === "document"
      ? h("button", { type: "button", class: "link", onclick: () => openDoc(id) }, id) : id;
    const changes = [
      ...r.what_changed.created.map((c) => ({ ...c, change: "created" })),
      ...r.what_changed.updated.map((c) => ({ ...c, change: "updated" })),
    ];
    const related = { derived_from: "derived from", supports: "supports" } as const;
    const plans = r.artifacts.plans ?? [];
    replace(report,
      h("p", { class: "report-title" }, h("strong", {}, r.title)),
      r.summary ? [h("p", { "data-testid": "report-summary" }, run.questions.filter((q) => q.trim()).reduce((t, q) => t.split(q).join(asked(q)), r.summary)), h("p", { class: "muted" }, by)] : null,
      r.headline ? h("p", { "data-testid": "report-headline" }, h("span", { class: "muted" }, "Last step: "), r.headline) : null,
      criteria.length ? [h("h3", {}, "Completion criteria"), h("ol", { "data-testid": "report-criteria" }, criteria.map((c, i) => {
        const v = verdicts.find((x) => x.id === `c${i + 1}`);
        const text = criterionLabel(c);
        const evidence = typeof c === "string" && mapped(i, c).length ? ` — evidence: ${mapped(i, c).join(", ")}` : "";
        return h("li", { "data-testid": "report-criterion" }, text, h("span", { class: "muted" }, evidence),
          v ? h("span", { class: v.passed ? "verdict-pass" : "verdict-fail" }, ` — ${v.passed ? "✓ passed" : "✗ failed"} (${v.kind}): ${v.reason}`)
            : h("span", { class: "muted" }, typeof c === "string" && !evidence ? " — no evidence claimed" : " — not checked"));
      }))] : null,
      claim?.completion_evidence?.length ? [h("h3", {}, "Evidence"), h("ul", { "data-testid": "report-evidence" },
        claim.completion_evidence.map((e) => h("li", {}, e)))] : null,
      changes.length ? [h("h3", {}, "What changed"), h("ul", { "data-testid": "report-changes" },
        changes.map((c) => h("li", {}, `${kinds[c.type]} `, named(c.type, c.id),
          h("span", { class: "muted" }, ` ${c.change} in iteration ${c.iteration} — ${c.title}`))))] : null,
      r.what_changed.linked.length ? [h("h3", {}, "Links"), h("ul", { "data-testid": "report-links" }, r.what_changed.linked.map((l) =>
        h("li", {}, named(l.from_type, l.from_id), ` ${related[l.relationship]} `, l.to_type === "run" && l.to_id === run.id ? "this run" : named(l.to_type, l.to_id))))] : null,
      plans.map((p) => h("p", { "data-testid": "report-plan" }, h("strong", {}, "Plan: "),
        `${p.status.replace("_", " ")} — ${p.steps.filter((st) => st.status === "done").length} of ${p.steps.length} step(s) done`)),
      h("p", {}, h("strong", {}, "Stopping reason: "), `${r.stopping_reason.type} — ${r.stopping_reason.detail}`),
      r.sources?.length ? [h("h3", {}, "Sources"), h("ul", { "data-testid": "report-sources" }, r.sources.map((src) =>
        h("li", {}, sourceLink(src.source), h("span", { class: "muted" }, " cited by "),
          src.docs.map((p, i) => [i ? ", " : "", h("button", { type: "button", class: "link", onclick: () => openDoc(p) }, p)]))))] : null);
  }

  /** A criterion as a person reads it: its text, or what its check asks. */
  function criterionLabel(c: Run["completion_criteria"][number]): string {
    if (typeof c === "string") return c;
    switch (c.check) {
      case "contains": return `${c.doc} contains “${c.text}”`;
      case "matches": return `${c.doc} matches /${c.pattern}/`;
      case "command": return `\`${c.run}\` exits 0`;
      case "grader": return `graded: ${c.rubric}`;
    }
  }

  /** The outcome webhooks of this run, oldest first; only when it has any. */
  function renderDeliveries() {
    deliveriesCard.hidden = !s.deliveries.length;
    if (!s.deliveries.length) return;
    const state = (d: WebhookDelivery) => d.state === "given_up" ? "given up"
      : d.state === "pending" && d.next_attempt_at ? `pending, next attempt ${when(d.next_attempt_at)}` : d.state;
    replace(deliveries, rowTable("deliveries", ["URL", "State", "Attempts", "Last error"],
      s.deliveries.map((d) =>
        h("tr", { "data-state": d.state },
          h("td", {}, h("code", {}, d.url)),
          h("td", { class: d.state === "given_up" ? "error-inline" : "" }, state(d)),
          h("td", {}, count(d.attempts), d.history?.length
            ? h("details", {}, h("summary", {}, "each"), h("ol", { class: "attempts" }, d.history.map((a) =>
              h("li", {}, when(a.at), " — ", a.error ?? "delivered"))))
            : null),
          h("td", {}, d.last_error ?? "—")))));
  }

  // The runs this one spawned, as its own row keeps them: a detached child is not waited for
  // and outlives this run's end, so it is marked.
  function renderChildren(run: Run) {
    const kids = run.children ?? [];
    childrenCard.hidden = !kids.length;
    if (!kids.length) return;
    replace(children, rowTable("children", ["Run", "Status", "Spend", "Summary"],
      kids.map((c) =>
        h("tr", { "data-child": c.id },
          h("td", {}, h("a", { href: `/runs/${c.id}` }, c.objective),
            c.detached ? h("span", { class: "tag", title: "Not waited for; it outlives this run's end" }, "detached") : null),
          h("td", {}, statusBadge(c.status)),
          h("td", {}, `${count(c.tokens)} tokens · ${usd(c.cost_usd)}`),
          h("td", {}, c.summary ?? "—")))));
  }

  function why(it: Iteration): string {
    const r = it.stopping_reason;
    if (r?.type === "waiting_on_user") return `Waiting on you: ${asked(r.detail)}`;
    if (r?.type === "completed") return `Completed: ${r.detail}`;
    if (r) return `Stopped (${r.type.replace(/_/g, " ")}): ${r.detail}`;
    if (it.outcome === "waiting_on_user") return `Waiting on you: ${(it.status_block?.blocking_questions ?? []).join(" ") || "the run asked for input"}`;
    if (it.outcome === "waiting_on_children") return "Waiting on its child runs";
    if (it.outcome === "paused") return "Paused on request";
    const left = it.status_block?.remaining_work?.length ?? 0;
    const hint = it.hints?.length ? ` (hint: ${it.hints[0]})` : "";
    return `Continued: ${left ? `${left} item${left === 1 ? "" : "s"} of remaining work` : "the exit gate was not met"}${hint}`;
  }

  /**
   * The iteration at work, as far as the log tells: the API writes no event when a phase
   * begins, only one per model call when it returns (`iteration_cost_update`, with its role),
   * so the phase is the one after the last call logged, and the time counts from the moment
   * the iteration could start (the last commit, the run's creation, or the user's answer).
   */
  function inProgress(run: Run): { n: number; phase: string; label: string; since: number } | null {
    if (run.status !== "running" && run.status !== "queued") return null;
    const n = run.iteration + 1;
    if (run.agent) {
      const proc = s.agent ? runningProcess(s.agent) : null;
      return proc
        ? { n, phase: "agent", label: `the agent (${proc.agent}) is at work`, since: Date.parse(proc.start_time) }
        : { n, phase: "starting", label: "the agent is starting", since: Math.max(run.created_at, lastCommit()) };
    }
    let since = Math.max(run.created_at, lastCommit());
    let phase = run.status === "queued" ? "queued" : "planner";
    for (const e of s.events) {
      const p = e.payload as Record<string, unknown>;
      if (RESTARTS.includes(e.type) && e.at > since) { since = e.at; phase = "planner"; }
      if (p.iteration !== n) continue;
      if (e.type === "iteration_started") phase = phase === "queued" ? "planner" : phase;
      else if (e.type === "iteration_deferred") { phase = "deferred"; since = e.at; }
      else if (e.type === "iteration_cost_update") phase = AFTER_CALL[String(p.role)] ?? phase;
    }
    return { n, phase, label: PHASES[phase] ?? phase, since };
  }

  const lastCommit = () => s.iterations.length ? s.iterations[s.iterations.length - 1].committed_at : 0;

  function renderTimeline() {
    const live = s.run ? inProgress(s.run) : null;
    const now = live
      ? h("li", { class: "tl-item tl-live", "data-iteration": live.n, "data-testid": "iteration-in-progress", "data-phase": live.phase },
          h("div", { class: "tl-head" },
            h("span", { class: "pulse", "aria-hidden": "true" }),
            h("strong", {}, `Iteration ${live.n} in progress`),
            h("span", { class: "muted" }, "for ", elapsed(live.since))),
          h("p", { class: "phase" }, h("span", { class: "muted" }, "Phase: "), live.label),
          s.run?.agent ? null : h("p", { class: "why" }, "The phase is read from the model calls logged so far."))
      : null;
    if (!s.iterations.length) {
      replace(timeline, now ?? h("li", { class: "muted" }, "No iteration committed yet."));
      return;
    }
    replace(timeline, now, [...s.iterations].reverse().map((it) =>
      h("li", { class: `tl-item${it.error ? " tl-error" : ""}`, "data-iteration": it.n },
        h("div", { class: "tl-head" },
          h("strong", {}, `#${it.n}`),
          h("span", { class: "muted" }, `${count(it.metrics.input_tokens + it.metrics.output_tokens)} tokens · ${usd(it.metrics.cost_usd)} · ${duration(it.metrics.running_ms)}`),
          it.progress ? null : h("span", { class: "tag" }, "no progress")),
        h("p", {}, it.summary || "—"),
        it.error ? h("p", { class: "error-inline" }, `Error: ${it.error}`) : null,
        h("p", { class: "why" }, why(it)))));
  }

  function renderPlan(run: Run) {
    if (!run.plan.length) { replace(plan, h("li", { class: "muted" }, "No plan yet.")); return; }
    replace(plan, run.plan.map((st) =>
      h("li", { class: `step step-${st.status}` },
        h("span", { class: "step-status" }, st.status.replace(/_/g, " ")),
        h("span", {}, st.title),
        st.iteration_last_touched ? h("span", { class: "muted" }, ` · #${st.iteration_last_touched}`) : null)));
  }

  function renderOutputs() {
    const docs = [...s.docs].sort((a, b) => b.updated_iteration - a.updated_iteration || a.path.localeCompare(b.path));
    if (!docs.length) { replace(outputs, h("li", { class: "muted" }, "No documents yet.")); return; }
    replace(outputs, docs.map((d) =>
      h("li", {},
        h("button", { type: "button", class: "link", onclick: () => openDoc(d.path) }, d.title || d.path),
        h("span", { class: "muted" }, d.version > 1
          ? ` updated in #${d.updated_iteration} (v${d.version})` : ` created in #${d.created_iteration}`))));
  }

  function renderTree() {
    if (!s.tree || !s.tree.children.length) { replace(tree, h("p", { class: "muted" }, "The workspace is empty.")); return; }
    const node = (n: TreeNode): HTMLElement => {
      if (!n.children.length && n.doc) {
        return h("li", {}, h("button", { type: "button", class: "link doc-link", "data-path": n.path, onclick: () => openDoc(n.path) },
          n.name), h("span", { class: "muted" }, ` ${n.doc.bytes} B`));
      }
      const det = h("details", { open: openDirs.has(n.path) || n.path.split("/").length < 2 },
        h("summary", {}, `${n.name}/`), h("ul", {}, n.children.map(node)));
      det.addEventListener("toggle", () => (det.open ? openDirs.add(n.path) : openDirs.delete(n.path)));
      return h("li", {}, det);
    };
    replace(tree, h("ul", { class: "tree-root" }, s.tree.children.map(node)));
  }

  async function openDoc(path: string) {
    try {
      const d = await ctx.api.doc(id, path);
      replace(docView,
        h("h3", {}, d.title || d.path),
        h("p", { class: "muted" }, `${d.path} · version ${d.version} · created in #${d.created_iteration}, updated in #${d.updated_iteration}`),
        // Markdown documents (what a run writes) are rendered; any other file stays as written.
        /\.(md|markdown)$/i.test(d.path) || !/\.[^/]+$/.test(d.path)
          ? h("div", { class: "doc-content", "data-testid": "doc-body" }, markdown(d.content))
          : h("pre", { class: "doc-content", "data-testid": "doc-body" }, d.content),
        d.sources?.length ? [h("h4", {}, "Sources"), h("ul", { "data-testid": "doc-sources" }, d.sources.map((src) => h("li", {}, sourceLink(src))))] : null);
      docView.focus();
    } catch (e) {
      ctx.fail(e);
    }
  }

  function entry(e: ScratchEntry) {
    return h("li", {},
      h("strong", {}, `#${e.n} `), e.summary,
      e.artifacts.length ? h("div", { class: "muted" }, e.artifacts.join(", ")) : null,
      e.remaining_work.length ? h("div", { class: "muted" }, `remaining: ${e.remaining_work.join("; ")}`) : null);
  }

  function renderScratch() {
    replace(scratch,
      s.scratch.length ? h("ol", { class: "scratch-list" }, s.scratch.map(entry)) : h("p", { class: "muted" }, "Empty so far."),
      h("button", { type: "button", onclick: () => { s.allScratch = !s.allScratch; void refresh(); } },
        s.allScratch ? "Show the last 3" : "Show all entries"));
  }

  function renderLive() {
    replace(liveList, s.events.length
      ? [...s.events].reverse().slice(0, 30).map((e) =>
          h("li", { "data-seq": e.seq }, h("time", {}, new Date(e.at).toLocaleTimeString()), " ", h("code", {}, e.type), " ", summarize(e)))
      : h("li", { class: "muted" }, "No events yet."));
    replace(liveScratch, s.scratch.length ? h("ol", {}, s.scratch.slice(-3).map(entry)) : h("p", { class: "muted" }, "Empty so far."));
  }

  // The recent past of the log, so the live view is not empty on arrival.
  ctx.api.getRun(id).then((run) => ctx.api.eventsPage(id, { after: Math.max(0, run.event_seq - 30) })).then((page) => {
    if (closed) return;
    s.events = [...page.events, ...s.events.filter((e) => e.seq > page.next_after)];
    renderLive();
  }).catch(() => undefined);
  void refresh();
  const timer = setInterval(() => { if (s.run && !settled(s.run)) soon(); }, 5000);
  const ticker = setInterval(() => tickElapsed(root), 1000);
  // An agent at work writes no events until its iteration commits: its tail and bus are polled.
  const agentPoll = setInterval(async () => {
    if (closed || !s.run?.agent || ENDED.includes(s.run.status)) return;
    try { agent.show(await ctx.api.agent(id)); } catch { /* the next refresh reports it */ }
  }, 2000);

  return () => {
    clearInterval(agentPoll);
    closed = true;
    clearInterval(timer);
    clearInterval(ticker);
    follower?.stop();
    if (dialog.open) dialog.close();
  };
};

/** Events after which an iteration can start anew. */
const RESTARTS = ["user_responded", "run_resumed", "run_continued", "follow_up_asked"];

/** The phase that follows a model call of each role. */
const AFTER_CALL: Record<string, string> = { planner: "tools", executor: "executors", repair: "repair", reporter: "report" };

const PHASES: Record<string, string> = {
  queued: "queued, waiting for a worker",
  planner: "planner: the model is choosing the next steps",
  tools: "tools and executors: the planner has answered, its tool calls and tasks are running",
  executors: "executors: working through the planner's tasks",
  repair: "repair: fixing tool calls that were refused",
  report: "report: writing the run's narrative",
  deferred: "deferred: given back to be tried again shortly",
};

function summarize(e: RunEvent): string {
  const p = e.payload ?? {};
  switch (e.type) {
    case "iteration_cost_update":
      return `${p.role ?? "call"}: ${count(Number(p.input_tokens ?? 0) + Number(p.output_tokens ?? 0))} tokens, ${usd(p.cost_usd as number | null)}`;
    case "iteration_started":
      return `iteration ${p.iteration}`;
    case "iteration_committed":
      return `iteration ${p.iteration} committed`;
    case "waiting_for_capacity":
      return `${p.role ?? "call"} waited ${(Number(p.waited_ms ?? 0) / 1000).toFixed(1)} s for ${p.model}'s capacity (not running time)`;
    default:
      return typeof p.detail === "string" ? p.detail : typeof p.message === "string" ? p.message : "";
  }
}
