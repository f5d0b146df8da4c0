// The console's access to the API: the TypeScript client in clients/typescript (one client in
// the repo), with the console's token and a sign-out on 401.

import { LongrunClient, type RunStatus } from "../../clients/typescript/src/index";
import type { ConsoleConfig } from "./config";
import { currentToken, signOut } from "./auth";

export { LongrunError as ApiError, ENDED } from "../../clients/typescript/src/index";
export type {
  Budgets, Doc, DocMeta, IterationRecord as Iteration, Metrics, Notification, PadEntry as ScratchEntry,
  PlanStep, Report, Run, RunEvent, RunStatus, RunSummary, ServerConfig, StoppingReason, TreeNode, WebhookDelivery,
} from "../../clients/typescript/src/index";

export const isActive = (s: RunStatus) => s === "queued" || s === "running";

export class Api extends LongrunClient {
  constructor(config: ConsoleConfig) {
    super({ baseUrl: config.apiUrl, token: currentToken, onUnauthorized: () => signOut(false) });
  }
}
