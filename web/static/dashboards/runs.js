// The runs page (web/templates/dashboards/runs.html): poll the unfinished runs every 2 s
// and update their rows; stop when all are finished.
(function () {
  const table = document.getElementById("runs");
  if (!table) return;
  const url = table.dataset.progressUrl;
  const fmt = (v, d) => (v === null || v === undefined ? "" : Number(v).toFixed(d));
  function tick() {
    const rows = document.querySelectorAll('tr[data-run][data-finished="0"]');
    if (!rows.length) return;
    const ids = Array.from(rows, (r) => r.dataset.run).join(",");
    fetch(url + "?ids=" + ids, {credentials: "same-origin"})
      .then((r) => (r.ok ? r.json() : Promise.reject(r.status)))
      .then((data) => {
        for (const run of data.runs) {
          const tr = document.querySelector('tr[data-run="' + run.id + '"]');
          if (!tr) continue;
          const badge = tr.querySelector('[data-field="status"]');
          badge.textContent = run.status_label; badge.className = "badge " + run.status;
          tr.querySelector('[data-field="error"]').textContent = run.error;
          tr.querySelector('[data-field="epochs"]').textContent = run.stage;
          tr.querySelector('[data-field="loss"]').textContent = fmt(run.loss, 4);
          tr.querySelector('[data-field="rho"]').textContent = fmt(run.rho, 3);
          const bar = tr.querySelector('[role="progressbar"]');
          bar.setAttribute("aria-valuenow", run.percent); bar.firstElementChild.style.width = run.percent + "%";
          if (run.version) tr.querySelector('[data-field="version"]').textContent = "v" + run.version;
          if (run.finished) { tr.dataset.finished = "1"; const f = tr.querySelector("form[data-cancel]"); if (f) f.remove(); }
        }
      })
      .catch(() => {})
      .finally(() => setTimeout(tick, 2000));
  }
  setTimeout(tick, 2000);
})();
