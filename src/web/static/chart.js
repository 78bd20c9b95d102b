// Chart page: draws the candles with a volume pane, the signal markers and the current levels,
// a readout of the candle under the crosshair, and the backtest's equity against buy-and-hold,
// with TradingView's lightweight-charts (served by this server as /assets/lightweight-charts.js).
// The data comes from the page's JSON block (#chart-data). Times arrive already shifted to MYT,
// so the library's UTC fields read as MYT.
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

(() => {
  var container = document.getElementById("chart");
  var source = document.getElementById("chart-data");
  if (!container || !source || !window.LightweightCharts) return;
  var data = JSON.parse(source.textContent);
  var LWC = window.LightweightCharts;
  var colours = chartPalette();
  var LONG = colours.long;
  var SHORT = colours.short;
  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

  function pad(n) {
    return (n < 10 ? "0" : "") + n;
  }
  // "16 Jun 2024 14:00" (the page's own date format, formatMyt), from a MYT-shifted time.
  function formatTime(seconds) {
    var d = new Date(seconds * 1000);
    var day = `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
    return data.intraday ? `${day} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}` : day;
  }
  // Axis labels carry dates: "2024", "Jun 2024", "16 Jun", "14:00".
  function tickMark(seconds, type) {
    var d = new Date(seconds * 1000);
    if (type === LWC.TickMarkType.Year) return String(d.getUTCFullYear());
    if (type === LWC.TickMarkType.Month) return `${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
    if (type === LWC.TickMarkType.DayOfMonth) return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]}`;
    return `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
  }
  // Prices with thousands separators and the page's precision (format.ts formatPrice).
  var big = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  var mid = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 4 });
  var volume = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });
  function formatPrice(p) {
    // The volume pane's axis reads through this too: its zero is "0", not "0.000".
    if (p === 0) return "0";
    var abs = Math.abs(p);
    if (abs >= 1000) return big.format(p);
    if (abs >= 1) return mid.format(p);
    return p.toPrecision(4);
  }

  // The smallest price step the axis may show, from the last close's magnitude (as formatPrice rounds).
  function minMove(candles) {
    var lastClose = candles.length > 0 ? Math.abs(candles[candles.length - 1][4]) : 1;
    return lastClose >= 1000 ? 0.01 : lastClose >= 1 ? 0.0001 : 1e-8;
  }

  function baseOptions() {
    return {
      autoSize: true,
      layout: {
        background: { type: "solid", color: colours.background },
        textColor: colours.text,
        attributionLogo: false,
      },
      grid: { vertLines: { color: colours.grid }, horzLines: { color: colours.grid } },
      rightPriceScale: { borderColor: colours.border },
      timeScale: {
        borderColor: colours.border,
        timeVisible: data.intraday,
        secondsVisible: false,
        tickMarkFormatter: tickMark,
      },
      localization: { locale: "en-US", timeFormatter: formatTime, priceFormatter: formatPrice },
      crosshair: { mode: 0 },
    };
  }

  var chart = LWC.createChart(container, baseOptions());
  var series = chart.addSeries(LWC.CandlestickSeries, {
    upColor: LONG,
    downColor: SHORT,
    borderUpColor: LONG,
    borderDownColor: SHORT,
    wickUpColor: LONG,
    wickDownColor: SHORT,
    // The axis labels, the crosshair label and the series' own formatter all read prices this way.
    priceFormat: { type: "custom", formatter: formatPrice, minMove: minMove(data.candles) },
  });
  var bars = data.candles.map((c) => ({ time: c[0], open: c[1], high: c[2], low: c[3], close: c[4] }));
  series.setData(bars);

  // Volume in its own pane under the candles, coloured by the candle's direction.
  var volumeSeries = chart.addSeries(
    LWC.HistogramSeries,
    {
      priceFormat: { type: "custom", formatter: (v) => volume.format(v) },
      priceLineVisible: false,
      lastValueVisible: false,
    },
    1,
  );
  volumeSeries.setData(
    data.candles.map((c) => ({
      time: c[0],
      value: c[5],
      color: c[4] >= c[1] ? "rgba(10,107,69,0.45)" : "rgba(179,38,30,0.45)",
    })),
  );
  chart.panes()[0].setStretchFactor(3);
  chart.panes()[1].setStretchFactor(1);

  // On a phone the markers lose their letters (the shape and colour say the same, and letters
  // of neighbouring markers ran together as "S+S+S+"), the level lines lose their titles (they
  // covered the price axis) and the chart opens on fewer candles (below), where markers do not crowd.
  var narrow = container.clientWidth < 640;

  var STYLE = {
    LONG: { position: "belowBar", shape: "arrowUp", color: LONG, text: "L" },
    STRONG_LONG: { position: "belowBar", shape: "arrowUp", color: LONG, text: "L+" },
    SHORT: { position: "aboveBar", shape: "arrowDown", color: SHORT, text: "S" },
    STRONG_SHORT: { position: "aboveBar", shape: "arrowDown", color: SHORT, text: "S+" },
    NONE: { position: "inBar", shape: "circle", color: colours.muted, text: "\u00d7" },
  };
  LWC.createSeriesMarkers(
    series,
    data.markers.map((m) => {
      var s = STYLE[m.signal];
      return { time: m.time, position: s.position, shape: s.shape, color: s.color, text: narrow ? "" : s.text };
    }),
  );

  var levels = data.levels;
  if (levels) {
    if (levels.defense !== null) {
      series.createPriceLine({
        price: levels.defense,
        color: colours.defense,
        lineWidth: 2,
        lineStyle: LWC.LineStyle.Solid,
        axisLabelVisible: true,
        title: narrow ? "" : "defense",
      });
    }
    if (levels.trigger !== null) {
      series.createPriceLine({
        price: levels.trigger,
        color: colours.trigger,
        lineWidth: 2,
        lineStyle: LWC.LineStyle.Dashed,
        axisLabelVisible: true,
        title: narrow ? "" : "trigger",
      });
      series.createPriceLine({
        price: levels.invalidation,
        color: colours.invalidation,
        lineWidth: 2,
        lineStyle: LWC.LineStyle.Dotted,
        axisLabelVisible: true,
        title: narrow ? "" : "invalidation",
      });
    }
  }

  // The readout: the candle under the crosshair, or the last one when the pointer is elsewhere.
  var readout = document.getElementById("chart-readout");
  var byTime = {};
  data.candles.forEach((c) => {
    byTime[c[0]] = c;
  });
  function showCandle(c) {
    if (!readout || !c) return;
    readout.textContent =
      `${formatTime(c[0])} MYT \u00b7 O ${formatPrice(c[1])} \u00b7 H ${formatPrice(c[2])} \u00b7 ` +
      `L ${formatPrice(c[3])} \u00b7 C ${formatPrice(c[4])} \u00b7 V ${volume.format(c[5])}`;
    readout.setAttribute("data-time", String(c[0]));
  }
  var last = data.candles[data.candles.length - 1];
  showCandle(last);
  chart.subscribeCrosshairMove((param) => {
    showCandle(param.time !== undefined && byTime[param.time] ? byTime[param.time] : last);
  });

  // The latest candles: 200 on a wide screen, 90 on a phone (where markers would crowd).
  var count = data.candles.length;
  var shown = narrow ? 90 : 200;
  if (count > shown) chart.timeScale().setVisibleLogicalRange({ from: count - shown, to: count + 3 });
  else chart.timeScale().fitContent();

  // The backtest's equity against buy-and-hold, both starting at 100.
  var equityContainer = document.getElementById("equity-chart");
  var equity = null;
  if (equityContainer && data.equity.length > 0) {
    const options = baseOptions();
    options.localization.priceFormatter = (v) => v.toFixed(1);
    options.crosshair = { mode: 1 };
    equity = LWC.createChart(equityContainer, options);
    const strategy = equity.addSeries(LWC.LineSeries, {
      color: colours.trigger,
      lineWidth: 2,
      title: "strategy",
      priceLineVisible: false,
    });
    const hold = equity.addSeries(LWC.LineSeries, {
      color: colours.invalidation,
      lineWidth: 2,
      lineStyle: LWC.LineStyle.Dashed,
      title: "buy and hold",
      priceLineVisible: false,
    });
    strategy.setData(data.equity.map((p) => ({ time: p[0], value: p[1] })));
    hold.setData(data.equity.map((p) => ({ time: p[0], value: p[2] })));
    equity.timeScale().fitContent();
  }

  // Lets tests (and anyone curious) see that the charts have drawn, and how much, and read what the library shows.
  window.signalsChart = { chart: chart, candles: series, volume: volumeSeries, equity: equity };
  requestAnimationFrame(() => {
    container.setAttribute("data-chart-ready", String(count));
    if (equityContainer && equity) equityContainer.setAttribute("data-chart-ready", String(data.equity.length));
  });
})();
