// Sign-in, the OIDC callback and the notifications inbox.

import { ApiError } from "./api";
import type { Page } from "./app";
import { finishOidc, rememberReturn, saveLocalToken, signOut, startOidc, takeReturn } from "./auth";
import { h, replace } from "./dom";
import { asked, count, duration, statusBadge, usd, when } from "./format";

export const signinPage: Page = (ctx, root) => {
  const auth = ctx.config.auth;
  if (auth.mode === "oidc") {
    const go = h("button", { type: "button", class: "primary", onclick: () => startOidc(auth).catch(ctx.fail) },
      `Sign in with ${new URL(auth.issuer).host}`);
    replace(root, h("section", { class: "card narrow", "aria-labelledby": "signin-h" },
      h("h1", { id: "signin-h" }, "Sign in"), h("p", {}, "You will come back to the page you opened."), go));
    go.focus();
    return;
  }
  const token = h("input", { id: "token", name: "token", type: "password", autocomplete: "current-password", required: true, "aria-describedby": "token-hint token-error" });
  const refused = h("p", { id: "token-error", class: "error-inline", role: "alert", hidden: true });
  // serve prints where the token is, never the token itself (a terminal's output ends up in logs).
  const hint = h("small", { id: "token-hint", class: "muted" },
    "The token is in a file whose path ", h("code", {}, "longrun serve"), " prints when it starts: ",
    h("code", {}, ".longrun/token"), " by default, ", h("code", {}, "DATA_DIR/token"), " with ",
    h("code", {}, "--data-dir DATA_DIR"), ". ", h("code", {}, "cat"), " it and paste it here. A server given ",
    h("code", {}, "LONGRUN_TOKENS"), " takes one of the tokens listed there.");
  const form = h("form", { class: "card narrow", "aria-labelledby": "signin-h" },
    h("h1", { id: "signin-h" }, "Sign in"),
    h("div", { class: "field" },
      h("label", { for: "token" }, "API token"), token, refused, hint),
    h("button", { type: "submit", class: "primary" }, "Sign in"));
  const refuse = (msg: string) => {
    replace(refused, msg);
    refused.hidden = false;
    token.setAttribute("aria-invalid", "true");
    token.select();
  };
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!token.value.trim()) { refuse("Paste the token first."); token.focus(); return; }
    saveLocalToken(token.value);
    try {
      await ctx.api.listRunsPage();
      ctx.clearError();
      ctx.navigate(takeReturn());
    } catch (e) {
      signOut();
      if (e instanceof ApiError && e.status === 401) {
        refuse("The server did not accept this token. Copy it again from the token file; a server started with a new data directory has a new token.");
        return;
      }
      ctx.fail(e);
      token.select();
    }
  });
  replace(root, form);
  token.focus();
};

export const callbackPage: Page = (ctx, root) => {
  replace(root, h("p", { class: "muted" }, "Signing you in…"));
  finishOidc(ctx.config).then((to) => ctx.navigate(to)).catch((e) => {
    ctx.fail(e);
    replace(root, h("p", {}, h("a", { href: "/signin" }, "Try signing in again")));
  });
};

export const notificationsPage: Page = (ctx, root) => {
  const list = h("div", { "aria-live": "polite" }, h("p", { class: "muted" }, "Loading…"));
  const markAll = h("button", { type: "button" }, "Mark all read");
  async function load() {
    try {
      const page = await ctx.api.notifications();
      markAll.disabled = page.unread === 0;
      markAll.onclick = async () => {
        try {
          await ctx.api.markRead(page.notifications.filter((n) => !n.read).map((n) => n.id));
          ctx.refreshUnread();
          await load();
        } catch (e) { ctx.fail(e); }
      };
      replace(list, page.notifications.length
        ? h("ul", { class: "inbox" }, page.notifications.map((n) =>
            h("li", { class: n.read ? "read" : "unread", "data-notification": n.id },
              h("a", {
                href: `/runs/${n.run_id}`,
                onclick: () => { if (!n.read) void ctx.api.markRead([n.id]).then(ctx.refreshUnread).catch(() => undefined); },
              }, n.title),
              n.read ? null : h("span", { class: "tag" }, "new"),
              // The message is what the outcome says (the narrative, or the questions); the
              // summary is the last iteration's own line, which can claim more than a stopped run did.
              // A plan to approve reads as its steps; `questions` is left out of the JSON when empty.
              h("p", { class: "message" }, n.questions?.length ? n.questions.map(asked).join(" ") : n.message || n.summary),
              h("div", { class: "run-meta" },
                statusBadge(n.status),
                h("span", {}, `${count(n.metrics.iterations)} iteration${n.metrics.iterations === 1 ? "" : "s"}`),
                h("span", {}, `${count(n.metrics.tokens)} tokens`),
                h("span", {}, usd(n.metrics.cost_usd)),
                n.metrics.duration_ms ? h("span", {}, duration(n.metrics.duration_ms)) : null,
                h("time", { datetime: new Date(n.at).toISOString() }, when(n.at))))))
        : h("p", { class: "muted" }, "Nothing yet: you are told here when a run ends or waits on you."));
    } catch (e) {
      ctx.fail(e);
      replace(list, h("p", { class: "error-inline" }, "Notifications could not be loaded."));
    }
  }
  replace(root, h("section", { class: "card", "aria-labelledby": "inbox-h" },
    h("div", { class: "section-head" }, h("h1", { id: "inbox-h" }, "Notifications"), markAll), list));
  void load();
};

export { rememberReturn };
