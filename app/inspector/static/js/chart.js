// A stacked bar chart in SVG, drawn here (no chart library): one bar per time bucket, one colour per
// series. Each segment has a <title> (hover and screen readers); the caller shows the numbers as a table.

import { h } from "./dom.js";

const PALETTE = ["#3b6fd6", "#e07b2f", "#2f9e6e", "#b8439b", "#7a5cd6", "#c9a227", "#2aa3b8", "#d24b4b"];
const W = 720;
const H = 260;
const PAD = { left: 56, right: 12, top: 12, bottom: 40 };

export function colour(i) {
  return PALETTE[i % PALETTE.length];
}

/** A round tick step (1, 2 or 5 times a power of ten) giving about four intervals up to `value`. */
function niceStep(value) {
  if (value <= 0) return 1;
  const rough = value / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  return [1, 2, 5, 10].map((m) => m * power).find((m) => m >= rough);
}

/**
 * `labels`: one per bucket (x axis); `series`: [{name, values: number per bucket}].
 * Returns an <svg> that scales to its container's width.
 */
export function stackedBars(labels, series, { title, unit = "tokens" }) {
  const totals = labels.map((_, i) => series.reduce((sum, s) => sum + s.values[i], 0));
  const step = Math.max(1, niceStep(Math.max(0, ...totals)));
  const max = step * Math.max(1, Math.ceil(Math.max(0, ...totals) / step));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, labels.length);
  const barW = Math.max(1, slot * 0.75);
  const y = (v) => PAD.top + plotH - (v / max) * plotH;
  const peak = Math.max(0, ...totals);
  const svg = h("svg:svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img",
    "aria-label": `${title}: ${labels.length} buckets, peak ${peak} ${unit}, total ${totals.reduce((a, b) => a + b, 0)} ${unit}` });
  for (let v = 0; v <= max; v += step) {
    svg.append(
      h("svg:line", { x1: PAD.left, x2: W - PAD.right, y1: y(v), y2: y(v), class: "grid" }),
      h("svg:text", { x: PAD.left - 6, y: y(v) + 4, "text-anchor": "end", class: "tick" }, compact(v)));
  }
  const every = Math.max(1, Math.ceil(labels.length / 8)); // at most ~8 x labels, whatever the bucket count
  labels.forEach((label, i) => {
    const x = PAD.left + i * slot + (slot - barW) / 2;
    let base = 0;
    series.forEach((s, k) => {
      const v = s.values[i];
      if (!v) return;
      svg.append(h("svg:rect", { x, y: y(base + v), width: barW, height: Math.max(0.5, y(base) - y(base + v)),
        fill: colour(k), class: "bar" }, h("svg:title", {}, `${label} · ${s.name}: ${v} ${unit}`)));
      base += v;
    });
    if (i % every === 0) {
      svg.append(h("svg:text", { x: x + barW / 2, y: H - PAD.bottom + 16, "text-anchor": "middle", class: "tick" }, label));
    }
  });
  svg.append(h("svg:line", { x1: PAD.left, x2: W - PAD.right, y1: y(0), y2: y(0), class: "axis" }));
  return svg;
}

export function legend(series) {
  return h("ul", { class: "legend" }, series.map((s, k) =>
    h("li", {}, h("svg:svg", { class: "swatch", viewBox: "0 0 12 12", width: 12, height: 12, "aria-hidden": "true" },
      h("svg:rect", { width: 12, height: 12, rx: 2, fill: colour(k) })), s.name)));
}

function compact(v) {
  if (v >= 1e6) return `${(v / 1e6).toFixed(v % 1e6 ? 1 : 0)}M`;
  if (v >= 1e3) return `${(v / 1e3).toFixed(v % 1e3 ? 1 : 0)}k`;
  return String(Math.round(v));
}
