// The report's charts: inline SVG drawn from the JSON embedded in the page (no library, no
// network). Text from the data goes in through textContent only, never as markup.
//
// A chart is drawn at the width it gets and drawn again when that changes, so that its text
// keeps its size on a phone. Value axes step by 1, 2 or 5 x 10^n (the figures are counts: at
// least 1); time axes by whole hours or days (UTC). The series that sums the interfaces beyond
// the top ones never sets a chart's scale: a line chart draws it in a panel of its own (with
// its own scale), a bar chart cuts its bar at the end of the scale and writes its value.
"use strict";
(function () {
  const NS = "http://www.w3.org/2000/svg";
  const PALETTE = ["#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6",
    "#dd4477", "#66aa00", "#b82e2e", "#316395", "#994499", "#22aa99"];
  const OTHER_COLOR = "#6f7888";
  const HOUR = 3600000, DAY = 24 * HOUR;
  const TIME_STEPS = [HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 3 * DAY,
    4 * DAY, 7 * DAY, 14 * DAY, 28 * DAY, 56 * DAY, 112 * DAY, 364 * DAY];
  // the width of a character of the charts' 11 px text, a little generous (for margins)
  const CHAR_W = 6.8;

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
  function count(n) { return Math.round(n).toLocaleString("en-US"); }
  function shortNumber(n) {
    const one = function (v) { return String(Math.round(v * 10) / 10); };
    if (n >= 1e9 && n % 1e8 === 0) return one(n / 1e9) + "G";
    if (n >= 1e6 && n % 1e5 === 0) return one(n / 1e6) + "M";
    if (n >= 1e4 && n % 1e2 === 0) return one(n / 1e3) + "k";
    return count(n);
  }
  function maxOf(values) {
    let m = 0;
    for (const v of values) if ((v || 0) > m) m = v;
    return m;
  }

  // a value axis from 0: its step (1, 2 or 5 x 10^n, at least 1), top and ticks
  function valueAxis(maxV, maxTicks) {
    const target = Math.max(maxV, 1) / Math.max(maxTicks, 1);
    const p = Math.pow(10, Math.floor(Math.log10(target)));
    let step = 10 * p;
    for (const f of [1, 2, 5]) {
      if (f * p >= target) { step = f * p; break; }
    }
    step = Math.max(1, Math.round(step));
    const top = Math.max(step, Math.ceil(maxV / step) * step);
    const ticks = [];
    for (let i = 0; i * step <= top; i++) ticks.push(i * step);
    return { step: step, max: top, ticks: ticks };
  }
  // the narrowest step whose ticks (its multiples from x0 to x1) are at most maxTicks
  function timeStep(x0, x1, maxTicks) {
    for (const step of TIME_STEPS) {
      if (Math.floor(x1 / step) - Math.ceil(x0 / step) + 1 <= maxTicks) return step;
    }
    return TIME_STEPS[TIME_STEPS.length - 1];
  }
  // a time tick's label, one or two lines: "09:00" (and "11-25" at the first and at 00:00)
  function timeLabel(ms, step, first) {
    const iso = new Date(ms).toISOString();
    const day = iso.slice(5, 10), hm = iso.slice(11, 16);
    if (step >= DAY) return first ? [day, iso.slice(0, 4)] : [day];
    return first || hm === "00:00" ? [hm, day] : [hm];
  }
  // a label in lines that fit in width (at most maxLines; broken after "/", ".", "-", "_" or
  // a space, else anywhere; the last line ends in an ellipsis if the rest does not fit),
  // measured with a text element of the chart's class
  function wrap(svg, content, width, cls, maxLines) {
    const probe = text(svg, 0, -100, "", { class: cls });
    const fits = function (s) { probe.textContent = s; return probe.getComputedTextLength() <= width; };
    const lines = [];
    let rest = content;
    while (rest && lines.length < maxLines) {
      if (fits(rest)) { lines.push(rest); rest = ""; break; }
      let cut = 1;
      while (cut < rest.length && fits(rest.slice(0, cut + 1))) cut++;
      const soft = Math.max(rest.lastIndexOf("/", cut - 1), rest.lastIndexOf(".", cut - 1),
        rest.lastIndexOf("-", cut - 1), rest.lastIndexOf("_", cut - 1),
        rest.lastIndexOf(" ", cut - 1));
      if (soft > 0) cut = soft + 1;
      lines.push(rest.slice(0, cut));
      rest = rest.slice(cut);
    }
    if (rest) {
      let last = lines[lines.length - 1];
      while (last.length > 1 && !fits(last + "\u2026")) last = last.slice(0, -1);
      lines[lines.length - 1] = last + "\u2026";
    }
    svg.removeChild(probe);
    return lines;
  }
  function legend(svg, items) {
    const figure = svg.parentNode;
    const old = figure.querySelector(".legend");
    if (old) figure.removeChild(old);
    if (!items.length) return;
    const box = document.createElement("div");
    box.className = "legend";
    for (const item of items) {
      const entry = document.createElement("span");
      const swatch = document.createElement("i");
      swatch.style.background = item.color;
      entry.appendChild(swatch);
      const name = document.createElement("b");
      // a long interface name may break after its "/" and "." (a word break, not markup)
      item.name.split(/(?<=[/.])/).forEach(function (part, i) {
        if (i) name.appendChild(document.createElement("wbr"));
        name.appendChild(document.createTextNode(part));
      });
      entry.appendChild(name);
      box.appendChild(entry);
    }
    figure.appendChild(box);
  }
  function start(svg, W, H) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("role", "img");
  }
  function done(svg, marks) {
    svg.setAttribute("data-marks", String(marks));
    svg.setAttribute("data-rendered", "true");
  }
  function empty(svg, W, why) {
    start(svg, W, 44);
    text(svg, W / 2, 26, why, { "text-anchor": "middle", class: "empty" });
    legend(svg, []);
    done(svg, 0);
  }

  // categories as rows (their labels whole, above their bars); one bar segment per series,
  // stacked. The "other" category is left out of the scale: when it passes the scale's end
  // its bar is cut there (marked) and its value written.
  function bars(svg, spec, W) {
    const cats = spec.categories, series = spec.series;
    if (!cats.length || !series.length) return empty(svg, W, spec.empty || "no data");
    const totals = cats.map(function (_, c) {
      return series.reduce(function (s, ser) { return s + (ser.values[c] || 0); }, 0);
    });
    const otherAt = spec.otherCategory == null ? -1 : cats.indexOf(spec.otherCategory);
    let maxV = maxOf(totals.filter(function (_, c) { return c !== otherAt; }));
    if (maxV === 0 && otherAt >= 0) maxV = totals[otherAt];
    const valueW = Math.max.apply(null, totals.map(function (t) { return count(t).length; }));
    const M = { left: 4, right: valueW * CHAR_W + 10, top: 24 };
    const plotW = W - M.left - M.right;
    const axis = valueAxis(maxV, Math.max(2, Math.min(6, Math.floor(plotW / 80))));
    const LINE = 13, BAR = 15, GAP = 10;
    start(svg, W, 100);
    const labels = cats.map(function (cat, c) {
      const name = c === otherAt && spec.otherLabel ? spec.otherLabel : cat;
      const shown = c === otherAt && totals[c] > axis.max ? name + " (not to scale)" : name;
      return { name: name, lines: wrap(svg, shown, W - M.left - 4, "category", 3), whole: shown };
    });
    const tops = [];
    let H = M.top;
    labels.forEach(function (label) { tops.push(H); H += label.lines.length * LINE + 2 + BAR + GAP; });
    H += 4;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("data-scale-max", String(axis.max));
    const axes = el("g", { class: "axes" }, svg);
    const px = function (v) { return M.left + (plotW * v) / axis.max; };
    axis.ticks.forEach(function (v, i) {
      el("line", { x1: px(v), x2: px(v), y1: M.top - 6, y2: H - 4, class: "grid" }, axes);
      const last = i === axis.ticks.length - 1;
      const label = shortNumber(v) + (last && spec.yLabel ? " " + spec.yLabel : "");
      text(axes, px(v), 12, label, { class: "tick", "data-tick": v,
        "text-anchor": i === 0 ? "start" : last ? "end" : "middle" });
    });
    const g = el("g", { class: "marks" }, svg);
    const cuts = el("g", { class: "cuts" }, svg);
    let marks = 0;
    cats.forEach(function (cat, c) {
      const top = tops[c];
      const off = c === otherAt && totals[c] > axis.max;
      const name = labels[c].name;
      labels[c].lines.forEach(function (line, l) {
        const node = text(svg, M.left, top + (l + 1) * LINE - 2, line, { class: "category" });
        if (labels[c].lines.join("") !== labels[c].whole) {
          el("title", {}, node).textContent = labels[c].whole;
        }
      });
      const y = top + labels[c].lines.length * LINE + 2;
      // an "other" bar past the scale fills the plot, its segments in proportion
      const unit = off ? plotW / totals[c] : plotW / axis.max;
      let base = 0;
      series.forEach(function (ser, s) {
        const v = ser.values[c] || 0;
        if (v <= 0) return;
        const r = el("rect", { x: M.left + base * unit, y: y, width: Math.max(v * unit, 0.5),
          height: BAR, fill: c === otherAt && series.length === 1 ? OTHER_COLOR
            : PALETTE[s % PALETTE.length], "data-value": v }, g);
        if (off) r.setAttribute("data-off-scale", "true");
        el("title", {}, r).textContent =
          (series.length > 1 ? ser.name + ", " : "") + name + ": " + count(v);
        base += v;
        marks++;
      });
      if (off) {
        const x = M.left + plotW - 18;
        for (const dx of [0, 5]) {
          el("line", { x1: x + dx, x2: x + dx + 5, y1: y + BAR + 2, y2: y - 2, class: "cut" },
            cuts);
        }
      }
      text(svg, M.left + base * unit + 5, y + BAR - 3, count(totals[c]), { class: "value" });
    });
    done(svg, marks);
    legend(svg, series.length > 1 ? series.map(function (s, i) {
      return { name: s.name, color: PALETTE[i % PALETTE.length] };
    }) : []);
  }

  // x: epoch ms (bins); one polyline (and a dot per non-zero point) per series; "other" (the
  // rest, summed) in a panel of its own below, with its own scale
  function lines(svg, spec, W) {
    const xs = spec.x, named = spec.series, other = spec.other || null;
    if (!xs.length || (!named.length && !other)) {
      return empty(svg, W, spec.empty || "no data");
    }
    const narrow = W < 520;
    const mainH = named.length ? (narrow ? 170 : 210) : 0;
    const otherH = other ? (narrow ? 80 : 96) : 0;
    const mainAxis = valueAxis(maxOf([].concat.apply([], named.map(function (s) {
      return s.values;
    }))), narrow ? 4 : 5);
    const otherAxis = other ? valueAxis(maxOf(other.values), 3) : null;
    const tickW = Math.max.apply(null, [].concat(mainAxis.ticks, otherAxis ? otherAxis.ticks : [])
      .map(function (v) { return shortNumber(v).length; }));
    const M = { left: tickW * CHAR_W + 10, right: 22, top: 20 };
    const plotW = W - M.left - M.right;
    const x0 = xs[0], x1 = xs[xs.length - 1];
    const px = function (x) {
      return x1 === x0 ? M.left + plotW / 2 : M.left + ((x - x0) * plotW) / (x1 - x0);
    };
    const panels = [];
    let y = M.top;
    if (named.length) {
      panels.push({ top: y, height: mainH, axis: mainAxis, series: named, cls: "main",
        title: spec.yLabel || "" });
      y += mainH + 40;
    }
    if (other) {
      panels.push({ top: y, height: otherH, axis: otherAxis, series: [other], cls: "other",
        title: other.name + " (its own scale)" });
      y += otherH;
    }
    const H = y + 36;
    start(svg, W, H);
    svg.setAttribute("data-scale-max", String(mainAxis.max));
    // time ticks: whole hours or days, as many as fit
    const step = timeStep(x0, x1, Math.max(2, Math.floor(plotW / 64)));
    const times = [];
    for (let t = Math.ceil(x0 / step) * step; t <= x1; t += step) times.push(t);
    if (!times.length) times.push(x0);
    const withDots = xs.length <= plotW / 8;
    let marks = 0;
    panels.forEach(function (panel, p) {
      const axes = el("g", { class: "axes panel-" + panel.cls }, svg);
      const py = function (v) { return panel.top + panel.height - (panel.height * (v || 0)) / panel.axis.max; };
      text(axes, 0, panel.top - 8, panel.title, { class: "panel-title" });
      panel.axis.ticks.forEach(function (v) {
        el("line", { x1: M.left, x2: W - M.right, y1: py(v), y2: py(v), class: "grid" }, axes);
        text(axes, M.left - 6, py(v) + 4, shortNumber(v), { "text-anchor": "end", class: "tick",
          "data-tick": v });
      });
      times.forEach(function (t) {
        el("line", { x1: px(t), x2: px(t), y1: panel.top, y2: panel.top + panel.height,
          class: "grid" }, axes);
      });
      axes.setAttribute("data-scale-max", String(panel.axis.max));
      const g = el("g", { class: "marks panel-" + panel.cls }, svg);
      panel.series.forEach(function (ser, s) {
        const color = panel.cls === "other" ? OTHER_COLOR : PALETTE[s % PALETTE.length];
        el("polyline", { points: xs.map(function (x, i) { return px(x) + "," + py(ser.values[i]); })
          .join(" "), fill: "none", stroke: color, "stroke-width": 2 }, g);
        xs.forEach(function (x, i) {
          const v = ser.values[i] || 0;
          if (!v) return;
          const dot = el("circle", { cx: px(x), cy: py(v), r: withDots ? 2.5 : 1.2, fill: color,
            "data-value": v }, g);
          el("title", {}, dot).textContent = ser.name + ", " +
            new Date(x).toISOString().slice(0, 16).replace("T", " ") + " UTC: " + count(v);
          marks++;
        });
      });
      if (p === panels.length - 1) {
        const base = panel.top + panel.height;
        times.forEach(function (t, i) {
          timeLabel(t, step, i === 0).forEach(function (line, l) {
            text(axes, px(t), base + 14 + 12 * l, line, { "text-anchor": "middle",
              class: "tick time" });
          });
        });
      }
    });
    done(svg, marks);
    const items = named.map(function (s, i) { return { name: s.name, color: PALETTE[i % PALETTE.length] }; });
    if (other) items.push({ name: other.name, color: OTHER_COLOR });
    legend(svg, items.length > 1 ? items : []);
  }

  const data = JSON.parse(document.getElementById("report-data").textContent);
  const charts = Array.prototype.slice.call(document.querySelectorAll("svg[data-chart]"));
  function widthOf(svg) {
    const box = svg.parentNode.getBoundingClientRect().width;
    return Math.max(240, Math.min(900, Math.floor(box || 760)));
  }
  function draw(svg) {
    const spec = data.charts[svg.getAttribute("data-chart")];
    const W = widthOf(svg);
    svg.drawnWidth = W;
    try {
      if (!spec) empty(svg, W, "no data");
      else if (spec.kind === "bars") bars(svg, spec, W);
      else lines(svg, spec, W);
    } catch (err) {
      svg.setAttribute("data-error", String(err));
      throw err;
    }
  }
  charts.forEach(draw);
  let pending = null;
  window.addEventListener("resize", function () {
    if (pending !== null) clearTimeout(pending);
    pending = setTimeout(function () {
      pending = null;
      charts.forEach(function (svg) { if (widthOf(svg) !== svg.drawnWidth) draw(svg); });
    }, 100);
  });
  document.body.setAttribute("data-charts-done", "true");
})();
