// Chart page: draws the candles, the signal markers and the current levels with TradingView's
// lightweight-charts (served by this server as /assets/lightweight-charts.js). The data comes
// from the page's JSON block (#chart-data). Times arrive already shifted to MYT.
"use strict";

/**
 * The chart's colours, read from the page's CSS custom properties (app.css): the chart is drawn
 * in the colour scheme (light or dark) the page is in, and its colours are defined once. A scheme
 * switch while the page is open recolours the page at once and the chart at its next load.
 */
function chartPalette() {
  var css = getComputedStyle(document.documentElement);
  function get(name) {
    return css.getPropertyValue(name).trim();
  }
  return {
    background: get("--bg"),
    text: get("--text"),
    muted: get("--muted"),
    grid: get("--chart-grid"),
    border: get("--line"),
    long: get("--long"),
    short: get("--short"),
    defense: get("--level-defense"),
    trigger: get("--level-trigger"),
    invalidation: get("--level-invalidation"),
  };
}

(function () {
  var container = document.getElementById("chart");
  var source = document.getElementById("chart-data");
  if (!container || !source || !window.LightweightCharts) return;
  var data = JSON.parse(source.textContent);
  var LWC = window.LightweightCharts;
  var colours = chartPalette();
  var LONG = colours.long;
  var SHORT = colours.short;

  var chart = LWC.createChart(container, {
    autoSize: true,
    layout: { background: { type: "solid", color: colours.background }, textColor: colours.text, attributionLogo: false },
    grid: { vertLines: { color: colours.grid }, horzLines: { color: colours.grid } },
    rightPriceScale: { borderColor: colours.border },
    timeScale: { borderColor: colours.border, timeVisible: data.intraday, secondsVisible: false },
    crosshair: { mode: 0 },
  });
  var series = chart.addSeries(LWC.CandlestickSeries, {
    upColor: LONG,
    downColor: SHORT,
    borderUpColor: LONG,
    borderDownColor: SHORT,
    wickUpColor: LONG,
    wickDownColor: SHORT,
  });
  series.setData(
    data.candles.map(function (c) {
      return { time: c[0], open: c[1], high: c[2], low: c[3], close: c[4] };
    }),
  );

  var STYLE = {
    LONG: { position: "belowBar", shape: "arrowUp", color: LONG, text: "L" },
    STRONG_LONG: { position: "belowBar", shape: "arrowUp", color: LONG, text: "L+" },
    SHORT: { position: "aboveBar", shape: "arrowDown", color: SHORT, text: "S" },
    STRONG_SHORT: { position: "aboveBar", shape: "arrowDown", color: SHORT, text: "S+" },
    NONE: { position: "inBar", shape: "circle", color: colours.muted, text: "\u00d7" },
  };
  LWC.createSeriesMarkers(
    series,
    data.markers.map(function (m) {
      var s = STYLE[m.signal];
      return { time: m.time, position: s.position, shape: s.shape, color: s.color, text: s.text };
    }),
  );

  var levels = data.levels;
  if (levels) {
    if (levels.defense !== null) {
      series.createPriceLine({ price: levels.defense, color: colours.defense, lineWidth: 2, lineStyle: LWC.LineStyle.Solid, axisLabelVisible: true, title: "defense" });
    }
    if (levels.trigger !== null) {
      series.createPriceLine({ price: levels.trigger, color: colours.trigger, lineWidth: 2, lineStyle: LWC.LineStyle.Dashed, axisLabelVisible: true, title: "trigger" });
      series.createPriceLine({ price: levels.invalidation, color: colours.invalidation, lineWidth: 2, lineStyle: LWC.LineStyle.Dotted, axisLabelVisible: true, title: "invalidation" });
    }
  }

  var count = data.candles.length;
  if (count > 200) chart.timeScale().setVisibleLogicalRange({ from: count - 200, to: count + 3 });
  else chart.timeScale().fitContent();
  // Lets tests (and anyone curious) see that the chart has drawn, and how much.
  requestAnimationFrame(function () {
    container.setAttribute("data-chart-ready", String(count));
  });
})();
