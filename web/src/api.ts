// The API client: bearer auth, problem+json errors turned into readable messages.

import type { ConsoleConfig } from "./config";
import { currentToken, signOut } from "./auth";

export class ApiError extends Error {
  constructor(
    public status: number,
    public title: string,
    public detail: string,
  ) {
    super(detail ? `${title}: ${detail}` : title);
  }
}

export type RunStatus =
  | "queued" | "running" | "waiting_on_user" | "waiting_on_children" | "paused"
  | "completed" | "stopped" | "canceled" | "failed";

export const ENDED: RunStatus[] = ["completed", "stopped", "canceled", "failed"];
export const isActive = (s: RunStatus) => s === "queued" || s === "running";

export interface Budgets {
  max_iterations: number;
  max_running_ms: number;
  max_tokens: number | null;
  max_cost_usd: number | null;
}

export interface ModelUsage { calls: number; cost_usd: number | null; input_tokens: number; output_tokens: number }

export interface Metrics {
  input_tokens: number; output_tokens: number; cached_tokens: number; cost_usd: number;
  running_ms: number; iterations: number; llm_calls: number; docs: number; unpriced_calls: number;
  children_cost_usd: number; children_tokens: number; by_model: Record<string, ModelUsage>;
}

export interface PlanStep { id: string; title: string; status: string; iteration_last_touched?: number }
export interface StoppingReason { type: string; detail: string }
export interface Artifact { path: string; title?: string; bytes: number; version: number }

export interface Report {
  title: string; summary: string; status: RunStatus; stopping_reason: StoppingReason;
  artifacts: Artifact[]; what_changed: { created: string[]; updated: string[]; linked: string[] };
  metrics: Record<string, unknown>; [k: string]: unknown;
}

export interface Run {
  id: string; objective: string; status: RunStatus; model: string; models?: string[];
  iteration: number; created_at: number; updated_at: number; ended_at: number | null;
  budgets: Budgets; metrics: Metrics; tokens: number; plan: PlanStep[];
  questions: string[]; remaining_work: string[]; stopping_reason: StoppingReason | null;
  report: Report | null; streaks: { no_progress: number; error: number; repeat: number };
  permission_mode: string; pending_calls: unknown[]; cancel_requested: boolean;
  pause_requested: boolean; link: string; event_seq: number;
  thresholds?: { no_progress_limit: number; repeated_action_limit: number; repeated_error_limit: number };
}

export interface RunSummary {
  id: string; objective: string; status: RunStatus; iteration: number; created_at: number;
  updated_at: number; tokens: number; cost_usd: number; stopping_reason: StoppingReason | null; link: string;
}

export interface Iteration {
  n: number; outcome: string; summary: string; error: string | null; progress: boolean;
  started_at: number; committed_at: number; stopping_reason: StoppingReason | null;
  hints: string[]; created_docs: string[]; updated_docs: string[];
  metrics: { cost_usd: number | null; input_tokens: number; output_tokens: number; llm_calls: number; running_ms: number };
  status_block: { next_action_hint?: string; remaining_work?: string[]; blocking_questions?: string[] } | null;
}

export interface RunEvent { seq: number; at: number; type: string; run_id: string; payload: Record<string, unknown> }
export interface DocMeta { path: string; title?: string; bytes: number; version: number; created_iteration: number; updated_iteration: number }
export interface Doc extends DocMeta { content: string }
export interface TreeNode { name: string; path: string; doc: DocMeta | null; children: TreeNode[] }
export interface ScratchEntry { n: number; at: number; summary: string; actions: string[]; results: string[]; artifacts: string[]; plan_changes: string[]; remaining_work: string[] }
export interface Notification { id: string; run_id: string; status: string; title: string; summary: string; link: string; read: boolean; at: number }
export interface ServerConfig { models: string[]; default_model: string; default_budgets: Budgets; active_limit: number; permission_modes: string[] }

export class Api {
  constructor(private config: ConsoleConfig) {}

  url(path: string): string {
    return `${this.config.apiUrl}${path}`;
  }

  async request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json" };
    const token = currentToken();
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await fetch(this.url(path), {
        method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      if ((e as Error).name === "AbortError") throw e;
      throw new ApiError(0, "The API cannot be reached", `${this.url(path)} did not answer; is the server running?`);
    }
    if (res.ok) return (await res.json()) as T;
    throw await problem(res);
  }

  get<T>(path: string, signal?: AbortSignal) { return this.request<T>("GET", path, undefined, signal); }
  post<T>(path: string, body: unknown = {}) { return this.request<T>("POST", path, body); }

  runs(status: string) {
    const q = status ? `?status=${encodeURIComponent(status)}` : "";
    return this.get<{ runs: RunSummary[]; active: number; active_limit: number }>(`/v1/runs${q}`);
  }
  run(id: string) { return this.get<Run>(`/v1/runs/${enc(id)}`); }
  iterations(id: string) { return this.get<{ iterations: Iteration[] }>(`/v1/runs/${enc(id)}/iterations?limit=500`); }
  workspace(id: string) { return this.get<{ tree: TreeNode; docs: DocMeta[] }>(`/v1/runs/${enc(id)}/workspace`); }
  doc(id: string, path: string) {
    return this.get<Doc>(`/v1/runs/${enc(id)}/docs/${path.split("/").map(encodeURIComponent).join("/")}`);
  }
  scratchpad(id: string, last: number) { return this.get<{ entries: ScratchEntry[] }>(`/v1/runs/${enc(id)}/scratchpad?last=${last}`); }
  events(id: string, after: number, wait: number, signal?: AbortSignal) {
    return this.get<{ events: RunEvent[]; next_after: number }>(`/v1/runs/${enc(id)}/events?after=${after}&wait=${wait}`, signal);
  }
  notifications() { return this.get<{ notifications: Notification[]; unread: number }>("/v1/notifications"); }
  markRead(ids: string[]) { return this.post<{ updated: number }>("/v1/notifications/read", { ids }); }
  serverConfig() { return this.get<ServerConfig>("/v1/config"); }
}

const enc = encodeURIComponent;

async function problem(res: Response): Promise<ApiError> {
  let title = res.statusText || `HTTP ${res.status}`;
  let detail = "";
  try {
    const body = await res.json();
    if (body && typeof body === "object") {
      title = String(body.title ?? title);
      detail = String(body.detail ?? "");
    }
  } catch {
    detail = `The server answered ${res.status} without a readable body.`;
  }
  if (res.status === 401) signOut(false);
  return new ApiError(res.status, title, detail);
}
