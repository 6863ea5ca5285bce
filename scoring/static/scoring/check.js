/* Prompt checker: score pasted prompts (/api/score/), suggest rewrites for flagged ones
   (/api/optimise/), copy a rewrite. Plain JS, no build step; results are announced in a
   live region. */
(function () {
  "use strict";
  var form = document.getElementById("check-form");
  if (!form) return;
  var textarea = document.getElementById("prompts");
  var versionInput = document.getElementById("version");
  var suggest = document.getElementById("suggest");
  var button = document.getElementById("check-button");
  var errorBox = document.getElementById("check-error");
  var statusLine = document.getElementById("check-status");
  var versionLine = document.getElementById("version-used");
  var list = document.getElementById("results");
  var maxPrompts = Number(form.dataset.maxPrompts);
  var maxChars = Number(form.dataset.maxChars);
  var csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  var buttonText = button.textContent;
  var generation = 0;

  // The button shows the work in progress: a spinner, "Checking…", disabled, aria-busy.
  function busy(on, text) {
    button.disabled = on;
    button.classList.toggle("busy", on);
    form.setAttribute("aria-busy", on ? "true" : "false");
    button.textContent = on ? text : buttonText;
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function post(url, payload) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf, Accept: "application/json" },
      body: JSON.stringify(payload)
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (body) {
        if (!response.ok) {
          var why = body.detail || ("the server answered " + response.status);
          throw new Error(why);
        }
        return body;
      });
    });
  }

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = !message;
  }

  function fmt(x) { return Number(x).toFixed(4); }

  function check(prompts) {
    if (!prompts.length) return "Paste at least one prompt, one per line.";
    if (prompts.length > maxPrompts) {
      return "Too many prompts: " + prompts.length + "; at most " + maxPrompts + " at a time.";
    }
    for (var i = 0; i < prompts.length; i++) {
      if (prompts[i].length > maxChars) {
        return "Prompt " + (i + 1) + " has " + prompts[i].length + " characters; at most " + maxChars + ".";
      }
    }
    return "";
  }

  function bar(score, threshold, lo, hi) {
    var wrap = el("div", "bar");
    wrap.setAttribute("aria-hidden", "true");
    var pct = function (x) { return Math.max(0, Math.min(100, (x - lo) / (hi - lo) * 100)); };
    var fill = el("div", "bar-fill");
    fill.style.width = pct(score) + "%";
    var mark = el("div", "bar-threshold");
    mark.style.left = pct(threshold) + "%";
    mark.title = "threshold " + fmt(threshold);
    wrap.appendChild(fill);
    wrap.appendChild(mark);
    return wrap;
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    return new Promise(function (resolve, reject) {
      var area = el("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      var ok = document.execCommand("copy");
      document.body.removeChild(area);
      if (ok) resolve(); else reject(new Error("copy refused"));
    });
  }

  function rewriteItem(candidate, n, promptIndex) {
    var item = el("li", "rewrite");
    item.appendChild(el("span", "rewrite-text", candidate.prompt));
    item.appendChild(el("small", "muted",
      "score " + fmt(candidate.score) + " (+" + fmt(candidate.gain) + ")" +
      (candidate.aspects.length ? " · adds " + candidate.aspects.join(", ") : "")));
    var copy = el("button", "button copy", "Copy");
    copy.type = "button";
    copy.setAttribute("aria-label", "Copy rewrite " + n + " of prompt " + promptIndex);
    copy.addEventListener("click", function () {
      copyText(candidate.prompt).then(function () {
        copy.textContent = "Copied";
        statusLine.textContent = "Copied rewrite " + n + " of prompt " + promptIndex + " to the clipboard.";
      }, function () {
        statusLine.textContent = "Could not copy: select the text and copy it by hand.";
      });
    });
    item.appendChild(el("br"));
    item.appendChild(copy);
    return item;
  }

  function suggestFor(entry, prompt, version, index, mine) {
    var box = el("div", "suggestions");
    var note = el("p", "muted", "Finding rewrites…");
    box.appendChild(note);
    entry.appendChild(box);
    var payload = { prompt: prompt, n: 3 };
    if (version) payload.version = version;
    return post(form.dataset.optimiseUrl, payload).then(function (body) {
      if (mine !== generation) return 0;
      if (body.candidates.length) {
        note.textContent = "Suggested rewrites (" + body.occupation + "):";
        var ol = el("ol", "rewrites");
        body.candidates.forEach(function (c, k) { ol.appendChild(rewriteItem(c, k + 1, index)); });
        box.appendChild(ol);
        return 1;
      }
      note.textContent = "No rewrite passed the threshold in " + body.rounds + " rounds" +
        (body.best ? "; the best scored " + fmt(body.best.score) + ": " + body.best.prompt : ".");
      return 0;
    }, function (error) {
      if (mine === generation) note.textContent = "No rewrites: " + error.message;
      return 0;
    });
  }

  function render(body, version, mine) {
    list.innerHTML = "";
    // One scale per version (its scores' range on its snapshot's prompts, with the
    // threshold), so a prompt's bar is as long in every batch; none: no bars.
    var scale = body.scale;
    var lo = scale ? Math.min(scale[0], body.threshold) : 0;
    var hi = scale ? Math.max(scale[1], body.threshold) : 0;
    var pad = (hi - lo) * 0.1 || 0.1;
    lo -= pad; hi += pad;
    versionLine.hidden = false;
    versionLine.textContent = "Version v" + body.version + " · threshold " + fmt(body.threshold) +
      " (" + body.threshold_basis + ") · encoder " + body.encoder.backend + "/" +
      body.encoder.quantization + (body.encoder.fallback ? " (fp32 fallback: the copy is not gated)" : "") +
      (scale ? " · bars from " + fmt(lo + pad) + " to " + fmt(hi - pad) + ", one scale for every batch" : "");
    var flagged = [];
    body.results.forEach(function (r, i) {
      var entry = el("li", "result" + (r.flagged ? " flagged" : ""));
      entry.dataset.score = r.score;
      entry.appendChild(el("p", "result-prompt", r.prompt));
      if (scale) entry.appendChild(bar(r.score, body.threshold, lo, hi));
      var line = el("p", "result-line");
      line.appendChild(el("span", "verdict", r.flagged ? "Flagged: stereotypical" : "Passes"));
      line.appendChild(document.createTextNode(" · score " + fmt(r.score) +
        (r.flagged ? " is below" : " is at or above") + " the threshold " + fmt(body.threshold)));
      entry.appendChild(line);
      if (r.contested) {  // the version's group heads disagree past their calibrated threshold
        var spread = el("p", "result-contested", "People disagree about this prompt: groups' " +
          "scores spread " + fmt(r.disagreement) + ", above " + fmt(body.disagreement_threshold) +
          ". One score averages their views.");
        entry.appendChild(spread);
      }
      list.appendChild(entry);
      if (r.flagged) flagged.push([entry, r.prompt, i + 1]);
    });
    var summary = "Checked " + body.results.length + " prompt" + (body.results.length === 1 ? "" : "s") +
      " with version v" + body.version + ": " + flagged.length + " flagged.";
    statusLine.textContent = summary;
    if (!flagged.length || !suggest.checked) return Promise.resolve();
    var found = 0;
    return flagged.reduce(function (chain, f) {
      return chain.then(function () {
        return suggestFor(f[0], f[1], version, f[2], mine).then(function (k) { found += k; });
      });
    }, Promise.resolve()).then(function () {
      if (mine === generation) {
        statusLine.textContent = summary + " Rewrites suggested for " + found + " of them.";
      }
    });
  }

  function submit(event) {
    if (event) event.preventDefault();
    var prompts = textarea.value.split(/\r?\n/).map(function (s) { return s.trim(); })
      .filter(function (s) { return s.length > 0; });
    var problem = check(prompts);
    showError(problem);
    if (problem) { textarea.focus(); return; }
    var payload = { prompts: prompts };
    var version = versionInput.value ? Number(versionInput.value) : null;
    if (version) payload.version = version;
    var mine = ++generation;
    busy(true, "Checking…");
    statusLine.textContent = "Checking " + prompts.length + " prompt" + (prompts.length === 1 ? "" : "s") +
      "… (the first check loads the model and can take a few seconds)";
    post(form.dataset.scoreUrl, payload).then(function (body) {
      button.textContent = "Finding rewrites…";
      return render(body, version, mine);
    }).catch(function (error) {
      showError(error.message);
      statusLine.textContent = "Not checked: " + error.message;
    }).then(function () { busy(false); });
  }

  form.addEventListener("submit", submit);
  textarea.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) submit(event);
  });
})();
