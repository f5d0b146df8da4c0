// Signing in: a bearer token typed in (local mode), or OIDC authorization code + PKCE against a
// deployed stack's issuer. The token lives in sessionStorage for OIDC (short-lived, per tab) and
// localStorage for a local token (the user pasted it once).

import type { ConsoleConfig, OidcConfig } from "./config";

const TOKEN = "longrun.token";
const EXPIRES = "longrun.token_expires_at";
const RETURN_TO = "longrun.return_to";
const PKCE = "longrun.pkce";

export function currentToken(): string | null {
  const expires = Number(sessionStorage.getItem(EXPIRES) ?? "0");
  if (expires && Date.now() > expires) {
    sessionStorage.removeItem(TOKEN);
    sessionStorage.removeItem(EXPIRES);
  }
  return sessionStorage.getItem(TOKEN) ?? localStorage.getItem(TOKEN);
}

export function saveLocalToken(token: string) {
  localStorage.setItem(TOKEN, token.trim());
}

/** Forgets the token; `everywhere` also drops the local one (an explicit sign-out). */
export function signOut(everywhere = true) {
  sessionStorage.removeItem(TOKEN);
  sessionStorage.removeItem(EXPIRES);
  if (everywhere || localStorage.getItem(TOKEN)) localStorage.removeItem(TOKEN);
}

/** Where to go after signing in: the deep link that sent the user to sign-in. */
export function rememberReturn(path: string) {
  if (!path.startsWith("/signin") && !path.startsWith("/callback")) sessionStorage.setItem(RETURN_TO, path);
}

export function takeReturn(): string {
  const to = sessionStorage.getItem(RETURN_TO) ?? "/";
  sessionStorage.removeItem(RETURN_TO);
  // Only paths of this console, never another origin.
  return to.startsWith("/") && !to.startsWith("//") ? to : "/";
}

interface Discovery { authorization_endpoint: string; token_endpoint: string; end_session_endpoint?: string }

async function discover(oidc: OidcConfig): Promise<Discovery> {
  const res = await fetch(`${oidc.issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`);
  if (!res.ok) throw new Error(`The sign-in provider ${oidc.issuer} answered ${res.status} to discovery.`);
  return (await res.json()) as Discovery;
}

function base64url(bytes: Uint8Array): string {
  let s = "";
  bytes.forEach((b) => (s += String.fromCharCode(b)));
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export async function pkceChallenge(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

function redirectUri(): string {
  return `${location.origin}/callback`;
}

/** Sends the browser to the issuer's sign-in page. */
export async function startOidc(oidc: OidcConfig) {
  const d = await discover(oidc);
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const state = base64url(crypto.getRandomValues(new Uint8Array(16)));
  sessionStorage.setItem(PKCE, JSON.stringify({ verifier, state }));
  const url = new URL(d.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: oidc.clientId,
    redirect_uri: redirectUri(),
    scope: oidc.scopes ?? "openid email",
    state,
    code_challenge: await pkceChallenge(verifier),
    code_challenge_method: "S256",
  }).toString();
  location.assign(url.toString());
}

/** Finishes the code flow on /callback; returns where to go next. */
export async function finishOidc(config: ConsoleConfig): Promise<string> {
  if (config.auth.mode !== "oidc") throw new Error("This console is not configured for OIDC sign-in.");
  const oidc = config.auth;
  const params = new URLSearchParams(location.search);
  if (params.get("error")) {
    throw new Error(`Sign-in failed: ${params.get("error_description") ?? params.get("error")}`);
  }
  const saved = JSON.parse(sessionStorage.getItem(PKCE) ?? "null") as { verifier: string; state: string } | null;
  sessionStorage.removeItem(PKCE);
  if (!saved || saved.state !== params.get("state")) {
    throw new Error("Sign-in answer does not match a sign-in this tab started; please sign in again.");
  }
  const d = await discover(oidc);
  const res = await fetch(d.token_endpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: params.get("code") ?? "",
      redirect_uri: redirectUri(),
      client_id: oidc.clientId,
      code_verifier: saved.verifier,
    }),
  });
  if (!res.ok) throw new Error(`The sign-in provider refused the code (${res.status}).`);
  const tokens = (await res.json()) as { access_token?: string; id_token?: string; expires_in?: number };
  const token = oidc.tokenType === "id_token" ? tokens.id_token : tokens.access_token;
  if (!token) throw new Error("The sign-in provider returned no token.");
  sessionStorage.setItem(TOKEN, token);
  sessionStorage.setItem(EXPIRES, String(Date.now() + (tokens.expires_in ?? 3600) * 1000 - 30_000));
  return takeReturn();
}
