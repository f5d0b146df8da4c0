import type { RunStatus } from "./api";
import { h } from "./dom";

/**
 * Dollars with the precision a model call's cost needs: cents from a dollar up, and three
 * significant digits below it (never fewer than two decimals), so $0.0121 is not shown as $0.01.
 */
export function usd(v: number | null | undefined): string {
  if (v === null || v === undefined) return "unknown";
  if (v === 0) return "$0.00";
  const a = Math.abs(v);
  if (a >= 1) return `${v < 0 ? "-" : ""}$${a.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
  const decimals = Math.min(10, Math.max(2, 2 - Math.floor(Math.log10(a))));
  const fixed = a.toFixed(decimals).replace(/(\.\d\d\d*?)0+$/, "$1");
  return `${v < 0 ? "-" : ""}$${fixed}`;
}

export function count(n: number | null | undefined): string {
  return (n ?? 0).toLocaleString("en-US");
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

const sinceText = (since: number, base: number) => {
  const ms = base + Math.max(0, Date.now() - since);
  return ms < 1000 ? "0 s" : duration(ms);
};

/** The time since `since` (plus `base`), in a span that `tickElapsed` keeps current. */
export function elapsed(since: number, base = 0): HTMLElement {
  return h("span", { class: "elapsed", "data-since": since, "data-base": base }, sinceText(since, base));
}

/** Brings every `elapsed` span under `root` up to now: a page calls it once a second. */
export function tickElapsed(root: ParentNode) {
  root.querySelectorAll<HTMLElement>("[data-since]").forEach((el) => {
    el.textContent = sinceText(Number(el.dataset.since), Number(el.dataset.base ?? 0));
  });
}

/**
 * What a waiting run asked, in one line. The plan awaiting approval comes as one string with
 * the API's instructions ("Respond with approve: true …") and a "- [status] title" line per
 * step; it reads as "Approve this plan: step; step; step".
 */
export function asked(question: string): string {
  const [first, ...lines] = question.split("\n");
  if (!/^Approve this plan\?/.test(first)) return question.replace(/\s*\n\s*/g, " ");
  const steps = lines.map((l) => /^\s*- \[[\w ]+\] (.*)$/.exec(l)?.[1]).filter((t) => t);
  return steps.length ? `Approve this plan: ${steps.join("; ")}` : "Approve this plan?";
}

export function when(ms: number | null | undefined): string {
  if (!ms) return "—";
  return new Date(ms).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

const LABEL: Record<RunStatus, string> = {
  queued: "Queued", running: "Running", waiting_on_user: "Waiting on you",
  waiting_on_children: "Waiting on child runs", paused: "Paused", completed: "Completed",
  stopped: "Stopped", canceled: "Canceled", failed: "Failed",
};

export function statusBadge(s: RunStatus): HTMLElement {
  const live = s === "queued" || s === "running";
  return h("span", { class: `badge badge-${s}`, "data-status": s },
    live ? h("span", { class: "pulse", "aria-hidden": "true" }) : null,
    LABEL[s] ?? s);
}

export function statusLabel(s: RunStatus): string {
  return LABEL[s] ?? s;
}
