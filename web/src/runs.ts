// The runs list, its filters and the start composer.

import { ENDED, type Budgets, type RunStatus, type ServerConfig } from "./api";
import type { Ctx, Page } from "./app";
import { h, replace } from "./dom";
import { count, statusBadge, usd, when } from "./format";

const FILTERS: [string, string][] = [
  ["", "All"], ["running", "Running"], ["queued", "Queued"], ["waiting_on_user", "Waiting on you"],
  ["completed", "Completed"], ["stopped", "Stopped"], ["failed", "Failed"], ["canceled", "Canceled"],
];

export const runsPage: Page = (ctx, root) => {
  let filter = new URLSearchParams(location.search).get("status") ?? "";
  const list = h("div", { class: "runs", "aria-live": "polite" }, h("p", { class: "muted" }, "Loading runs…"));
  const active = h("p", { class: "active-count", "data-testid": "active-count" });
  const filters = h("div", { class: "filters", role: "group", "aria-label": "Filter runs by status" },
    FILTERS.map(([value, label]) =>
      h("button", {
        type: "button", class: "chip", "aria-pressed": String(value === filter), "data-filter": value,
        onclick: (ev: Event) => {
          filter = value;
          filters.querySelectorAll("button").forEach((b) => b.setAttribute("aria-pressed", String(b === ev.currentTarget)));
          history.replaceState(null, "", value ? `/?status=${value}` : "/");
          void load();
        },
      }, label)));

  async function load() {
    try {
      const page = await ctx.api.listRunsPage({ status: (filter || undefined) as RunStatus | undefined });
      active.textContent = `${page.active} of ${page.active_limit} active runs`;
      if (!page.runs.length) {
        replace(list, h("p", { class: "muted" }, filter ? "No runs with this status." : "No runs yet: start one above."));
        return;
      }
      replace(list, h("ul", { class: "run-list" }, page.runs.map((r) =>
        h("li", { class: "run-row", "data-run-id": r.id },
          h("a", { href: `/runs/${r.id}`, class: "run-link" }, r.objective),
          // A child run is listed with the rest; this leads to the run that spawned it.
          r.parent_run_id
            ? h("a", { href: `/runs/${r.parent_run_id}`, class: "tag parent-link", title: `Spawned by run ${r.parent_run_id}` }, "child run")
            : null,
          h("div", { class: "run-meta" },
            statusBadge(r.status),
            h("span", {}, `iteration ${r.iteration}`),
            h("span", {}, `${count(r.tokens)} tokens`),
            h("span", {}, usd(r.cost_usd)),
            h("time", { datetime: new Date(r.created_at).toISOString() }, when(r.created_at)),
            r.stopping_reason && ENDED.includes(r.status) ? h("span", { class: "muted" }, r.stopping_reason.type) : null)))));
    } catch (e) {
      ctx.fail(e);
      replace(list, h("p", { class: "error-inline" }, "The runs could not be loaded."));
    }
  }

  replace(root,
    h("section", { class: "card", "aria-labelledby": "composer-h" },
      h("h1", { id: "composer-h" }, "Start a run"),
      composer(ctx)),
    h("section", { class: "card", "aria-labelledby": "runs-h" },
      h("div", { class: "section-head" }, h("h2", { id: "runs-h" }, "Runs"), active),
      filters, list));
  void load();
  const timer = setInterval(load, 3000);
  return () => clearInterval(timer);
};

function composer(ctx: Ctx): HTMLElement {
  const objective = h("textarea", { id: "objective", name: "objective", rows: 3, required: true, placeholder: "What should the agent get done?" });
  const model = h("select", { id: "model", name: "model" });
  const mode = h("select", { id: "permission_mode", name: "permission_mode" });
  const budget = (id: string, label: string, hint: string, step = "1") =>
    h("div", { class: "field" },
      h("label", { for: id }, label),
      h("input", { id, name: id, type: "number", min: "0", step, inputmode: "decimal", "aria-describedby": `${id}-hint` }),
      h("small", { id: `${id}-hint`, class: "muted" }, hint));
  const submit = h("button", { type: "submit", class: "primary" }, "Start run");
  const form = h("form", { class: "composer", novalidate: true },
    h("div", { class: "field" }, h("label", { for: "objective" }, "Objective"), objective),
    h("div", { class: "field" }, h("label", { for: "model" }, "Model"), model),
    h("details", { class: "advanced" },
      h("summary", {}, "Advanced"),
      h("div", { class: "grid" },
        budget("max_iterations", "Max iterations", "default 25"),
        budget("max_running_minutes", "Max running time (minutes)", "running time only; default 60"),
        budget("max_tokens", "Max tokens", "none by default"),
        budget("max_cost_usd", "Max cost (USD)", "none by default", "0.01"),
        h("div", { class: "field" }, h("label", { for: "permission_mode" }, "Permission mode"), mode))),
    submit);

  ctx.serverConfig().then((c: ServerConfig) => {
    replace(model, c.models.map((m) => h("option", { value: m, selected: m === c.default_model }, m)));
    replace(mode, c.permission_modes.map((m) => h("option", { value: m }, m.replace(/_/g, " "))));
    placeholders(form, c.default_budgets);
  }).catch(ctx.fail);

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!objective.value.trim()) {
      ctx.fail(new Error("Write an objective first."));
      objective.focus();
      return;
    }
    const num = (id: string) => {
      const v = (form.querySelector(`#${id}`) as HTMLInputElement).value.trim();
      return v === "" ? undefined : Number(v);
    };
    const minutes = num("max_running_minutes");
    const budgets = {
      max_iterations: num("max_iterations"),
      max_running_ms: minutes === undefined ? undefined : Math.round(minutes * 60_000),
      max_tokens: num("max_tokens"),
      max_cost_usd: num("max_cost_usd"),
    };
    submit.disabled = true;
    try {
      const run = await ctx.api.createRun({
        objective: objective.value.trim(),
        model: model.value || null,
        permission_mode: (mode.value || null) as "autopilot" | "approve_plan" | "per_write" | null,
        budgets,
      });
      ctx.clearError();
      ctx.navigate(`/runs/${run.id}`);
    } catch (e) {
      ctx.fail(e);
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

function placeholders(form: HTMLElement, b: Budgets) {
  const set = (id: string, v: number | null) => {
    const el = form.querySelector(`#${id}`) as HTMLInputElement | null;
    if (el && v !== null) el.placeholder = String(v);
  };
  set("max_iterations", b.max_iterations);
  set("max_running_minutes", Math.round(b.max_running_ms / 60_000));
  set("max_tokens", b.max_tokens);
  set("max_cost_usd", b.max_cost_usd);
}

export type { RunStatus };
