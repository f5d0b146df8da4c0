// Tokens (bars, left axis) and cost (line, right axis) per iteration, as an inline SVG with
// its axes, units and iteration numbers: no chart library.

import type { Iteration } from "./api";
import { h, svg } from "./dom";
import { count, usd } from "./format";

const W = 560, H = 230;
const PAD = { left: 58, right: 62, top: 14, bottom: 42 };
const PLOT_W = W - PAD.left - PAD.right, PLOT_H = H - PAD.top - PAD.bottom;

/** The smallest 1, 2, 2.5 or 5 × 10^k at or above `v`: the top of an axis. */
function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return ([1, 2, 2.5, 5, 10].find((m) => m * p >= v * (1 - 1e-9)) ?? 10) * p;
}

/** Token counts as an axis shows them: 1,500, 12k, 1.2M. */
function tokensTick(n: number): string {
  if (n >= 1e6) return `${+(n / 1e6).toFixed(1)}M`;
  if (n >= 1e4) return `${+(n / 1e3).toFixed(1)}k`;
  return count(n);
}

export function costChart(iterations: Iteration[]): HTMLElement {
  const rows = iterations.slice(-40);
  const figure = h("figure", { class: "chart" });
  if (!rows.length) {
    figure.append(h("figcaption", { class: "muted" }, "Tokens and cost per iteration appear here after the first commit."));
    return figure;
  }
  const tokens = rows.map((i) => i.metrics.input_tokens + i.metrics.output_tokens);
  const costs = rows.map((i) => i.metrics.cost_usd ?? 0);
  const topT = niceMax(Math.max(...tokens));
  const topC = niceMax(Math.max(...costs));
  const step = PLOT_W / rows.length;
  const x = (i: number) => PAD.left + i * step + step / 2;
  const yT = (v: number) => PAD.top + PLOT_H - (PLOT_H * v) / topT;
  const yC = (v: number) => PAD.top + PLOT_H - (PLOT_H * v) / topC;
  const chart = svg("svg", {
    viewBox: `0 0 ${W} ${H}`, role: "img", class: "chart-svg", "data-testid": "cost-chart",
    "aria-label": `Tokens and cost for ${rows.length === iterations.length ? "each" : `the last ${rows.length}`} iteration${rows.length === 1 ? "" : "s"}: ` +
      `at most ${count(Math.max(...tokens))} tokens and ${usd(Math.max(...costs))} in one`,
  });
  const text = (cls: string, tx: number, ty: number, s: string, extra: Record<string, string | number> = {}) =>
    chart.appendChild(svg("text", { class: cls, x: tx, y: ty, ...extra }, s));

  // Grid and both value axes: 0, half and the top, tokens on the left and dollars on the right.
  for (const f of [0, 0.5, 1]) {
    const gy = PAD.top + PLOT_H - PLOT_H * f;
    chart.appendChild(svg("line", { class: f ? "grid" : "axis", x1: PAD.left, x2: W - PAD.right, y1: gy, y2: gy }));
    text("tick tick-tokens", PAD.left - 6, gy + 4, tokensTick(topT * f), { "text-anchor": "end" });
    text("tick tick-cost", W - PAD.right + 6, gy + 4, usd(topC * f), { "text-anchor": "start" });
  }
  text("axis-title", 14, PAD.top + PLOT_H / 2, "tokens", {
    "text-anchor": "middle", transform: `rotate(-90 14 ${PAD.top + PLOT_H / 2})`,
  });
  text("axis-title", W - 10, PAD.top + PLOT_H / 2, "cost (USD)", {
    "text-anchor": "middle", transform: `rotate(90 ${W - 10} ${PAD.top + PLOT_H / 2})`,
  });
  text("axis-title", PAD.left + PLOT_W / 2, H - 6, "iteration", { "text-anchor": "middle" });

  // Bars no wider than a thumb, so one iteration is a bar, not a wall.
  const bw = Math.min(28, Math.max(1, step * 0.7));
  const every = Math.ceil(rows.length / 12);
  rows.forEach((it, i) => {
    const top = yT(tokens[i]);
    const bar = svg("rect", { x: x(i) - bw / 2, y: top, width: bw, height: PAD.top + PLOT_H - top, class: "bar" });
    bar.appendChild(svg("title", {}, `#${it.n}: ${count(tokens[i])} tokens, ${usd(it.metrics.cost_usd)}`));
    chart.appendChild(bar);
    if (i % every === 0 || i === rows.length - 1) text("tick tick-iteration", x(i), PAD.top + PLOT_H + 16, String(it.n), { "text-anchor": "middle" });
  });
  chart.appendChild(svg("polyline", { points: rows.map((_, i) => `${x(i)},${yC(costs[i])}`).join(" "), class: "line", fill: "none" }));
  rows.forEach((it, i) => {
    const dot = svg("circle", { cx: x(i), cy: yC(costs[i]), r: 3, class: "dot" });
    dot.appendChild(svg("title", {}, `#${it.n}: ${usd(it.metrics.cost_usd)}`));
    chart.appendChild(dot);
  });
  figure.append(chart, h("figcaption", { class: "legend" },
    h("span", { class: "key key-bar" }), "tokens per iteration (left axis) ",
    h("span", { class: "key key-line" }), "cost per iteration in USD (right axis)",
    rows.length < iterations.length ? h("span", {}, ` · the last ${rows.length} of ${iterations.length} iterations`) : null));
  return figure;
}
