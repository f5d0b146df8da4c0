// What every page gets: the API, the configuration, navigation and the error banner.

import type { Api, ServerConfig } from "./api";
import type { ConsoleConfig } from "./config";

export interface Ctx {
  api: Api;
  config: ConsoleConfig;
  navigate: (path: string) => void;
  /** Shows a failure as a readable message at the top of the page. */
  fail: (e: unknown) => void;
  clearError: () => void;
  serverConfig: () => Promise<ServerConfig>;
  refreshUnread: () => void;
}

/** A page renders into `root` and returns what stops its timers and streams. */
export type Page = (ctx: Ctx, root: HTMLElement, params: Record<string, string>) => (() => void) | void;
