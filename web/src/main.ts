import "./style.css";
import { Api, ApiError, type ServerConfig } from "./api";
import type { Ctx, Page } from "./app";
import { currentToken, rememberReturn, signOut } from "./auth";
import { loadConfig } from "./config";
import { h, replace } from "./dom";
import { callbackPage, notificationsPage, signinPage } from "./pages";
import { runPage } from "./run";
import { runsPage } from "./runs";
import { taskPage, tasksPage } from "./tasks";

const ROUTES: [RegExp, Page, boolean][] = [
  [/^\/signin$/, signinPage, false],
  [/^\/callback$/, callbackPage, false],
  [/^\/notifications$/, notificationsPage, true],
  [/^\/runs\/(?<id>[A-Za-z0-9_-]+)$/, runPage, true],
  [/^\/tasks$/, tasksPage, true],
  [/^\/tasks\/(?<project>[^/]+)\/(?<task>[^/]+)$/, taskPage, true],
  [/^\/$/, runsPage, true],
];

async function boot() {
  const config = await loadConfig();
  const api = new Api(config);
  const banner = h("div", { class: "banner", role: "alert", hidden: true });
  const main = h("main", { id: "main", tabindex: "-1" });
  const unread = h("span", { class: "count", "data-testid": "unread", hidden: true });
  const signOutBtn = h("button", { type: "button", class: "ghost", onclick: () => { signOut(); ctx.navigate("/signin"); } }, "Sign out");
  const nav = h("nav", { "aria-label": "Main" },
    h("a", { href: "/" }, "Runs"),
    h("a", { href: "/tasks" }, "Tasks"),
    h("a", { href: "/notifications" }, "Notifications ", unread),
    signOutBtn);
  replace(document.body,
    h("a", { href: "#main", class: "skip" }, "Skip to content"),
    h("header", { class: "top" }, h("a", { href: "/", class: "brand" }, "longrun"), nav),
    banner, main);

  let cleanup: (() => void) | void;
  let server: Promise<ServerConfig> | null = null;

  const ctx: Ctx = {
    api, config,
    navigate(path) {
      history.pushState(null, "", path);
      render();
    },
    fail(e) {
      if (e instanceof DOMException && e.name === "AbortError") return;
      if (e instanceof ApiError && e.status === 401) {
        rememberReturn(location.pathname + location.search);
        replace(banner, "Your session has ended; please sign in again.");
        banner.hidden = false;
        if (location.pathname !== "/signin") { history.pushState(null, "", "/signin"); render(false); }
        return;
      }
      replace(banner, h("span", {}, e instanceof Error ? e.message : String(e)),
        h("button", { type: "button", class: "ghost", "aria-label": "Dismiss", onclick: () => ctx.clearError() }, "×"));
      banner.hidden = false;
    },
    clearError() { banner.hidden = true; replace(banner); },
    serverConfig() {
      server ??= api.config().catch((e) => { server = null; throw e; });
      return server;
    },
    refreshUnread() {
      if (!currentToken()) return;
      api.notifications().then((n) => {
        unread.textContent = String(n.unread);
        unread.hidden = n.unread === 0;
        unread.setAttribute("aria-label", `${n.unread} unread`);
      }).catch(() => undefined);
    },
  };

  function render(clear = true) {
    cleanup?.();
    cleanup = undefined;
    if (clear) ctx.clearError();
    const path = location.pathname.replace(/\/+$/, "") || "/";
    const hit = ROUTES.find(([re]) => re.test(path));
    nav.hidden = !currentToken();
    if (!hit) {
      replace(main, h("section", { class: "card" }, h("h1", {}, "Not found"),
        h("p", {}, "This page does not exist. "), h("a", { href: "/" }, "Go to your runs")));
      return;
    }
    const [re, page, needsAuth] = hit;
    if (needsAuth && !currentToken()) {
      rememberReturn(location.pathname + location.search);
      history.replaceState(null, "", "/signin");
      return render(false);
    }
    document.title = "longrun";
    try {
      cleanup = page(ctx, main, (re.exec(path)?.groups ?? {}) as Record<string, string>);
    } catch (e) {
      ctx.fail(e);
    }
    ctx.refreshUnread();
  }

  // Same-origin links move inside the app instead of reloading it.
  document.addEventListener("click", (ev) => {
    const a = (ev.target as Element).closest("a");
    if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
    const href = a.getAttribute("href");
    if (!href || !href.startsWith("/") || href.startsWith("//") || a.target) return;
    ev.preventDefault();
    ctx.navigate(href);
  });
  window.addEventListener("popstate", () => render());
  window.addEventListener("unhandledrejection", (ev) => ctx.fail(ev.reason));
  window.addEventListener("error", (ev) => ctx.fail(ev.error ?? ev.message));
  setInterval(() => ctx.refreshUnread(), 15_000);
  render();
}

boot().catch((e) => {
  document.body.textContent = `The console failed to start: ${e instanceof Error ? e.message : String(e)}`;
});
