/* BenchFlow viewer: charts drawn with the vendored uPlot (static/vendor, MIT).
 *
 * Every chart is a figure: the canvas is hidden from screen readers and the
 * figure carries a text alternative (aria-label + a caption); each chart sits
 * beside a table with the same numbers. Colours are the Okabe–Ito palette
 * (distinguishable with the common colour-vision deficiencies) and never the
 * only channel: frontier points are filled, dominated ones hollow, controls
 * are diamonds, and every point is numbered as in its table. Axis and grid
 * colours come from the page's CSS variables, so light and dark mode both read.
 */
"use strict";

(function () {
  const {el} = BF;

  BF.COLORS = {
    passed: "#009E73", failed: "#D55E00", errored: "#E69F00", verifier_errored: "#CC79A7", unscored: "#8C8C8C",
    accent: "#0072B2", categories: ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#8C8C8C"],
  };

  function css(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
  }

  function axis(label, values) {
    const fg = css("--fg"), line = css("--line");
    return {label, stroke: fg, values, grid: {stroke: line, width: 1}, ticks: {stroke: line, width: 1},
            font: "12px system-ui, sans-serif", labelFont: "12px system-ui, sans-serif"};
  }

  /** A figure that builds its uPlot once it has a width, and follows the width afterwards. */
  function figure(alt, caption, build) {
    const box = el("div", {class: "chart-canvas", "aria-hidden": "true"});
    const fig = el("figure", {class: "chart", role: "img", "aria-label": alt}, box,
      caption ? el("figcaption", {class: "muted", text: caption}) : null);
    let plot = null;
    const observer = new ResizeObserver(() => {
      const width = Math.floor(box.clientWidth);
      if (width < 50) return;
      if (!plot) {
        plot = build(box, width);
        fig.dataset.chart = "drawn";
      } else if (Math.abs(plot.width - width) > 2) plot.setSize({width, height: plot.height});
    });
    observer.observe(box);
    fig.dataset.chart = "pending";
    return fig;
  }

  function niceMax(value) {
    return value > 0 ? value * 1.12 : 1;
  }

  /**
   * Pass rate (with its interval) against x for a list of points:
   *   points: [{n, x, y, low, high, frontier, control, label}], frontier: [indices in x order]
   */
  BF.paretoChart = function paretoChart(opts) {
    const pts = opts.points.filter((p) => p.x !== null && p.x !== undefined && p.y !== null);
    const alt = opts.alt;
    return figure(alt, opts.caption, (box, width) => {
      const xs = pts.map((p) => p.x);
      const xmax = niceMax(Math.max(0, ...xs));
      const order = pts.map((p, i) => i).sort((a, b) => pts[a].x - pts[b].x);
      const data = [order.map((i) => pts[i].x), order.map((i) => pts[i].y)];
      const draw = (u) => {
        const ctx = u.ctx;
        const dpr = devicePixelRatio || 1;
        const fg = css("--fg"), muted = css("--muted"), card = css("--card"), accent = css("--accent");
        const X = (v) => u.valToPos(v, "x", true), Y = (v) => u.valToPos(v, "y", true);
        ctx.save();
        ctx.beginPath();
        ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
        ctx.clip();
        const front = pts.filter((p) => p.frontier).sort((a, b) => a.x - b.x);
        if (front.length > 1) {  // the frontier: a staircase through its points
          ctx.strokeStyle = accent;
          ctx.lineWidth = 2 * dpr;
          ctx.setLineDash([6 * dpr, 4 * dpr]);
          ctx.beginPath();
          front.forEach((p, i) => {
            if (i === 0) ctx.moveTo(X(p.x), Y(p.y));
            else { ctx.lineTo(X(p.x), Y(front[i - 1].y)); ctx.lineTo(X(p.x), Y(p.y)); }
          });
          ctx.stroke();
          ctx.setLineDash([]);
        }
        for (const p of pts) {
          const color = p.frontier ? accent : muted;
          const x = X(p.x), y = Y(p.y), r = 6 * dpr;
          if (p.low !== null && p.low !== undefined) {
            ctx.strokeStyle = color;
            ctx.lineWidth = 1.5 * dpr;
            ctx.beginPath();
            ctx.moveTo(x, Y(p.low)); ctx.lineTo(x, Y(p.high));
            ctx.moveTo(x - 4 * dpr, Y(p.low)); ctx.lineTo(x + 4 * dpr, Y(p.low));
            ctx.moveTo(x - 4 * dpr, Y(p.high)); ctx.lineTo(x + 4 * dpr, Y(p.high));
            ctx.stroke();
          }
          ctx.beginPath();
          if (p.control) { ctx.moveTo(x, y - r); ctx.lineTo(x + r, y); ctx.lineTo(x, y + r); ctx.lineTo(x - r, y); ctx.closePath(); }
          else ctx.arc(x, y, r, 0, 2 * Math.PI);
          ctx.fillStyle = p.frontier ? color : card;
          ctx.fill();
          ctx.strokeStyle = color;
          ctx.lineWidth = 2 * dpr;
          ctx.stroke();
        }
        ctx.restore();
        ctx.fillStyle = fg;  // the numbers (as in the table) outside the clip, so one at 100% is not cut
        ctx.font = (12 * dpr) + "px system-ui, sans-serif";
        ctx.textBaseline = "bottom";
        for (const p of pts) ctx.fillText(String(p.n), X(p.x) + 11 * dpr, Y(p.y) - 3 * dpr);
      };
      return new uPlot({
        width, height: 300, legend: {show: false}, cursor: {show: false},
        scales: {x: {time: false, range: [0, xmax]}, y: {range: [-0.05, 1.05]}},  // room for points at 0% and 100%
        axes: [axis(opts.xLabel, opts.xFormat ? (u, splits) => splits.map(opts.xFormat) : undefined),
               Object.assign(axis("pass rate", (u, splits) => splits.map((v) => Math.round(v * 100) + "%")),
                             {splits: () => [0, 0.2, 0.4, 0.6, 0.8, 1]})],
        series: [{}, {label: "pass rate", paths: () => null, points: {show: false}}],
        hooks: {draw: [draw]},
      }, data, box);
    });
  };

  /** Stacked bars: x values, and series [{label, color, values}] stacked bottom-up in the given order. */
  BF.stackedBars = function stackedBars(opts) {
    return figure(opts.alt, opts.caption, (box, width) => {
      const cumulative = [];
      let running = opts.x.map(() => 0);
      for (const s of opts.series) {
        running = running.map((v, i) => v + (s.values[i] || 0));
        cumulative.push(running);
      }
      const order = opts.series.map((s, i) => i).reverse();  // tallest first, so each lower one is drawn on top
      const step = opts.x.length > 1 ? opts.x[1] - opts.x[0] : 1;
      const ymax = niceMax(Math.max(1, ...(cumulative.length ? cumulative[cumulative.length - 1] : [1])));
      return new uPlot({
        width, height: opts.height || 260,
        legend: {show: true, live: true},
        scales: {x: {time: false, range: [opts.x[0] - step / 2, opts.x[opts.x.length - 1] + step / 2]},
                 y: {range: [0, ymax]}},
        axes: [axis(opts.xLabel, opts.xFormat ? (u, splits) => splits.map(opts.xFormat) : undefined),
               axis(opts.yLabel)],
        series: [{label: opts.xLabel, value: (u, v) => (v === null || v === undefined ? "—" : opts.xFormat ? opts.xFormat(v) : v)}]
          .concat(order.map((i) => ({
            label: opts.series[i].label, stroke: opts.series[i].color, fill: opts.series[i].color, width: 0,
            paths: uPlot.paths.bars({size: [0.85, 60], align: 0}), points: {show: false},
            value: (u, v, si, idx) => (idx === null || idx === undefined ? "—" : String(opts.series[i].values[idx] || 0)),
          }))),
      }, [opts.x].concat(order.map((i) => cumulative[i])), box);
    });
  };
})();
