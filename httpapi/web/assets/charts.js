// Gatehouse admin charts: bar charts drawn as inline SVG from the buckets
// of GET /v1/admin/stats. No library, no build step. Colours come from
// classes in admin.css (the page's CSP allows no inline styles).
(function () {
  "use strict";
  const NS = "http://www.w3.org/2000/svg";
  const W = 600, H = 130, TOP = 8, BOTTOM = 18, LEFT = 40, RIGHT = 8;

  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, String(attrs[k]));
    if (parent) parent.appendChild(e);
    return e;
  }

  function text(parent, x, y, s, anchor) {
    const t = el("text", { x: x, y: y, "text-anchor": anchor || "start", class: "axis" }, parent);
    t.textContent = s;
    return t;
  }

  function clock(iso, withDay) {
    const d = new Date(iso);
    const hm = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    return withDay ? d.toLocaleDateString([], { month: "short", day: "numeric" }) + " " + hm : hm;
  }

  // render draws buckets into svg. spec.series lists {key, label, value(b)};
  // spec.layout is "stack" (one bar, a segment per series) or "side" (a
  // bar per series). spec.format formats a value for titles; spec.points,
  // when set, is {label, value(b), format} drawn as dots on a scale of
  // their own (the turns' p95). Every bucket with something in it gets a
  // <g class="bar"> whose data-count is its total and whose <title> says
  // what it holds; empty buckets get nothing.
  function render(svg, buckets, spec) {
    svg.replaceChildren();
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("role", "img");
    const fmt = spec.format || String;
    const n = buckets.length;
    const slot = (W - LEFT - RIGHT) / Math.max(n, 1);
    const plotH = H - TOP - BOTTOM;
    const total = (b) => spec.series.reduce((s, x) => s + x.value(b), 0);
    let max = 0;
    for (const b of buckets) {
      max = Math.max(max, spec.layout === "side" ? Math.max(...spec.series.map((x) => x.value(b))) : total(b));
    }
    const y = (v) => TOP + plotH - (max > 0 ? (v / max) * plotH : 0);
    el("line", { x1: LEFT, y1: TOP + plotH, x2: W - RIGHT, y2: TOP + plotH, class: "baseline" }, svg);
    text(svg, LEFT - 4, TOP + 8, fmt(max), "end");
    text(svg, LEFT - 4, TOP + plotH, fmt(0), "end");
    const day = n > 0 && (new Date(buckets[n - 1].start) - new Date(buckets[0].start)) > 6 * 3600e3;
    if (n > 0) {
      text(svg, LEFT, H - 4, clock(buckets[0].start, day));
      text(svg, W - RIGHT, H - 4, clock(buckets[n - 1].start, day), "end");
    }
    let bars = 0, sum = 0;
    buckets.forEach((b, i) => {
      const t = total(b);
      if (t <= 0) return;
      bars++;
      sum += t;
      const g = el("g", { class: "bar", "data-testid": "bar", "data-start": b.start, "data-count": t }, svg);
      const parts = spec.series.filter((x) => x.value(b) > 0).map((x) => fmt(x.value(b)) + " " + x.label);
      el("title", {}, g).textContent = clock(b.start, day) + ": " + parts.join(", ");
      const x0 = LEFT + i * slot + slot * 0.1, w = slot * 0.8;
      if (spec.layout === "side") {
        const k = spec.series.length, sw = w / k;
        spec.series.forEach((x, j) => {
          const v = x.value(b);
          if (v > 0) el("rect", { x: x0 + j * sw, y: y(v), width: Math.max(sw, 1), height: TOP + plotH - y(v), class: "s-" + x.key, "data-series": x.key, "data-count": v }, g);
        });
      } else {
        let acc = 0;
        for (const x of spec.series) {
          const v = x.value(b);
          if (v <= 0) continue;
          el("rect", { x: x0, y: y(acc + v), width: Math.max(w, 1), height: y(acc) - y(acc + v), class: "s-" + x.key, "data-series": x.key, "data-count": v }, g);
          acc += v;
        }
      }
    });
    let points = 0;
    if (spec.points) {
      const p = spec.points;
      const pmax = Math.max(0, ...buckets.map(p.value));
      buckets.forEach((b, i) => {
        const v = p.value(b);
        if (!(v > 0)) return;
        points++;
        const c = el("circle", { cx: LEFT + (i + 0.5) * slot, cy: TOP + plotH - (v / pmax) * plotH, r: 3, class: "point", "data-testid": "point", "data-value": v }, svg);
        el("title", {}, c).textContent = clock(b.start, day) + ": " + p.label + " " + p.format(v);
      });
    }
    if (points > 0) {
      const top = Math.max(...buckets.map(spec.points.value));
      text(svg, W - RIGHT, TOP + 8, spec.points.label + " up to " + spec.points.format(top), "end").setAttribute("class", "axis point-scale");
    }
    svg.dataset.bars = String(bars);
    svg.dataset.total = String(sum);
    svg.dataset.points = String(points);
    return { bars: bars, total: sum, points: points };
  }

  window.GatehouseCharts = { render: render };
})();
