// A typed client for the longrun API. No runtime dependencies: `fetch`, `TextDecoderStream`
// and WebCrypto, which Node 20+, Deno, Bun and browsers all have.

import type { components } from "./schema.js";
import type { RunEvent } from "./events.js";

export type { CallDecided, EventKind, EventPayload, EventPayloads, RunEvent, SupersededReport } from "./events.js";

type S = components["schemas"];

/** What the server sends: the document marks fields with defaults optional, because requests
 * may leave them out, but responses always carry them. */
type Sent<T> = T extends (infer U)[] ? Sent<U>[] : T extends object ? { [K in keyof T]-?: Sent<T[K]> } : T;

// Request bodies, as the document describes them.
export type CreateRun = S["RunTemplate"];
export type BudgetsInput = S["BudgetsInput"];
export type RespondBody = S["RespondBody"];
export type ContinueBody = S["ContinueBody"];
export type FollowUpBody = S["FollowUpBody"];
export type RunPatch = S["RunPatch"];
export type CreateSchedule = S["CreateSchedule"];
export type Webhook = S["Webhook"];
export type RegisterTool = S["RegisterTool"];

// What the API answers.
export type RunStatus = S["RunStatus"];
export type Budgets = Sent<S["Budgets"]>;
export type Metrics = Sent<S["Metrics"]>;
export type PlanStep = Sent<S["PlanStep"]>;
export type StoppingReason = Sent<S["StoppingReason"]>;
export type Report = Sent<S["Report"]>;
export type ArtifactRef = Sent<S["ArtifactRef"]>;
export type IterationRecord = Sent<S["IterationRecord"]>;
export type Doc = Sent<S["Doc"]>;
export type DocHit = Sent<S["DocHit"]>;
export type PadEntry = Sent<S["PadEntry"]>;
export type Notification = Sent<S["Notification"]>;
export type Schedule = Sent<S["Schedule"]>;
export type Problem = Sent<S["Problem"]>;
export type AgentView = Sent<S["AgentView"]>;
export type AgentProcessInfo = Sent<S["AgentProcessInfo"]>;
export type BusMessage = Sent<S["BusMessage"]>;
export type TaskStatus = S["TaskStatus"];
export type TaskSummary = Sent<S["TaskSummary"]>;
export type TaskView = Sent<S["TaskView"]>;
export type WebhookDelivery = Sent<S["DeliveryView"]>;

/** A run as the API shows it: the stored run plus its deep link and token total. */
export type Run = Sent<S["Run"]> & { link: string; tokens: number };

/** One row of `GET /v1/runs`. */
export type RunSummary = Sent<S["RunSummary"]>;

export interface RunPage {
  runs: RunSummary[]; next_cursor: string | null; active: number; active_limit: number;
}

export interface DocMeta {
  path: string; title?: string | null; bytes: number; version: number;
  created_iteration: number; updated_iteration: number;
}
export interface TreeNode { name: string; path: string; doc: DocMeta | null; children: TreeNode[] }

export interface ServerConfig {
  models: string[]; default_model: string; default_budgets: Budgets; active_limit: number;
  permission_modes: string[]; [k: string]: unknown;
}

export const ENDED: readonly RunStatus[] = ["completed", "stopped", "canceled", "failed"];
/** Statuses in which a run's log stops growing until someone acts. */
export const SETTLED: readonly RunStatus[] = [...ENDED, "waiting_on_user", "waiting_on_children"];

/** An RFC 7807 problem the API answered with, or (status 0) an API that could not be reached. */
export class LongrunError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly type?: string,
  ) {
    super(detail ? `${title}: ${detail}` : title);
    this.name = "LongrunError";
  }
}

export interface ClientOptions {
  /** Where the API is, e.g. `http://127.0.0.1:8080` (no trailing `/v1`). */
  baseUrl: string;
  /** A bearer token, or a function read before every request (for tokens that refresh). */
  token?: string | (() => string | null | undefined);
  /** Called when the API answers 401 (e.g. to sign the user out). */
  onUnauthorized?: () => void;
  fetch?: typeof fetch;
}

