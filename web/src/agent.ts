// An agent run's task folder on the run page: the chain of agent processes (one per iteration,
// with the children each delegated to under it), the live tail of the newest one, the message
// bus, TASK_STATE.md and the latest output. Messages to the agent go through the page's "Tell
// the run" box, which reaches the bus at once.

import type { AgentProcessInfo, AgentView } from "../../clients/typescript/src/index";
import { h, replace } from "./dom";
import { count, duration, elapsed, usd } from "./format";
import { markdown } from "./markdown";

export interface AgentPanel {
  el: HTMLElement;
  show(view: AgentView): void;
}

/** The newest root process still running: the one the run's current iteration is. */
export function runningProcess(view: AgentView): AgentProcessInfo | null {
  return [...view.processes].reverse().find((p) => !p.parent_run_id && !p.end_time) ?? null;
}

function processLine(p: AgentProcessInfo): HTMLElement {
  const started = Date.parse(p.start_time);
  const state = p.end_time
    ? [`${p.ended ?? "ended"}${p.exit_code != null ? ` (exit ${p.exit_code})` : ""}`,
       Number.isFinite(started) ? ` after ${duration(Date.parse(p.end_time) - started)}` : ""]
    : ["running for ", elapsed(started)];
  return h("span", { class: "agent-proc" },
    h("code", {}, p.run_id), " ",
    p.iteration != null ? `iteration ${p.iteration} · ` : "",
    `${p.agent} · `, state,
    p.input_tokens + p.output_tokens > 0
      ? ` · ${count(p.input_tokens + p.output_tokens)} tokens${p.cost_usd != null ? ` · ${usd(p.cost_usd)}` : ""}`
      : "");
}

/** Roots in order, each with its children nested under it. */
function chain(procs: AgentProcessInfo[]): HTMLElement {
  const kids = (parent: string): HTMLElement | null => {
    const mine = procs.filter((p) => p.parent_run_id === parent);
    return mine.length ? h("ul", { class: "agent-children" }, mine.map((p) => h("li", {}, processLine(p), kids(p.run_id)))) : null;
  };
  const roots = procs.filter((p) => !p.parent_run_id);
  if (!roots.length) return h("p", { class: "muted" }, "No agent process has started yet.");
  return h("ol", { class: "agent-chain" }, roots.map((p) => h("li", {}, processLine(p), kids(p.run_id))));
}

export function agentPanel(): AgentPanel {
  const procs = h("div", {});
  const tail = h("pre", { class: "doc-content agent-tail", "aria-live": "off" });
  const bus = h("ol", { class: "agent-bus" });
  const state = h("div", { class: "doc-content" });
  const output = h("div", { class: "doc-content" });
  const el = h("section", { class: "card", id: "agent", "aria-labelledby": "agent-h" },
    h("h2", { id: "agent-h" }, "Agent"),
    h("p", { class: "muted agent-dir" }),
    h("h3", {}, "Processes"), procs,
    h("h3", {}, "Live output"), tail,
    h("h3", {}, "Message bus"), bus,
    h("h3", {}, "TASK_STATE.md"), state,
    h("h3", {}, "output.md"), output);
  return {
    el,
    show(view) {
      replace(el.querySelector(".agent-dir")!, "Task folder: ", h("code", {}, view.task_dir));
      replace(procs, chain(view.processes));
      replace(tail, view.tail || "(no output yet)");
      replace(bus, view.bus.length
        ? view.bus.slice(-50).map((m) => h("li", { "data-type": m.type },
            h("span", { class: "agent-bus-type" }, m.type), " ", m.body))
        : h("li", { class: "muted" }, "Nothing on the bus yet."));
      replace(state, view.task_state ? markdown(view.task_state) : h("p", { class: "muted" }, "(empty)"));
      replace(output, view.output ? markdown(view.output) : h("p", { class: "muted" }, "(none yet)"));
    },
  };
}
