// A run's events, typed: one payload shape per event type, as the server writes them
// (`shared/domain/src/events.rs`). The OpenAPI document types `payload` as any JSON, so these are
// written here; `test/events.test.mjs` holds them to what a real server sends, and the
// `EventKind` check below fails to compile when the document names a type this file lacks.

import type { components } from "./schema.js";

type S = components["schemas"];

/** What the server sends: fields with defaults are always there in a response. */
type Sent<T> = T extends (infer U)[] ? Sent<U>[] : T extends object ? { [K in keyof T]-?: Sent<T[K]> } : T;

type Budgets = Sent<S["Budgets"]>;
type StoppingReason = Sent<S["StoppingReason"]>;
type RunStatus = S["RunStatus"];
type PlanStepEdit = Sent<S["PlanStepEdit"]>;
type CriterionVerdict = Sent<S["CriterionVerdict"]>;

/** Every event type the server writes. */
export type EventKind = S["EventKind"];

/**
 * Fields a newer server may add to a payload are kept (the index signature); the named ones
 * are what this client knows.
 */
interface Open {
  [field: string]: unknown;
}

/** A user's held call and what they decided (`null`: nothing yet). */
export interface CallDecided {
  id: string;
  name: string;
  decision: { decision: "approved" } | { decision: "rejected"; reason: string } | null;
}

/** The report an ended run had before a follow-up question superseded it. */
export interface SupersededReport {
  status: RunStatus;
  stopping_reason: StoppingReason | null;
  summary: string | null;
  ended_at: number | null;
}

/** The payload of each event type. */
export interface EventPayloads {
  run_created: Open & { objective: string; budgets: Budgets; model: string; parent_run_id: string | null };
  /** `patched`: the user's edit this claim applied, when there was one. */
  iteration_started: Open & { iteration: number; reclaimed: boolean; patched?: { objective?: string; plan?: PlanStepEdit[] } };
  /** A claimed iteration was given back unfinished, to be tried again later. */
  iteration_deferred: Open & { iteration: number; reason: string };
  /** One model call: its tokens and cost (`null` for an unpriced model), and the run's totals after it. */
  iteration_cost_update: Open & {
    iteration: number; role: string; model: string; input_tokens: number; output_tokens: number;
    cached_tokens: number; cost_usd: number | null; latency_ms: number; run_tokens: number; run_cost_usd: number;
  };
  /** A model call waited for the model's shared capacity; the wait is not running time. */
  waiting_for_capacity: Open & { iteration: number; role: string; model: string; waited_ms: number };
  warning: Open & { message: string };
  iteration_committed: Open & {
    iteration: number; status: RunStatus; summary: string; progress: boolean;
    created_docs: string[]; updated_docs: string[]; tokens: number; cost_usd: number;
  };
  /** A completion claim's criteria, checked: each one's verdict, and whether it was accepted. */
  criteria_checked: Open & { iteration: number; accepted: boolean; verdicts: CriterionVerdict[] };
  child_spawned: Open & { child_run_id: string; objective: string; budgets: Budgets; detached: boolean };
  run_paused: Open & { after_iteration: number };
  /** Waiting on the user (`questions`) or on its children (`children`, the ones still active). */
  run_waiting: (Open & { questions: string[] }) | (Open & { children: string[] });
  /** The wait for children timed out; those still running go on as if detached. */
  child_wait_timed_out: Open & { waited_ms: number; still_running: string[] };
  run_completed: Open & { stopping_reason: StoppingReason };
  run_stopped: Open & { stopping_reason: StoppingReason };
  run_canceled: Open & { stopping_reason: StoppingReason };
  run_failed: Open & { stopping_reason: StoppingReason };
  cancel_requested: Open;
  pause_requested: Open;
  /** The user's edit, applied from `applies_from_iteration`. */
  run_patched: Open & {
    changed: { objective?: { from: string; to: string }; plan?: PlanStepEdit[] };
    applies_from_iteration: number;
  };
  run_resumed: Open & { from_iteration: number; reason?: string };
  user_responded: Open & { questions: string[]; answer: string; approve: boolean | null; decisions: CallDecided[] };
  /** `for_iteration`: the first iteration whose planner sees it. */
  message_posted: Open & { text: string; for_iteration: number };
  run_continued: Open & { budgets: Budgets; from_iteration: number };
  follow_up_asked: Open & { question: string; from_iteration: number; budgets: Budgets; superseded: SupersededReport };
  child_finished: Open & { child_run_id: string; status: RunStatus; summary: string; tokens: number; cost_usd: number };
}

/**
 * One entry of a run's log, discriminated by `type`: `switch (e.type)` narrows `e.payload` to
 * that type's payload.
 */
export type RunEvent = {
  [K in keyof EventPayloads]: { run_id: string; seq: number; at: number; type: K; payload: EventPayloads[K] };
}[keyof EventPayloads];

/** The payload of one event type: `EventPayload<"iteration_committed">`. */
export type EventPayload<K extends keyof EventPayloads> = EventPayloads[K];

// Compiles only while every event type of the document has a payload here, and no other.
const everyKind: [Exclude<EventKind, keyof EventPayloads>, Exclude<keyof EventPayloads, EventKind>] extends [never, never] ? true : never = true;
void everyKind;
