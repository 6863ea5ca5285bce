/* Ranking and practice pages: reorder cards by dragging their handle, by their
   move buttons or by keyboard; review the order (the images, as ordered) in a modal
   dialog before POST; on the ranking page, an order left as shown is questioned once. */
(function () {
  "use strict";
  var form = document.getElementById("rank-form");
  if (!form) return;
  var list = document.getElementById("rank-list");
  var orderInput = document.getElementById("order-input");
  var secondsInput = document.getElementById("seconds-input");
  var widthInput = document.getElementById("viewport-input");
  var live = document.getElementById("rank-live");
  var panel = document.getElementById("confirm-panel");
  var confirmList = document.getElementById("confirm-list");
  var reviewButton = document.getElementById("review-order");
  var unchanged = document.getElementById("unchanged-panel");
  var confirmSubmit = document.getElementById("confirm-submit");
  var started = Date.now();
  var shownOrder = null;
  var asked = false;
  var returnFocus = null;

  function cards() { return Array.prototype.slice.call(list.querySelectorAll(".rank-card")); }

  /* What it says, in the page's language: the form carries each message, translated by the
     server (_rank_form.html, data-msg-*), with {name} slots filled here. */
  function message(name, values) {
    return (form.dataset[name] || "").replace(/\{(\w+)\}/g, function (whole, key) {
      return key in values ? String(values[key]) : whole;
    });
  }
  function spot(card) {
    var all = cards();
    return { label: card.dataset.label, position: all.indexOf(card) + 1, count: all.length };
  }

  function refresh() {
    var all = cards();
    all.forEach(function (card, i) {
      card.querySelector(".position").textContent = String(i + 1);
      card.setAttribute("aria-label", message("msgCard", spot(card)));
    });
    orderInput.value = all.map(function (c) { return c.dataset.itemId; }).join(",");
  }

  function say(text) { live.textContent = text; }

  /* Move card to index (clamped); says where it went, or that it was already there. */
  function moveTo(card, index, focusAfter) {
    var all = cards();
    var from = all.indexOf(card);
    var to = Math.max(0, Math.min(all.length - 1, index));
    if (to === from) {
      say(message("msgAlready", spot(card)));
      return false;
    }
    var rest = all.filter(function (c) { return c !== card; });
    list.insertBefore(card, rest[to] || null);
    refresh();
    if (focusAfter) focusAfter.focus();
    say(message("msgMoved", spot(card)));
    return true;
  }

  /* Keyboard on a focused card. */
  list.addEventListener("keydown", function (event) {
    var card = event.target;
    if (!card.classList || !card.classList.contains("rank-card")) return;
    var index = cards().indexOf(card);
    var last = cards().length - 1;
    var target = null;
    /* Up and Down stay; Left and Right follow the reading direction (right to left: Right
       goes back towards position 1). */
    var back = window.getComputedStyle(list).direction === "rtl" ? "ArrowRight" : "ArrowLeft";
    var ahead = back === "ArrowLeft" ? "ArrowRight" : "ArrowLeft";
    if (event.key === "ArrowUp" || event.key === back) target = index - 1;
    else if (event.key === "ArrowDown" || event.key === ahead) target = index + 1;
    else if (event.key === "Home") target = 0;
    else if (event.key === "End") target = last;
    else if (/^[1-9]$/.test(event.key) && Number(event.key) <= last + 1) target = Number(event.key) - 1;
    else if (event.key === "Enter") { event.preventDefault(); openPanel(); return; }
    else return;
    event.preventDefault();
    moveTo(card, target, card);
  });

  /* Move-up / move-down buttons: for touch screen readers and anyone not dragging. */
  list.addEventListener("click", function (event) {
    var button = event.target.closest("button.move");
    if (!button) return;
    var card = button.closest(".rank-card");
    var step = button.dataset.move === "up" ? -1 : 1;
    moveTo(card, cards().indexOf(card) + step, button);
  });

  /* Dragging starts on a handle only, so that a swipe elsewhere scrolls the page. */
  var drag = null;
  var EDGE = 64;
  function autoScroll() {
    if (!drag) return;
    var step = 0;
    if (drag.y < EDGE) step = -Math.ceil((EDGE - drag.y) / 4);
    else if (drag.y > window.innerHeight - EDGE) step = Math.ceil((drag.y - window.innerHeight + EDGE) / 4);
    if (step) { window.scrollBy(0, step); follow(); }
    drag.frame = window.requestAnimationFrame(autoScroll);
  }
  function follow() {
    var all = cards();
    for (var i = 0; i < all.length; i++) {
      var other = all[i];
      if (other === drag.card) continue;
      var r = other.getBoundingClientRect();
      if (drag.x >= r.left && drag.x <= r.right && drag.y >= r.top && drag.y <= r.bottom) {
        var from = all.indexOf(drag.card);
        list.insertBefore(drag.card, i > from ? other.nextSibling : other);
        refresh();
        break;
      }
    }
  }
  list.addEventListener("pointerdown", function (event) {
    var handle = event.target.closest(".handle");
    if (!handle || event.button > 0) return;
    var card = handle.closest(".rank-card");
    drag = { card: card, x: event.clientX, y: event.clientY };
    card.classList.add("dragging");
    try { handle.setPointerCapture(event.pointerId); } catch (e) { /* synthetic pointer */ }
    event.preventDefault();
    drag.frame = window.requestAnimationFrame(autoScroll);
  });
  document.addEventListener("pointermove", function (event) {
    if (!drag) return;
    drag.x = event.clientX;
    drag.y = event.clientY;
    follow();
  });
  function endDrag() {
    if (!drag) return;
    var card = drag.card;
    window.cancelAnimationFrame(drag.frame);
    card.classList.remove("dragging");
    drag = null;
    say(message("msgMoved", spot(card)));
  }
  document.addEventListener("pointerup", endDrag);
  document.addEventListener("pointercancel", endDrag);

  /* The review dialog: a real modal (the page behind is inert, Escape closes it) that
     shows each image, numbered, in the order it will be submitted; an image marked as
     stereotypical as the one before it (rank_ties) shares its number and says so. */
  function openPanel() {
    confirmList.innerHTML = "";
    var place = 0;
    cards().forEach(function (card, i) {
      var tie = card.querySelector("input[name=tied]");
      var tied = i > 0 && tie !== null && tie.checked;
      if (!tied) place += 1;
      var li = document.createElement("li");
      var image = document.createElement("img");
      var caption = document.createElement("span");
      var number = document.createElement("span");
      image.src = card.querySelector("img").src;
      var prompt = card.querySelector(".prompt");  /* none on a blinded validation card */
      image.alt = prompt ? prompt.textContent : card.dataset.label;
      number.className = "position";
      number.setAttribute("aria-hidden", "true");
      number.textContent = String(place);
      caption.className = "confirm-caption";
      caption.appendChild(number);
      caption.appendChild(document.createTextNode(
        tied ? tie.parentNode.textContent.trim() : card.dataset.label));
      if (tied) li.classList.add("tied");
      li.appendChild(image);
      li.appendChild(caption);
      confirmList.appendChild(li);
    });
    if (!panel.open) panel.showModal();
    confirmSubmit.focus();
  }
  reviewButton.addEventListener("click", openPanel);
  document.getElementById("confirm-back").addEventListener("click", function () { panel.close(); });
  panel.addEventListener("close", function () {
    (returnFocus || reviewButton).focus();
    returnFocus = null;
  });

  /* The order as shown, questioned once: untouched orders count against an annotator. */
  function askUnchanged() {
    asked = true;
    unchanged.showModal();
    document.getElementById("unchanged-back").focus();
  }
  if (unchanged) {
    document.getElementById("unchanged-back").addEventListener("click", function () {
      unchanged.close();
      returnFocus = cards()[0];
      panel.close();
    });
    document.getElementById("unchanged-submit").addEventListener("click", function () {
      unchanged.close();
      form.requestSubmit(confirmSubmit);
    });
  }

  /* An order sent but not saved (the study briefly unavailable: the 503 page) is kept in
     this tab and put back when the same task shows again, so trying again costs no work. */
  var taskInput = form.querySelector("input[name=task_id]");
  var KEPT = "stereorank-kept-order";

  function keep() {
    if (!taskInput) return;
    try {
      sessionStorage.setItem(KEPT, JSON.stringify({ task: taskInput.value, order: orderInput.value }));
    } catch (error) { /* storage off: the order is simply not kept */ }
  }

  function restore() {
    var kept = null;
    try { kept = JSON.parse(sessionStorage.getItem(KEPT) || "null"); } catch (error) { return; }
    if (!kept || !taskInput || kept.task !== taskInput.value) {
      try { sessionStorage.removeItem(KEPT); } catch (error) { /* nothing kept */ }
      return;
    }
    var byId = {};
    cards().forEach(function (card) { byId[card.dataset.itemId] = card; });
    var ids = String(kept.order).split(",");
    if (ids.length !== cards().length || !ids.every(function (id) { return byId[id]; })) return;
    ids.forEach(function (id) { list.appendChild(byId[id]); });
    refresh();
    say(message("msgRestored", {}));
  }

  form.addEventListener("submit", function (event) {
    if (!panel.open) { event.preventDefault(); openPanel(); return; }
    refresh();
    if (unchanged && !asked && orderInput.value === shownOrder) {
      event.preventDefault();
      askUnchanged();
      return;
    }
    secondsInput.value = ((Date.now() - started) / 1000).toFixed(1);
    /* The layout the order was made in (which cards sat where, which text was shown). */
    if (widthInput) widthInput.value = String(Math.round(window.innerWidth));
    keep();
  });

  /* A page restored from the back-forward cache may show a task already ranked (its
     submit stored, the answer lost): ask the server again for what comes next. */
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) window.location.reload();
  });

  refresh();
  shownOrder = orderInput.value;
  restore();
})();
