// Sign-in, the OIDC callback and the notifications inbox.

import type { Page } from "./app";
import { finishOidc, rememberReturn, saveLocalToken, signOut, startOidc, takeReturn } from "./auth";
import { h, replace } from "./dom";
import { when } from "./format";

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
  const token = h("input", { id: "token", name: "token", type: "password", autocomplete: "current-password", required: true, "aria-describedby": "token-hint" });
  const form = h("form", { class: "card narrow", "aria-labelledby": "signin-h" },
    h("h1", { id: "signin-h" }, "Sign in"),
    h("div", { class: "field" },
      h("label", { for: "token" }, "API token"), token,
      h("small", { id: "token-hint", class: "muted" }, "`longrun serve` prints it and keeps it in .longrun/token.")),
    h("button", { type: "submit", class: "primary" }, "Sign in"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!token.value.trim()) { ctx.fail(new Error("Paste the token first.")); return; }
    saveLocalToken(token.value);
    try {
      await ctx.api.listRunsPage();
      ctx.clearError();
      ctx.navigate(takeReturn());
    } catch (e) {
      signOut();
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
              h("p", {}, n.summary),
              h("time", { class: "muted", datetime: new Date(n.at).toISOString() }, when(n.at)))))
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
