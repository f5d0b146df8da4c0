// Where the API is and how to sign in. `longrun serve` answers /config.json itself; a deployed
// stack uploads one next to the static files.

export interface OidcConfig {
  issuer: string;
  clientId: string;
  scopes?: string;
  /** The token the API checks: API Gateway's JWT authorizer takes either. */
  tokenType?: "access_token" | "id_token";
}

export interface ConsoleConfig {
  /** Base URL of the API; empty means the same origin as the console. */
  apiUrl: string;
  auth: { mode: "token" } | ({ mode: "oidc" } & OidcConfig);
  /** How the run page follows a run: SSE where the server streams, long-poll behind API Gateway. */
  live: "sse" | "poll";
}

const DEFAULTS: ConsoleConfig = { apiUrl: "", auth: { mode: "token" }, live: "sse" };

export async function loadConfig(): Promise<ConsoleConfig> {
  try {
    const res = await fetch("/config.json", { headers: { accept: "application/json" } });
    if (!res.ok) return DEFAULTS;
    const body = (await res.json()) as Partial<ConsoleConfig>;
    return {
      apiUrl: (body.apiUrl ?? "").replace(/\/+$/, ""),
      auth: body.auth ?? DEFAULTS.auth,
      live: body.live === "poll" ? "poll" : "sse",
    };
  } catch {
    return DEFAULTS;
  }
}
