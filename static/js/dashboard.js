// Draws the composition chart from the figure JSON the server rendered, redraws it after
// every htmx swap, opens a step on click, copies links, and navigates with the keyboard.
(function () {
  "use strict";

  // One config for every draw: plotly.js compares configs by identity, and a new one
  // (a new button object) at each of the several afterSettle events of one swap made
  // it redraw from scratch while the last draw was still fitting its margins, forever.
  var chartConfig = null;
  function config() {
    if (!chartConfig) {
      chartConfig = {
        responsive: true, displaylogo: false, showSendToCloud: false,
        showEditInChartStudio: false, plotlyServerURL: "",
        modeBarButtonsToRemove: ["toImage"],
        modeBarButtonsToAdd: [{
          name: "download-png", title: "Download as a PNG titled with the run, policy and estimator",
          icon: window.Plotly.Icons.camera, click: function (gd) { savePng(gd); }
        }]
      };
    }
    return chartConfig;
  }

  function drawChart() {
    var box = document.getElementById("chart");
    var data = document.getElementById("figure-data");
    if (!box || !data || !window.Plotly) { return; }
    if (box.drawnFrom === data) { return; }  // drawn from this figure already
    box.drawnFrom = data;
    var figure = JSON.parse(data.textContent);
    if (window.matchMedia("(max-width: 640px)").matches) { narrow(figure.layout); }
    window.Plotly.react(box, figure.data, figure.layout, config()).then(function () {
      box.dataset.drawn = "1";
      document.dispatchEvent(new CustomEvent("contextsim:chart-drawn"));
    });
    if (box.removeAllListeners) { box.removeAllListeners("plotly_click"); }
    box.on("plotly_click", function (event) {
      if (!event.points || !event.points.length) { return; }
      var point = event.points[0];
      var step = point.customdata !== undefined ? point.customdata : point.x;
      var base = box.dataset.stepUrl.replace(/0\/$/, step + "/");
      window.location.href = base + (box.dataset.query ? "?" + box.dataset.query : "");
    });
  }

  // On a phone the plot keeps most of the box: small margins, a small legend, fewer
  // ticks; a tap on it shows the step's values and opens the step (plotly_click).
  function narrow(layout) {
    layout.margin = { l: 48, r: 6, t: 24, b: 30 };
    layout.font = Object.assign({}, layout.font, { size: 10 });
    layout.legend = Object.assign({}, layout.legend, { font: { size: 9 }, itemwidth: 18, tracegroupgap: 0 });
    if (layout.yaxis) { layout.yaxis.nticks = 6; }
    if (layout.xaxis) { layout.xaxis.nticks = 6; }
    (layout.annotations || []).forEach(function (a) { a.font = { size: 9 }; });
  }

  // The chart as a PNG, made here (nothing leaves the browser), with a title saying
  // what it shows: the run, the policy and the estimator (the figure's meta.title).
  function savePng(gd) {
    var meta = gd.layout.meta || {};
    var margin = Object.assign({}, gd.layout.margin, { t: 70 });
    var layout = Object.assign({}, gd.layout, {
      margin: margin, title: { text: meta.title || "", x: 0.01, xanchor: "left", font: { size: 15 } }
    });
    window.Plotly.toImage({ data: gd.data, layout: layout }, {
      format: "png", width: gd.offsetWidth || 1000, height: (gd.offsetHeight || 450) + 40
    }).then(function (url) {
      var link = document.createElement("a");
      link.href = url;
      link.download = (meta.filename || "contextsim-composition") + ".png";
      document.body.appendChild(link);
      link.click();
      link.remove();
    });
  }

  // A page loads the smallest plotly.js bundle its charts need. A figure that arrives
  // later with a trace type that bundle lacks (the ledger's heatmap, swapped into the
  // dashboard) names the bundle that has it: that one is loaded once and kept apart,
  // window.Plotly staying the page's own, so each chart is always drawn by one copy.
  var bundles = {};

  function knows(plotly, type) {
    if (!plotly.__traces) { plotly.__traces = plotly.PlotSchema.get().traces; }
    return Object.prototype.hasOwnProperty.call(plotly.__traces, type);
  }

  function plotlyFor(box) {
    var type = box.dataset.traceType, src = box.dataset.plotlySrc;
    if (!type || !src || knows(window.Plotly, type)) { return Promise.resolve(window.Plotly); }
    if (!bundles[src]) {
      bundles[src] = new Promise(function (resolve, reject) {
        var own = window.Plotly, script = document.createElement("script");
        script.src = src;
        script.onload = function () { var other = window.Plotly; window.Plotly = own; resolve(other); };
        script.onerror = reject;
        document.head.appendChild(script);
      });
    }
    return bundles[src];
  }

  function drawFigures(root) {
    if (!window.Plotly) { return; }
    root.querySelectorAll("[data-figure]").forEach(function (box) {
      var data = document.getElementById(box.dataset.figure);
      if (!data) { return; }
      var figure = JSON.parse(data.textContent);
      plotlyFor(box).then(function (plotly) {
        return plotly.react(box, figure.data, figure.layout, {
          responsive: true, displaylogo: false, showSendToCloud: false,
          showEditInChartStudio: false, plotlyServerURL: ""
        });
      }).then(function () { box.dataset.drawn = "1"; });
    });
  }

  function copyLinks(root) {
    root.querySelectorAll("button.copy").forEach(function (button) {
      button.addEventListener("click", function () {
        var url = new URL(button.dataset.copy, window.location.href).href;
        var done = function () { button.textContent = "copied"; };
        if (navigator.clipboard) { navigator.clipboard.writeText(url).then(done, done); }
        else { window.prompt("Copy this link", url); }
      });
    });
  }

  // "Use it in your agent": copy a snippet's text as shown.
  function copyTexts(root) {
    root.querySelectorAll("button.copy-text").forEach(function (button) {
      button.addEventListener("click", function () {
        var source = document.getElementById(button.dataset.copyFrom);
        var done = function () { button.textContent = "copied"; };
        if (source && navigator.clipboard) { navigator.clipboard.writeText(source.textContent).then(done, done); }
      });
    });
  }

  // The panel is redrawn with every change of the controls: it stays open if it was.
  var agentPanelOpen = false;
  function rememberPanel() {
    var panel = document.getElementById("use-in-agent");
    agentPanelOpen = Boolean(panel && panel.open);
  }
  function restorePanel() {
    var panel = document.getElementById("use-in-agent");
    if (panel && agentPanelOpen) { panel.open = true; }
  }

  // The budget's slider and its number field show one value: the slider is not a form
  // field of its own (form=""), so moving it types into the number field, and typing
  // there moves the slider, widening its range when the value is past its end.
  function syncBudget(event) {
    var target = event.target;
    var form = target.form || target.closest("form");
    if (!form || !form.querySelector) { return; }
    var slider = form.querySelector("input[name=budget_slider]") ||
      document.querySelector("input[name=budget_slider]");
    var number = form.querySelector("input[name=budget]");
    if (!slider || !number) { return; }
    if (target === slider) {
      number.value = slider.value;
      number.dispatchEvent(new Event("input", { bubbles: true }));
    } else if (target === number && number.value !== "") {
      var value = Number(number.value);
      if (value > Number(slider.max)) { slider.max = String(value); }
      slider.value = String(value);
    }
  }

  function keys(event) {
    if (event.target.closest("input, select, textarea") || event.metaKey || event.ctrlKey || event.altKey) { return; }
    var map = { "j": "next-step", "ArrowRight": "next-step", "k": "previous-step", "ArrowLeft": "previous-step", "n": "next-problem" };
    var id = map[event.key];
    var link = id && document.getElementById(id);
    if (link && link.href) { event.preventDefault(); window.location.href = link.href; }
  }

  function ready() {
    drawChart();
    drawFigures(document);
    copyLinks(document);
    copyTexts(document);
    document.addEventListener("keydown", keys);
    document.addEventListener("input", syncBudget);
    // A select that applies at once (no inline handler: the page's CSP allows none).
    document.addEventListener("change", function (event) {
      var target = event.target;
      if (target.matches && target.matches("select[data-submit-on-change]") && target.form) {
        target.form.submit();
      }
    });

    // Draw once htmx has settled the new content, never before: while it settles, htmx
    // gives an element that keeps its id (#chart) the old element's attributes and then
    // puts the new ones back, which would strip the classes plotly.js just set on the
    // chart (its styles hang on them: the chart then lost its legend, axis titles and
    // limit lines, and the mode bar took the page's button style).
    document.body.addEventListener("htmx:beforeSwap", rememberPanel);
    document.body.addEventListener("htmx:afterSettle", function (event) {
      restorePanel();
      drawChart();
      drawFigures(document);
      copyLinks(event.target);
      copyTexts(event.target);
    });
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", ready); }
  else { ready(); }
})();
