// Tokens (bars) and cost (line) per iteration, as a small inline SVG: no chart library.

import type { Iteration } from "./api";
import { h, svg } from "./dom";
import { count, usd } from "./format";

export function costChart(iterations: Iteration[]): HTMLElement {
  const W = 320, H = 110, P = 6;
  const rows = iterations.slice(-40);
  const figure = h("figure", { class: "chart" });
  if (!rows.length) {
    figure.append(h("figcaption", { class: "muted" }, "Tokens and cost per iteration appear here after the first commit."));
    return figure;
  }
  const tokens = rows.map((i) => i.metrics.input_tokens + i.metrics.output_tokens);
  const costs = rows.map((i) => i.metrics.cost_usd ?? 0);
  const maxT = Math.max(1, ...tokens);
  const maxC = Math.max(1e-9, ...costs);
  const step = (W - 2 * P) / rows.length;
  const chart = svg("svg", {
    viewBox: `0 0 ${W} ${H}`, role: "img", class: "chart-svg",
    "aria-label": `Tokens and cost for the last ${rows.length} iterations; most ${count(maxT)} tokens and ${usd(maxC)} in one iteration`,
  });
  rows.forEach((it, i) => {
    const bh = ((H - 2 * P) * tokens[i]) / maxT;
    const bar = svg("rect", {
      x: P + i * step + step * 0.15, y: H - P - bh, width: Math.max(1, step * 0.7), height: bh, class: "bar",
    });
    bar.appendChild(svg("title", {}, `#${it.n}: ${count(tokens[i])} tokens, ${usd(it.metrics.cost_usd)}`));
    chart.appendChild(bar);
  });
  const points = rows
    .map((_, i) => `${P + i * step + step / 2},${H - P - ((H - 2 * P) * costs[i]) / maxC}`)
    .join(" ");
  chart.appendChild(svg("polyline", { points, class: "line", fill: "none" }));
  figure.append(chart, h("figcaption", { class: "legend" },
    h("span", { class: "key key-bar" }), "tokens per iteration ",
    h("span", { class: "key key-line" }), "cost per iteration"));
  return figure;
}
