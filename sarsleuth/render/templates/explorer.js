// The metrics explorer of the sarsleuth HTML report: each host's sar
// sections drawn with uPlot when they are opened, one chart per group of
// metrics sar prints together, for the device picked.  Every chart of a
// host shares its zoom (drag across a chart; double-click or "Reset zoom"
// shows everything) and its crosshair (the values at the time hovered, in
// each chart's legend).  Times are labelled on the clock the heading
// names.  Names from the inputs are only ever written as text.
(function () {
  "use strict";
  const source = document.getElementById("explorer-data");
  if (!source || typeof uPlot === "undefined") return;
  const DATA = JSON.parse(source.textContent);
  const COLOURS = ["#1565c0", "#c62828", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f", "#795548", "#ad1457",
                   "#558b2f", "#37474f", "#f9a825", "#5c6bc0"];
  const STEPS = [1, 2, 5, 10, 15, 20, 30, 60, 120, 180, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 14400,
                 21600, 43200, 86400, 172800, 604800, 1209600, 2592000, 7862400, 15724800, 31536000];
  const HEIGHT = 190, LABEL_WIDTH = 86;

  // ---------------------------------------------------------------- clock
  function offsetAt(t) {
    let off = DATA.offsets[0][1];
    for (const [from, o] of DATA.offsets) { if (t >= from) off = o; else break; }
    return off;
  }
  const pad = n => (n < 10 ? "0" : "") + n;
  function wall(t) { return new Date((t + offsetAt(t)) * 1000); }
  function dateText(d) { return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()); }
  function timeText(d, seconds) {
    return pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + (seconds ? ":" + pad(d.getUTCSeconds()) : "");
  }
  function fullText(t) { if (t == null) return "--"; const d = wall(t); return dateText(d) + " " + timeText(d, true); }

  // Round times on the clock between lo and hi, at most `most` of them.
  function ticks(lo, hi, most) {
    const span = Math.max(hi - lo, 1);
    let k = STEPS.findIndex(s => span / s <= most);
    if (k < 0) k = STEPS.length - 1;
    let out = every(lo, hi, STEPS[k]);
    if (out.length < 2 && k > 0) out = every(lo, hi, STEPS[--k]);
    return out.slice(0, most + 1);
  }
  // Labels of ticks: the time (seconds when the step is under a minute),
  // the date under the first and wherever it changes; days for day steps.
  function labels(at) {
    const step = at.length > 1 ? at[1] - at[0] : 60;
    let last = null;
    return at.map(t => {
      const d = wall(t), day = dateText(d);
      if (step >= 86400 - 3600) return step >= 2592000 ? day : day.slice(5);
      const text = timeText(d, Math.round(step) % 60 !== 0) + (day !== last ? "\n" + day : "");
      last = day;
      return text;
    });
  }
  function every(lo, hi, step) {
    const out = [];
    const off = offsetAt(lo), unit = Math.min(step, 86400);
    let w = Math.ceil((lo + off) / unit) * unit;          // round on the wall clock
    for (let i = 0; i < 60; i++, w += step) {
      const t = w - offsetAt(w - off);
      if (t > hi) break;
      if (t >= lo) out.push(t);
    }
    return out;
  }

  // --------------------------------------------------------------- numbers
  function decode(s, scale, flagged) {
    const out = [];
    let prev = 0, i = 0;
    while (i < s.length) {
      let tok = 0, mul = 1, c;
      do { c = s.charCodeAt(i++) - 63; tok += (c % 32) * mul; mul *= 32; } while (c >= 32);
      if (flagged) { if (tok % 2 === 1) { out.push(null); continue; } tok = tok / 2; }
      prev += tok % 2 === 1 ? -(tok + 1) / 2 : tok / 2;
      out.push(scale === 1 ? prev : prev / scale);
    }
    return out;
  }
  function axisNumbers(values) {
    const top = Math.max(0, ...values.map(v => Math.abs(v)));
    for (const [size, suffix, div] of [[1e9, "G", 1e9], [1e6, "M", 1e6], [1e4, "k", 1e3]])
      if (top >= size) return values.map(v => v === 0 ? "0" : +(v / div).toPrecision(6) + suffix);
    return values.map(v => String(+v.toPrecision(6)));
  }
  // The value axis fitted to the data, the data clear of the frame.
  function fitted(min, max) {
    if (min == null || max == null || !isFinite(min) || !isFinite(max)) { min = 0; max = 0; }
    if (max - min <= Math.abs(max) * 1e-9) {
      const half = Math.abs(max) * 0.05 || 0.5;
      const flat = max;
      min -= half; max += half;
      if (min < 0 && flat >= 0) min = 0;
    }
    const span = max - min;
    return [min >= 0 && min - 0.08 * span < 0 ? -0.08 * span : min - 0.08 * span, max + 0.08 * span];
  }

  // ---------------------------------------------------------------- charts
  const hosts = DATA.hosts.map((h, i) => ({data: h, index: i, charts: [], view: [h.lo, h.hi], syncing: false}));

  function zoomHost(host, lo, hi, from) {
    host.view = [lo, hi];
    host.syncing = true;
    for (const u of host.charts) if (u !== from) u.setScale("x", {min: lo, max: hi});
    host.syncing = false;
    const range = host.element.querySelector(".ex-range");
    if (range) range.textContent = fullText(lo) + " to " + fullText(hi);
  }

  function makeChart(host, box, chart, data, width) {
    const times = decode(data.t, data.ms ? 1000 : 1, false);
    const raw = chart.metrics.map((m, j) => {
      const d = (data.d && data.d[m] !== undefined) ? data.d[m] : chart.decimals[j];
      return data.v[j] ? decode(data.v[j], Math.pow(10, d), true) : null;
    });
    const shown = chart.metrics.map((m, j) => raw[j] ? j : -1).filter(j => j >= 0);
    if (!shown.length || !times.length) return null;
    let drawn = shown.map(j => raw[j]);
    if (chart.stacked) {                      // each series on the ones before it
      const sums = new Array(times.length).fill(0);
      drawn = drawn.map(vals => vals.map((v, i) => (v == null ? null : (sums[i] += v))));
    }
    const unit = chart.unit;
    const series = [{label: "time", value: (u, t) => (t == null ? "--" : fullText(t))}];
    shown.forEach((j, n) => {
      const colour = COLOURS[n % COLOURS.length];
      const dec = (data.d && data.d[chart.metrics[j]] !== undefined) ? data.d[chart.metrics[j]] : chart.decimals[j];
      series.push({
        label: chart.metrics[j], stroke: colour, width: 1.25, spanGaps: false,
        fill: chart.stacked ? colour + "40" : undefined,
        value: (u, v, s, i) => {
          const x = i == null ? null : raw[j][i];
          return x == null ? "--" : x.toFixed(Math.max(0, dec)) + (unit ? " " + unit : "");
        },
      });
    });
    const bands = chart.stacked ? shown.slice(1).map((_, n) => ({series: [n + 2, n + 1]})) : undefined;
    const opts = {
      width: width, height: HEIGHT,
      legend: {live: true},
      cursor: {sync: {key: "host" + host.index, setSeries: false}, drag: {x: true, y: false},
               bind: {dblclick: u => () => { zoomHost(host, host.data.lo, host.data.hi, null); return null; }}},
      select: {show: true},
      scales: {x: {time: false, auto: false}, y: {range: (u, min, max) => fitted(min, max)}},
      bands: bands,
      series: series,
      axes: [
        {space: LABEL_WIDTH, size: 44,
         splits: (u, axis, min, max) => ticks(min, max, Math.max(2, Math.floor(u.over.clientWidth / LABEL_WIDTH))),
         values: (u, splits) => {
           const text = labels(splits);
           u.root.dataset.ticks = JSON.stringify(splits.map((t, i) => [t, text[i].split("\n")[0]]));
           return text;
         }},
        {size: 54, label: unit || undefined, labelSize: 14, values: (u, splits) => axisNumbers(splits)},
      ],
      hooks: {
        drawClear: [u => {
          const ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
          ctx.save();
          ctx.fillStyle = "rgba(255, 183, 77, 0.28)";
          for (const [a, b] of host.data.incidents) {
            const x0 = Math.max(u.bbox.left, u.valToPos(a, "x", true));
            const x1 = Math.min(u.bbox.left + u.bbox.width, u.valToPos(b, "x", true));
            if (x1 >= u.bbox.left && x0 <= u.bbox.left + u.bbox.width) ctx.fillRect(x0, top, Math.max(x1 - x0, 2), h);
          }
          ctx.restore();
        }],
        setSelect: [u => {
          if (u.select.width < 3) return;
          const lo = u.posToVal(u.select.left, "x"), hi = u.posToVal(u.select.left + u.select.width, "x");
          u.setSelect({left: 0, width: 0, top: 0, height: 0}, false);
          zoomHost(host, lo, hi, null);
        }],
        setScale: [(u, key) => {
          if (key !== "x") return;
          u.root.dataset.lo = u.scales.x.min;
          u.root.dataset.hi = u.scales.x.max;
        }],
      },
    };
    opts.cursor.drag.setScale = false;
    const u = new uPlot(opts, [times, ...drawn], box);
    u.setScale("x", {min: host.view[0], max: host.view[1]});
    u.root.dataset.lo = u.scales.x.min;
    u.root.dataset.hi = u.scales.x.max;
    return u;
  }

  function draw(host, details) {
    const section = host.data.sections[+details.dataset.sec];
    const picker = details.querySelector("select.ex-dev");
    const device = picker ? +picker.value : 0;
    const area = details.querySelector(".ex-charts");
    for (const u of (details._charts || [])) { u.destroy(); host.charts.splice(host.charts.indexOf(u), 1); }
    details._charts = [];
    area.textContent = "";
    section.charts.forEach((chart, c) => {
      const figure = document.createElement("figure");
      figure.className = "ex-chart";
      const caption = document.createElement("figcaption");
      caption.textContent = chart.title + (chart.unit ? " (" + chart.unit + ")" : "") + (chart.stacked ? ", stacked" : "")
        + (section.devices.length > 1 ? ", " + section.devices[device] : "");
      figure.appendChild(caption);
      area.appendChild(figure);
      const u = makeChart(host, figure, chart, section.data[device][c], Math.max(200, figure.clientWidth));
      if (u) { details._charts.push(u); host.charts.push(u); }
      else figure.remove();
    });
  }

  const resize = new ResizeObserver(entries => {
    for (const e of entries) for (const u of (e.target._charts || [])) {
      const w = Math.max(200, u.root.parentElement.clientWidth);
      if (Math.abs(w - u.width) > 1) u.setSize({width: w, height: HEIGHT});
    }
  });

  document.querySelectorAll(".ex-host").forEach(el => {
    const host = hosts[+el.dataset.host];
    host.element = el;
    zoomHost(host, host.data.lo, host.data.hi, null);
    el.querySelector(".ex-reset").addEventListener("click", () => zoomHost(host, host.data.lo, host.data.hi, null));
    el.querySelectorAll(".ex-inc").forEach(b => b.addEventListener("click", () => {
      const lo = +b.dataset.lo, hi = +b.dataset.hi, margin = Math.max((hi - lo) * 0.5, 60);
      zoomHost(host, Math.max(host.data.lo, lo - margin), Math.min(host.data.hi, hi + margin), null);
    }));
    el.querySelectorAll("details.ex-sec").forEach(details => {
      details.addEventListener("toggle", () => { if (details.open && !details._charts) draw(host, details); });
      const picker = details.querySelector("select.ex-dev");
      if (picker) picker.addEventListener("change", () => draw(host, details));
      resize.observe(details);
      if (details.open) draw(host, details);
    });
  });
})();
