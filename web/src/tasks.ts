// The tasks a terminal started with `longrun task` on the server's machine, read-only: the list,
// and one task's folder as an agent run's is shown (processes, live output, bus, TASK_STATE.md,
// output.md) under its TASK.md. While the task runs its bus is followed over server-sent events
// and every message refreshes the folder at once; a slower poll catches the rest (the tail).

import type { TaskStatus, TaskSummary } from "../../clients/typescript/src/index";
import type { Ctx, Page } from "./app";
import { agentPanel } from "./agent";
import { h, replace } from "./dom";
import { count, usd, when } from "./format";
import { markdown } from "./markdown";

const LABEL: Record<TaskStatus, string> = { running: "Running", done: "Done", ended: "Ended" };
const BADGE: Record<TaskStatus, string> = { running: "running", done: "completed", ended: "stopped" };

function taskBadge(s: TaskStatus): HTMLElement {
  return h("span", { class: `badge badge-${BADGE[s]}`, "data-status": s },
    s === "running" ? h("span", { class: "pulse", "aria-hidden": "true" }) : null, LABEL[s]);
}

const taskHref = (t: { project: string; task: string }) =>
  `/tasks/${encodeURIComponent(t.project)}/${encodeURIComponent(t.task)}`;

function spend(t: TaskSummary): string {
  const tokens = t.input_tokens + t.output_tokens;
  return [`${t.processes} process${t.processes === 1 ? "" : "es"}`,
    tokens ? `${count(tokens)} tokens` : "", t.cost_usd != null ? usd(t.cost_usd) : ""]
    .filter(Boolean).join(" · ");
}

export const tasksPage: Page = (ctx, root) => {
  const list = h("div", { class: "runs", "aria-live": "polite" }, h("p", { class: "muted" }, "Loading tasks…"));
  replace(root, h("section", { class: "card", "aria-labelledby": "tasks-h" },
    h("h1", { id: "tasks-h" }, "Terminal tasks"),
    h("p", { class: "muted" }, "Tasks started with ", h("code", {}, "longrun task"),
      " on this server's machine, read-only. Agent runs started here are under Runs."),
    list));
  async function load() {
    try {
      const { tasks } = await ctx.api.tasks();
      if (!tasks.length) {
        replace(list, h("p", { class: "muted" }, "No tasks: start one in a terminal with ",
          h("code", {}, "longrun task <project> <task> --objective \"…\""), "."));
        return;
      }
      replace(list, h("ul", { class: "run-list" }, tasks.map((t) =>
        h("li", { class: "run-row", "data-task": `${t.project}/${t.task}` },
          h("a", { href: taskHref(t), class: "run-link" }, t.title || `${t.project}/${t.task}`),
          h("div", { class: "run-meta" },
            taskBadge(t.status),
            h("code", {}, `${t.project}/${t.task}`),
            t.agent ? h("span", {}, t.agent) : null,
            h("span", {}, spend(t)),
            t.updated ? h("time", { datetime: t.updated }, when(Date.parse(t.updated))) : null)))));
    } catch (e) {
      ctx.fail(e);
      replace(list, h("p", { class: "error-inline" }, "The tasks could not be loaded."));
    }
  }
  void load();
  const timer = setInterval(load, 5000);
  return () => clearInterval(timer);
};

export const taskPage: Page = (ctx: Ctx, root, params) => {
  const project = decodeURIComponent(params.project);
  const task = decodeURIComponent(params.task);
  const title = h("h1", { class: "run-title" }, `${project}/${task}`);
  const meta = h("div", { class: "run-meta" });
  const objective = h("div", { class: "doc-content" });
  const agent = agentPanel();
  replace(root, h("article", { class: "run-page" },
    h("header", { class: "run-head" },
      h("p", { class: "crumbs" }, h("a", { href: "/tasks" }, "Tasks"), " / ", h("code", {}, `${project}/${task}`)),
      title, meta),
    h("section", { class: "card", "aria-labelledby": "task-md-h" }, h("h2", { id: "task-md-h" }, "TASK.md"), objective),
    agent.el));

  const abort = new AbortController();
  let running = true;
  async function refresh() {
    try {
      const view = await ctx.api.task(project, task);
      const s = view.summary;
      running = s.status === "running";
      document.title = `${s.title || task} · longrun`;
      replace(title, s.title || `${project}/${task}`);
      replace(meta, taskBadge(s.status), h("span", {}, spend(s)), s.agent ? h("span", {}, s.agent) : null,
        s.started ? h("span", {}, "started ", when(Date.parse(s.started))) : null);
      replace(objective, view.objective ? markdown(view.objective) : h("p", { class: "muted" }, "(empty)"));
      agent.show(view.folder);
    } catch (e) {
      ctx.fail(e);
    }
  }
  // Each bus message refreshes the folder at once; the stream ends when nothing of it runs.
  async function follow() {
    try {
      for await (const _ of ctx.api.bus({ project, task }, { signal: abort.signal })) void refresh();
    } catch (e) {
      if (!abort.signal.aborted) ctx.fail(e);
    }
    if (!abort.signal.aborted) void refresh();
  }
  void refresh().then(follow);
  const timer = setInterval(() => { if (running) void refresh(); }, 3000);
  return () => { abort.abort(); clearInterval(timer); };
};
