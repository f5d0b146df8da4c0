import type { RunStatus } from "./api";
import { h } from "./dom";

export function usd(v: number | null | undefined): string {
  if (v === null || v === undefined) return "unknown";
  if (v === 0) return "$0.00";
  return v < 0.01 ? `$${v.toFixed(4)}` : `$${v.toFixed(2)}`;
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