export interface CreateOptions {
  /** The create's `Idempotency-Key`; a fresh UUID by default. Pass your own to make a create
   * idempotent across processes (the server keeps a key 24 hours, per user). */
  idempotencyKey?: string;
  /** Attempts when the answer is lost or the server is unavailable (default 3). */
  attempts?: number;
  signal?: AbortSignal;
}

export interface EventsOptions {
  /** Start after this seq (0: from the first event). */
  after?: number;
  /** `sse` (server-sent events), `poll` (long-poll, e.g. behind API Gateway) or `auto`:
   * SSE, falling back to long-poll when the server cannot stream. */
  transport?: "auto" | "sse" | "poll";
  signal?: AbortSignal;
  /** Delay before the first reconnect; doubles up to 8 s. */
  retryMs?: number;
  /** Told when the connection drops (`reconnecting`) and when events flow again (`live`). */
  onState?: (state: "live" | "reconnecting") => void;
}

const enc = encodeURIComponent;
const docPath = (path: string) => path.split("/").map(enc).join("/");

export class LongrunClient {
  private readonly base: string;
  private readonly fetcher: typeof fetch;

  constructor(private readonly opts: ClientOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, "");
    this.fetcher = opts.fetch ?? ((input, init) => fetch(input, init));
  }

  url(path: string): string {
    return `${this.base}${path}`;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const token = typeof this.opts.token === "function" ? this.opts.token() : this.opts.token;
    return token ? { ...extra, authorization: `Bearer ${token}` } : extra;
  }

  private async send(path: string, init: RequestInit): Promise<Response> {
    let res: Response;
    try {
      res = await this.fetcher(this.url(path), init);
    } catch (e) {
      if ((e as Error).name === "AbortError") throw e;
      throw new LongrunError(0, "The API cannot be reached", `${this.url(path)} did not answer: ${(e as Error).message}`);
    }
    if (res.ok) return res;
    throw await problem(res, this.opts.onUnauthorized);
  }

  /** Any API call; the typed methods below are built on it. */
  async request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const headers = this.headers({ accept: "application/json" });
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await this.send(path, {
      method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status === 204) return undefined as T;
    return (await res.json()) as T;
  }

  /** A create, safe to retry: one `Idempotency-Key` for this logical create (the given one, or a
   * fresh UUID), sent on every attempt, so a retry after a lost answer gets the first answer
   * instead of a second resource. Retries what may not have been done: no answer, 502, 503, 504. */
  private async create<T>(path: string, body: unknown, o: CreateOptions = {}): Promise<T> {
    const key = o.idempotencyKey ?? crypto.randomUUID();
    const attempts = o.attempts ?? 3;
    for (let attempt = 1; ; attempt++) {
      const headers = this.headers({ accept: "application/json", "content-type": "application/json", "idempotency-key": key });
      try {
        const res = await this.send(path, { method: "POST", headers, body: JSON.stringify(body), signal: o.signal });
        return (await res.json()) as T;
      } catch (e) {
        const retryable = e instanceof LongrunError && [0, 502, 503, 504].includes(e.status);
        if (!retryable || attempt >= attempts) throw e;
        await new Promise((r) => setTimeout(r, 200 * 2 ** (attempt - 1)));
      }
    }
  }

  private get<T>(path: string, signal?: AbortSignal) { return this.request<T>("GET", path, undefined, signal); }
  private post<T>(path: string, body: unknown = {}) { return this.request<T>("POST", path, body); }

  // Runs

  /** Starts a run. Sends an `Idempotency-Key` (see `CreateOptions`) and retries a lost answer. */
  createRun(body: CreateRun, o?: CreateOptions) { return this.create<Run>("/v1/runs", body, o); }
  getRun(id: string) { return this.get<Run>(`/v1/runs/${enc(id)}`); }

  listRunsPage(q: { status?: RunStatus; limit?: number; cursor?: string } = {}) {
    const params = new URLSearchParams();
    if (q.status) params.set("status", q.status);
    if (q.limit) params.set("limit", String(q.limit));
    if (q.cursor) params.set("cursor", q.cursor);
    const qs = params.toString();
    return this.get<RunPage>(`/v1/runs${qs ? `?${qs}` : ""}`);
  }

  /** Every run of yours, newest first, fetching page after page as you iterate. */
  async *listRuns(q: { status?: RunStatus; pageSize?: number } = {}): AsyncGenerator<RunSummary> {
    let cursor: string | undefined;
    do {
      const page = await this.listRunsPage({ status: q.status, limit: q.pageSize, cursor });
      yield* page.runs;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  respond(id: string, body: RespondBody) { return this.post<Run>(`/v1/runs/${enc(id)}/respond`, body); }
  /** Tell a run that has not ended something: its next iteration's planner reads it. */
  message(id: string, text: string) { return this.post<Run>(`/v1/runs/${enc(id)}/messages`, { text }); }
  cancel(id: string) { return this.post<Run>(`/v1/runs/${enc(id)}/cancel`); }
  pause(id: string) { return this.post<Run>(`/v1/runs/${enc(id)}/pause`); }
  /** Resume a paused run, or continue a stopped one with raised budgets. */
  continue(id: string, body: ContinueBody = {}) { return this.post<Run>(`/v1/runs/${enc(id)}/continue`, body); }
  /** Ask an ended run (completed, stopped or failed) a follow-up question: it runs again on the
   * budgets it has left (or those raised in `budgets`) and writes a new report. */
  followUp(id: string, body: FollowUpBody) { return this.post<Run>(`/v1/runs/${enc(id)}/follow-up`, body); }
  patch(id: string, body: RunPatch) { return this.request<Run>("PATCH", `/v1/runs/${enc(id)}`, body); }

  iterations(id: string, q: { after?: number; limit?: number } = {}) {
    return this.get<{ iterations: IterationRecord[] }>(
      `/v1/runs/${enc(id)}/iterations?after=${q.after ?? 0}&limit=${q.limit ?? 500}`);
  }
  /** The run's documents; with `tag`, only those tagged with it. */
  workspace(id: string, tag?: string) {
    const q = tag === undefined ? "" : `?tag=${enc(tag)}`;
    return this.get<{ tree: TreeNode; docs: DocMeta[] }>(`/v1/runs/${enc(id)}/workspace${q}`);
  }
  doc(id: string, path: string) { return this.get<Doc>(`/v1/runs/${enc(id)}/docs/${docPath(path)}`); }
  searchWorkspace(id: string, q: string, limit = 20) {
    return this.get<{ hits: DocHit[] }>(`/v1/runs/${enc(id)}/workspace/search?q=${enc(q)}&limit=${limit}`);
  }
  scratchpad(id: string, last = 3) { return this.get<{ entries: PadEntry[] }>(`/v1/runs/${enc(id)}/scratchpad?last=${last}`); }
  report(id: string) { return this.get<Report>(`/v1/runs/${enc(id)}/report`); }
  /** The run's webhook deliveries, oldest first: state, attempts, next attempt, last error. */
  deliveries(id: string) { return this.get<{ deliveries: WebhookDelivery[] }>(`/v1/runs/${enc(id)}/deliveries`); }
  /** An agent run's task folder: processes, message bus, TASK_STATE.md, output, live tail. */
  agent(id: string) { return this.get<AgentView>(`/v1/runs/${enc(id)}/agent`); }

  // Tasks a terminal started with `longrun task`, and agents' buses

  /** The terminal's tasks on the server's machine, most recently active first (read-only). */
  tasks() { return this.get<{ tasks: TaskSummary[] }>("/v1/tasks"); }
  task(project: string, task: string) { return this.get<TaskView>(`/v1/tasks/${enc(project)}/${enc(task)}`); }

  /**
   * The bus of an agent run (its id) or of a terminal task, live, until nothing of it runs. A
   * dropped connection is resumed after the last seq seen: no message is missed or yielded twice.
   */
  async *bus(of: string | { project: string; task: string }, o: { after?: number; signal?: AbortSignal; retryMs?: number } = {}): AsyncGenerator<BusMessage> {
    const path = typeof of === "string" ? `/v1/runs/${enc(of)}/agent/stream` : `/v1/tasks/${enc(of.project)}/${enc(of.task)}/stream`;
    let seq = o.after ?? 0;
    const first = o.retryMs ?? 500;
    let backoff = first;
    for (;;) {
      try {
        const headers = this.headers({ accept: "text/event-stream", "last-event-id": String(seq) });
        const res = await this.send(`${path}?after=${seq}`, { headers, signal: o.signal });
        for await (const m of sseData<BusMessage>(res)) {
          if (m.seq <= seq) continue;
          seq = m.seq;
          backoff = first;
          yield m;
        }
        return;
      } catch (e) {
        if (o.signal?.aborted) throw e;
        if (e instanceof LongrunError && e.status >= 400 && e.status < 500 && e.status !== 408 && e.status !== 429) throw e;
        await sleep(backoff, o.signal);
        backoff = Math.min(backoff * 2, 8000);
      }
    }
  }

  /** One page of a run's log after `after`; with `wait` (seconds) it long-polls for new events. */
  eventsPage(id: string, q: { after?: number; wait?: number; limit?: number; signal?: AbortSignal } = {}) {
    const params = new URLSearchParams({ after: String(q.after ?? 0) });
    if (q.wait) params.set("wait", String(q.wait));
    if (q.limit) params.set("limit", String(q.limit));
    return this.get<{ events: RunEvent[]; next_after: number }>(`/v1/runs/${enc(id)}/events?${params}`, q.signal);
  }

  /**
   * A run's events in order, live, until the run settles (ends or waits on someone). A dropped
   * connection or a restarted server is resumed from the last seq seen: no event is missed or
   * yielded twice.
   */
  async *events(id: string, o: EventsOptions = {}): AsyncGenerator<RunEvent> {
    let seq = o.after ?? 0;
    let transport = o.transport ?? "auto";
    const first = o.retryMs ?? 500;
    let backoff = first;
    for (;;) {
      try {
        const onLive = () => o.onState?.("live");
        const batches = transport === "poll"
          ? this.pollEvents(id, seq, onLive, o.signal)
          : this.sseEvents(id, seq, onLive, o.signal);
        for await (const e of batches) {
          if (e.seq <= seq) continue;
          seq = e.seq;
          backoff = first;
          yield e;
        }
        // The stream ends when the run settles; make sure that is why it ended.
        const run = await this.getRun(id);
        if (SETTLED.includes(run.status) && run.event_seq <= seq) return;
      } catch (e) {
        if (o.signal?.aborted) throw e;
        if (e instanceof NoStream && transport === "auto") {
          transport = "poll";
          continue;
        }
        // The run is gone or not ours, or the token is bad: retrying will not help.
        if (e instanceof LongrunError && e.status >= 400 && e.status < 500 && e.status !== 408 && e.status !== 429) throw e;
        o.onState?.("reconnecting");
        await sleep(backoff, o.signal);
        backoff = Math.min(backoff * 2, 8000);
      }
    }
  }

  private async *sseEvents(id: string, after: number, onLive: () => void, signal?: AbortSignal): AsyncGenerator<RunEvent> {
    const headers = this.headers({ accept: "text/event-stream", "last-event-id": String(after) });
    let res: Response;
    try {
      res = await this.send(`/v1/runs/${enc(id)}/stream?after=${after}`, { headers, signal });
    } catch (e) {
      // A gateway without the route answers without a problem document; longrun's own 404
      // (no such run) has one and is not retried.
      if (e instanceof LongrunError && [404, 405, 501].includes(e.status) && e.type === undefined) throw new NoStream();
      throw e;
    }
    if (!res.body || !(res.headers.get("content-type") ?? "").includes("text/event-stream")) throw new NoStream();
    onLive();
    yield* sseData<RunEvent>(res);
  }

  private async *pollEvents(id: string, after: number, onLive: () => void, signal?: AbortSignal): AsyncGenerator<RunEvent> {
    let seq = after;
    for (;;) {
      const page = await this.eventsPage(id, { after: seq, wait: 20, signal });
      onLive();
      for (const e of page.events) {
        seq = Math.max(seq, e.seq);
        yield e;
      }
      if (page.events.length) continue;
      const run = await this.getRun(id);
      if (SETTLED.includes(run.status) && run.event_seq <= seq) return;
    }
  }

  // Inbox, configuration, schedules, webhooks, tools

  /** A page of your inbox, newest first; pass its `next_cursor` as `cursor` for the next one. */
  notifications(limit = 50, cursor?: string) {
    const params = new URLSearchParams({ limit: String(limit) });
    if (cursor) params.set("cursor", cursor);
    return this.get<{ notifications: Notification[]; unread: number; next_cursor: string | null }>(`/v1/notifications?${params}`);
  }
  markRead(ids: string[]) { return this.post<{ updated: number }>("/v1/notifications/read", { ids }); }
  config() { return this.get<ServerConfig>("/v1/config"); }

  createSchedule(body: CreateSchedule, o?: CreateOptions) { return this.create<Schedule>("/v1/schedules", body, o); }
  listSchedules() { return this.get<{ schedules: Schedule[] }>("/v1/schedules"); }
  deleteSchedule(id: string) { return this.request<unknown>("DELETE", `/v1/schedules/${enc(id)}`); }

  getWebhooks() { return this.get<{ webhooks: { url: string }[] }>("/v1/webhooks"); }
  putWebhooks(webhooks: Webhook[]) { return this.request<{ webhooks: { url: string }[] }>("PUT", "/v1/webhooks", { webhooks }); }

  registerTool(body: RegisterTool) { return this.post<Record<string, unknown>>("/v1/tools", body); }
  listTools() { return this.get<{ tools: Record<string, unknown>[] }>("/v1/tools"); }
  deleteTool(name: string) { return this.request<unknown>("DELETE", `/v1/tools/${enc(name)}`); }
}

/** The `data:` of each server-sent event of a stream, parsed as JSON, until the stream ends. */
async function* sseData<T>(res: Response): AsyncGenerator<T> {
  if (!res.body) return;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      const blocks = buffer.split(/\r?\n\r?\n/);
      buffer = blocks.pop() ?? "";
      for (const block of blocks) {
        const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).trimStart()).join("\n");
        if (data) yield JSON.parse(data) as T;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** The server answered the stream route with something that is not a stream (API Gateway). */
class NoStream extends Error {}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => { clearTimeout(t); reject(signal.reason); }, { once: true });
  });
}

