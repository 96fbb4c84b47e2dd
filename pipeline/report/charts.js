// The report's charts: inline SVG drawn from the JSON embedded in the page (no library, no
// network). Text from the data goes in through textContent only, never as markup.
"use strict";
(function () {
  const NS = "http://www.w3.org/2000/svg";
  const PALETTE = ["#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6",
    "#dd4477", "#66aa00", "#b82e2e", "#316395", "#994499", "#22aa99", "#888888"];
  const W = 760, H = 300, M = { top: 16, right: 16, bottom: 56, left: 64 };

  function el(name, attrs, parent) {
    const node = document.createElementNS(NS, name);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    if (parent) parent.appendChild(node);
    return node;
  }
  function text(parent, x, y, content, attrs) {
    const node = el("text", Object.assign({ x: x, y: y }, attrs || {}), parent);
    node.textContent = content;
    return node;
  }
  function compact(n) {
    const abs = Math.abs(n);
    if (abs >= 1e9) return (n / 1e9).toFixed(abs >= 1e10 ? 0 : 1) + "G";
    if (abs >= 1e6) return (n / 1e6).toFixed(abs >= 1e7 ? 0 : 1) + "M";
    if (abs >= 1e3) return (n / 1e3).toFixed(abs >= 1e4 ? 0 : 1) + "k";
    return String(Math.round(n * 100) / 100);
  }
  function utc(ms, withHour) {
    const iso = new Date(ms).toISOString();
    return withHour ? iso.slice(5, 10) + " " + iso.slice(11, 16) : iso.slice(0, 10);
  }
  function niceMax(v) {
    if (!(v > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const f of [1, 2, 2.5, 5, 10]) if (f * p >= v) return f * p;
    return 10 * p;
  }
  function frame(svg, maxY, label) {
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("role", "img");
    const g = el("g", { class: "axes" }, svg);
    const plotH = H - M.top - M.bottom;
    for (let i = 0; i <= 4; i++) {
      const y = M.top + plotH - (plotH * i) / 4;
      el("line", { x1: M.left, x2: W - M.right, y1: y, y2: y, class: "grid" }, g);
      text(g, M.left - 6, y + 4, compact((maxY * i) / 4), { "text-anchor": "end" });
    }
    if (label) text(g, 12, M.top + plotH / 2, label,
      { transform: "rotate(-90 12 " + (M.top + plotH / 2) + ")", "text-anchor": "middle" });
    return g;
  }
  function legend(container, names) {
    const box = document.createElement("div");
    box.className = "legend";
    names.forEach(function (name, i) {
      const item = document.createElement("span");
      const swatch = document.createElement("i");
      swatch.style.background = PALETTE[i % PALETTE.length];
      item.appendChild(swatch);
      item.appendChild(document.createTextNode(name));
      box.appendChild(item);
    });
    container.appendChild(box);
  }
  function empty(svg, why) {
    svg.setAttribute("viewBox", "0 0 " + W + " 60");
    text(svg, W / 2, 35, why, { "text-anchor": "middle", class: "empty" });
    svg.setAttribute("data-marks", "0");
    svg.setAttribute("data-rendered", "true");
  }

  // categories on x; one bar segment per series, stacked
  function bars(svg, spec) {
    const cats = spec.categories, series = spec.series;
    if (!cats.length || !series.length) return empty(svg, spec.empty || "no data");
    const totals = cats.map(function (_, c) {
      return series.reduce(function (s, ser) { return s + (ser.values[c] || 0); }, 0);
    });
    const maxY = niceMax(Math.max.apply(null, totals));
    frame(svg, maxY, spec.yLabel);
    const plotW = W - M.left - M.right, plotH = H - M.top - M.bottom;
    const step = plotW / cats.length, bw = Math.max(2, step * 0.7);
    let marks = 0;
    const g = el("g", { class: "marks" }, svg);
    cats.forEach(function (cat, c) {
      let base = 0;
      const x = M.left + c * step + (step - bw) / 2;
      series.forEach(function (ser, s) {
        const v = ser.values[c] || 0;
        if (v <= 0) return;
        const h = (plotH * v) / maxY, y = M.top + plotH - ((base + v) * plotH) / maxY;
        const r = el("rect", { x: x, y: y, width: bw, height: Math.max(h, 0.5),
          fill: PALETTE[s % PALETTE.length], "data-value": v }, g);
        const tip = el("title", {}, r);
        tip.textContent = (series.length > 1 ? ser.name + ", " : "") + cat + ": " + v;
        base += v;
        marks++;
      });
      const label = cat.length > 18 ? cat.slice(0, 17) + "\u2026" : cat;
      const lx = M.left + c * step + step / 2, ly = H - M.bottom + 14;
      text(svg, lx, ly, label, { "text-anchor": "end",
        transform: "rotate(-25 " + lx + " " + ly + ")", class: "tick" });
    });
    svg.setAttribute("data-marks", String(marks));
    svg.setAttribute("data-rendered", "true");
    if (series.length > 1) legend(svg.parentNode, series.map(function (s) { return s.name; }));
  }

  // x: epoch ms (bins); one polyline (and a dot per point) per series
  function lines(svg, spec) {
    const xs = spec.x, series = spec.series;
    if (!xs.length || !series.length) return empty(svg, spec.empty || "no data");
    let maxV = 0;
    series.forEach(function (s) { s.values.forEach(function (v) { maxV = Math.max(maxV, v || 0); }); });
    const maxY = niceMax(maxV);
    frame(svg, maxY, spec.yLabel);
    const plotW = W - M.left - M.right, plotH = H - M.top - M.bottom;
    const x0 = xs[0], x1 = xs[xs.length - 1];
    const px = function (x) { return x1 === x0 ? M.left + plotW / 2 : M.left + ((x - x0) * plotW) / (x1 - x0); };
    const py = function (v) { return M.top + plotH - (plotH * (v || 0)) / maxY; };
    const withHour = spec.binMs < 86400000;
    const ticks = Math.min(xs.length, 6);
    for (let i = 0; i < ticks; i++) {
      const x = xs[Math.round((i * (xs.length - 1)) / Math.max(ticks - 1, 1))];
      text(svg, px(x), H - M.bottom + 16, utc(x, withHour), { "text-anchor": "middle", class: "tick" });
    }
    let marks = 0;
    const g = el("g", { class: "marks" }, svg);
    series.forEach(function (ser, s) {
      const color = PALETTE[s % PALETTE.length];
      const points = xs.map(function (x, i) { return px(x) + "," + py(ser.values[i]); });
      el("polyline", { points: points.join(" "), fill: "none", stroke: color,
        "stroke-width": 2 }, g);
      xs.forEach(function (x, i) {
        const v = ser.values[i] || 0;
        if (!v) return;
        const dot = el("circle", { cx: px(x), cy: py(v), r: 2.5, fill: color, "data-value": v }, g);
        el("title", {}, dot).textContent = ser.name + ", " + utc(x, true) + ": " + v;
        marks++;
      });
    });
    svg.setAttribute("data-marks", String(marks));
    svg.setAttribute("data-rendered", "true");
    legend(svg.parentNode, series.map(function (s) { return s.name; }));
  }

  const data = JSON.parse(document.getElementById("report-data").textContent);
  document.querySelectorAll("svg[data-chart]").forEach(function (svg) {
    const spec = data.charts[svg.getAttribute("data-chart")];
    try {
      if (!spec) empty(svg, "no data");
      else if (spec.kind === "bars") bars(svg, spec);
      else lines(svg, spec);
    } catch (err) {
      svg.setAttribute("data-error", String(err));
      throw err;
    }
  });
  document.body.setAttribute("data-charts-done", "true");
})();
