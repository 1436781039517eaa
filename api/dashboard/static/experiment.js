// The experiment page: follow /v1/experiments/{id}/events (SSE) and update the progress bar,
// the alerts and the uPlot charts. Events only change arrays; one redraw per animation frame.
"use strict";
(function () {
  const root = document.getElementById("experiment");
  const id = root.dataset.id;
  const klAlert = Number(root.dataset.klAlert);
  const klTarget = root.dataset.klTarget ? Number(root.dataset.klTarget) : null;
  const xLabel = root.dataset.algorithm === "ppo_lm" ? "updates" : "env steps";
  const clipLow = Number(root.dataset.clipLow);
  const clipHigh = Number(root.dataset.clipHigh);
  const terminalAtLoad = ["succeeded", "failed", "cancelled"].includes(
    document.getElementById("status").textContent.trim());
  const charts = {};
  let dirty = false;

  function chart(key, series, extra) {
    const el = document.getElementById("chart-" + key);
    if (!el || typeof uPlot === "undefined") return;
    const data = [[]].concat(series.map(() => []));
    const opts = Object.assign({
      width: Math.max(260, el.clientWidth), height: 200,
      scales: { x: { time: false } },
      series: [{ label: xLabel }].concat(series),
      axes: [{}, { size: 60 }],
      legend: { live: false },
    }, extra || {});
    charts[key] = { el: el, data: data, plot: new uPlot(opts, data, el) };
  }

  function line(label, stroke, dash) {
    return { label: label, stroke: stroke, width: 1.5, spanGaps: true, dash: dash };
  }

  chart("return", [line("train", "#1f77b4"), line("eval", "#ff7f0e")],
    { series: [{ label: xLabel }, line("train", "#1f77b4"),
      Object.assign(line("eval", "#ff7f0e"), { points: { show: true, size: 6 } })] });
  chart("kl", [line("approx KL", "#1f77b4"), line("alert", "#d62728", [6, 4])]);
  chart("clip", [line("clip fraction", "#1f77b4"), line("healthy low", "rgba(44,160,44,0.6)", [2, 3]),
    line("healthy high", "rgba(44,160,44,0.6)", [2, 3])],
    { bands: [{ series: [3, 2], fill: "rgba(44,160,44,0.12)" }] });
  chart("ev", [line("explained variance", "#9467bd")]);
  chart("klref", [line("KL to reference", "#17becf"), line("target", "#d62728", [6, 4])]);
  chart("beta", [line("beta", "#8c564b")]);

  function push(key, x, values) {
    const c = charts[key];
    if (!c) return;
    c.data[0].push(x);
    values.forEach((v, i) => c.data[i + 1].push(v === undefined ? null : v));
    c.el.dataset.points = String(c.data[0].length);
    dirty = true;
  }

  function redraw() {
    if (dirty) {
      dirty = false;
      Object.values(charts).forEach((c) => c.plot.setData(c.data));
    }
    requestAnimationFrame(redraw);
  }
  requestAnimationFrame(redraw);

  window.addEventListener("resize", () => {
    Object.values(charts).forEach((c) =>
      c.plot.setSize({ width: Math.max(260, c.el.clientWidth), height: 200 }));
  });

  function setProgress(done, total) {
    if (!total) return;
    const percent = Math.round(100 * Math.min(1, done / total));
    document.getElementById("progress").value = percent;
    document.getElementById("progress-text").textContent = percent + "%";
    document.getElementById("steps").textContent = "(" + done.toLocaleString() + " / " +
      total.toLocaleString() + ")";
  }

  function onProgress(d) {
    if (d.total_timesteps) setProgress(d.timesteps, d.total_timesteps);
    if (d.runs_total) setProgress(d.runs_done, d.runs_total);
    if (d.trials_total) setProgress(d.trials_done, d.trials_total);
    if (d.best_value !== undefined && d.best_value !== null) {
      document.getElementById("best-value").textContent =
        String(Number(Number(d.best_value).toPrecision(4)));
    }
    if (d.ep_rew_mean === undefined) return;
    const t = d.timesteps;
    push("return", t, [d.ep_rew_mean, null]);
    push("kl", t, [d.approx_kl, klAlert]);
    push("clip", t, [d.clip_fraction, clipLow, clipHigh]);
    push("ev", t, [d.explained_variance]);
    push("beta", t, [d.kl_beta]);
    push("klref", t, [d.kl_ref, klTarget]);
  }

  function onAlert(d) {
    const text = String(d.message || "");
    const cut = text.indexOf(" -> ");
    const li = document.createElement("li");
    const severity = /\[critical\]/.test(text) ? "critical" : "warning";
    li.className = "alert " + severity;
    const finding = document.createElement("p");
    finding.textContent = cut >= 0 ? text.slice(0, cut) : text;
    li.appendChild(finding);
    if (cut >= 0) {
      const advice = document.createElement("p");
      advice.className = "advice";
      advice.textContent = "Advice: " + text.slice(cut + 4);
      li.appendChild(advice);
    }
    document.getElementById("alerts").appendChild(li);
    document.getElementById("no-alerts").hidden = true;
    document.getElementById("alert-count").textContent =
      String(document.querySelectorAll("#alerts li").length);
  }

  function onLog(d) {
    const log = document.getElementById("log");
    if (!log) return;
    const li = document.createElement("li");
    li.textContent = String(d.message || "");
    log.appendChild(li);
  }

  const source = new EventSource("/v1/experiments/" + encodeURIComponent(id) + "/events");
  const handlers = { progress: onProgress, alert: onAlert, log: onLog,
    member: (d) => { onProgress(d); onLog(d); },  // a sweep member ended: runs_done moves on
    trial: onLog,  // a study's trial ended (the counts come as progress events)
    verify: onLog,  // held-out verification began, or verified a trial
    eval: (d) => push("return", d.timesteps, [null, d.eval_mean]) };
  Object.keys(handlers).forEach((kind) => source.addEventListener(kind, (e) => {
    handlers[kind](JSON.parse(e.data).data);
  }));
  source.addEventListener("status", (e) => {
    const status = JSON.parse(e.data).data.status;
    const badge = document.getElementById("status");
    badge.textContent = status;
    badge.className = "status " + status;
    if (status === "succeeded") {  // the last progress event is throttled and may lag
      document.getElementById("progress").value = 100;
      document.getElementById("progress-text").textContent = "100%";
    }
    if (["succeeded", "failed", "cancelled"].includes(status)) {
      source.close();
      const cancel = document.getElementById("cancel-form");
      if (cancel) cancel.hidden = true;
      // The final result, report or trials are rendered by the server: show them once.
      if (!terminalAtLoad) setTimeout(() => location.reload(), 300);
    }
  });
})();