async function problem(res: Response, onUnauthorized?: () => void): Promise<LongrunError> {
  let title = res.statusText || `HTTP ${res.status}`;
  let detail = "";
  let type: string | undefined;
  try {
    const body = await res.json();
    if (body && typeof body === "object") {
      title = String(body.title ?? title);
      detail = String(body.detail ?? "");
      type = body.type === undefined ? undefined : String(body.type);
    }
  } catch {
    detail = `The server answered ${res.status} without a readable body.`;
  }
  if (res.status === 401) onUnauthorized?.();
  return new LongrunError(res.status, title, detail, type);
}

/**
 * Checks a webhook delivery: `signatureHeader` is `X-Longrun-Signature` (`sha256=<hex>`), the
 * HMAC-SHA256 of the raw body with your webhook's secret. Compare before parsing the body.
 */
export async function verifyWebhook(secret: string, body: string | Uint8Array, signatureHeader: string | null | undefined): Promise<boolean> {
  const given = /^sha256=([0-9a-f]{64})$/i.exec((signatureHeader ?? "").trim())?.[1]?.toLowerCase();
  if (!given) return false;
  const utf8 = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", utf8.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const bytes = typeof body === "string" ? utf8.encode(body) : body;
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, bytes as Uint8Array<ArrayBuffer>));
  // Constant time: every byte is compared whatever the first difference.
  let diff = 0;
  mac.forEach((byte, i) => {
    diff |= byte ^ parseInt(given.slice(i * 2, i * 2 + 2), 16);
  });
  return diff === 0;
}
