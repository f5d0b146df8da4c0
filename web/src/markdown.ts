// Markdown as DOM nodes, for the documents a run writes (and an agent's TASK_STATE.md and
// output.md). Safe by construction: every piece of the source becomes a text node, never HTML,
// so a `<script>` or an `onerror=` in a document is shown as the characters it is; links keep
// only http(s) and mailto URLs, and images are shown as links (no request leaves for them).
// The CommonMark a model writes: headings, paragraphs, lists (nested by indent), fenced code,
// quotes, rules, pipe tables; inline code, bold, italics, strike-through, links and bare URLs.

import { h } from "./dom";

type Inline = (Node | string)[];

/** `text` rendered into a `<div class="markdown">`; headings start at `h{top}`. */
export function markdown(text: string, top = 4): HTMLElement {
  const root = h("div", { class: "markdown" });
  root.append(...blocks(text.replace(/\r\n?/g, "\n").split("\n"), top));
  return root;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

function blocks(lines: string[], top: number): Node[] {
  const out: Node[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i++; continue; }
    const fence = FENCE.exec(line);
    if (fence) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence[1])) body.push(lines[i++]);
      i++;
      out.push(h("pre", {}, h("code", fence[2] ? { "data-lang": fence[2] } : {}, body.join("\n"))));
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const level = Math.min(6, heading[1].length + top - 1) as 1 | 2 | 3 | 4 | 5 | 6;
      out.push(h(`h${level}` as "h4", {}, inline(heading[2])));
      i++;
      continue;
    }
    if (RULE.test(line)) { out.push(h("hr")); i++; continue; }
    if (QUOTE.test(line)) {
      const body: string[] = [];
      while (i < lines.length && QUOTE.test(lines[i])) body.push(QUOTE.exec(lines[i++])![1]);
      out.push(h("blockquote", {}, blocks(body, top)));
      continue;
    }
    if (ITEM.test(line)) {
      const start = i;
      while (i < lines.length && (ITEM.test(lines[i]) || (lines[i].trim() && /^\s/.test(lines[i])) ||
        (!lines[i].trim() && i + 1 < lines.length && /^\s+\S/.test(lines[i + 1])))) i++;
      out.push(list(lines.slice(start, i), top));
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      const head = cells(line);
      i += 2;
      const rows: string[][] = [];
      while (i < lines.length && lines[i].includes("|") && lines[i].trim()) rows.push(cells(lines[i++]));
      out.push(h("table", {},
        h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, inline(c))))),
        h("tbody", {}, rows.map((r) => h("tr", {}, head.map((_, k) => h("td", {}, inline(r[k] ?? ""))))))));
      continue;
    }
    const para: string[] = [];
    while (i < lines.length && lines[i].trim() && !FENCE.test(lines[i]) && !HEADING.test(lines[i]) &&
      !RULE.test(lines[i]) && !QUOTE.test(lines[i]) && !(para.length && ITEM.test(lines[i]))) para.push(lines[i++].trim());
    out.push(h("p", {}, inline(para.join(" "))));
  }
  return out;
}

function cells(row: string): string[] {
  return row.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
}

/** A list and the lists nested in it: an item's continuation lines are indented past its marker. */
function list(lines: string[], top: number): HTMLElement {
  const first = ITEM.exec(lines[0])!;
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const items: { text: string; rest: string[] }[] = [];
  for (const line of lines) {
    const m = ITEM.exec(line);
    if (m && m[1].length <= indent) items.push({ text: m[3], rest: [] });
    else items[items.length - 1]?.rest.push(line);
  }
  const start = ordered ? parseInt(first[2], 10) : 1;
  return h(ordered ? "ol" : "ul", ordered && start !== 1 ? { start } : {}, items.map((it) => {
    const task = /^\[([ xX])\]\s+(.*)$/.exec(it.text);
    const nested = it.rest.filter((l) => l.trim());
    const cut = Math.min(...nested.map((l) => l.length - l.trimStart().length));
    return h("li", task ? { class: "task" } : {},
      task ? h("input", { type: "checkbox", disabled: true, checked: task[1] !== " ", "aria-label": task[1] !== " " ? "done" : "not done" }) : null,
      inline(task ? task[2] : it.text),
      nested.length ? blocks(nested.map((l) => l.slice(cut)), top) : null);
  }));
}

// Earliest match wins; the order breaks ties (an image before a link, bold before italics).
const INLINE: [RegExp, (m: RegExpExecArray) => Inline][] = [
  [/\\([\\`*_{}[\]()#+\-.!|~<>])/, (m) => [m[1]]],
  [/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/, (m) => [h("code", {}, m[2].trim() || m[2])]],
  [/!\[([^\]]*)\]\(\s*<?((?:[^()\s>]|\([^()\s]*\))+)>?(?:\s+"[^"]*")?\s*\)/, (m) => link(m[2], [`image: ${m[1] || m[2]}`])],
  [/\[((?:[^[\]]|\[[^\]]*\])+)\]\(\s*<?((?:[^()\s>]|\([^()\s]*\))+)>?(?:\s+"[^"]*")?\s*\)/, (m) => link(m[2], inline(m[1]))],
  [/<((?:https?:\/\/|mailto:)[^>\s]+)>/, (m) => link(m[1], [m[1]])],
  [/\bhttps?:\/\/[^\s<>()]*[^\s<>().,;:!?'"*_]/, (m) => link(m[0], [m[0]])],
  [/(\*\*|__)(?=\S)([\s\S]*?\S)\1/, (m) => [h("strong", {}, inline(m[2]))]],
  [/~~(?=\S)([\s\S]*?\S)~~/, (m) => [h("del", {}, inline(m[1]))]],
  [/\*(?=[^\s*])([\s\S]*?[^\s*])\*|(?<![\w])_(?=[^\s_])([\s\S]*?[^\s_])_(?![\w])/, (m) => [h("em", {}, inline(m[1] ?? m[2]))]],
];

function inline(text: string): Inline {
  const out: Inline = [];
  let rest = text;
  while (rest) {
    let best: { at: number; m: RegExpExecArray; make: (m: RegExpExecArray) => Inline } | null = null;
    for (const [re, make] of INLINE) {
      const m = re.exec(rest);
      if (m && (!best || m.index < best.at)) best = { at: m.index, m, make };
    }
    if (!best) { out.push(rest); break; }
    if (best.at) out.push(rest.slice(0, best.at));
    out.push(...best.make(best.m));
    rest = rest.slice(best.at + best.m[0].length);
  }
  return out;
}

/** A link when the URL is a web page or a mail address; anything else (javascript:, data:) stays text. */
function link(href: string, label: Inline): Inline {
  let url: URL | null = null;
  try { url = new URL(href); } catch { /* relative or not a URL */ }
  if (url && ["https:", "http:", "mailto:"].includes(url.protocol)) {
    return [h("a", { href: url.href, target: "_blank", rel: "noopener noreferrer nofollow" }, label)];
  }
  return label;
}
