/* Ranking page: reorder cards by pointer drag or keyboard; confirm before POST. */
(function () {
  "use strict";
  var form = document.getElementById("rank-form");
  if (!form) return;
  var list = document.getElementById("rank-list");
  var orderInput = document.getElementById("order-input");
  var secondsInput = document.getElementById("seconds-input");
  var live = document.getElementById("rank-live");
  var panel = document.getElementById("confirm-panel");
  var confirmList = document.getElementById("confirm-list");
  var reviewButton = document.getElementById("review-order");
  var started = Date.now();

  function cards() { return Array.prototype.slice.call(list.querySelectorAll(".rank-card")); }

  function refresh() {
    var all = cards();
    all.forEach(function (card, i) {
      card.querySelector(".position").textContent = String(i + 1);
      card.setAttribute("aria-label", card.dataset.label + ", position " + (i + 1) + " of " + all.length);
    });
    orderInput.value = all.map(function (c) { return c.dataset.itemId; }).join(",");
  }

  function announce(card) {
    var all = cards();
    live.textContent = card.dataset.label + " moved to position " + (all.indexOf(card) + 1) + " of " + all.length + ".";
  }

  function moveTo(card, index) {
    var all = cards();
    index = Math.max(0, Math.min(all.length - 1, index));
    var from = all.indexOf(card);
    if (from === index) return false;
    var rest = all.filter(function (c) { return c !== card; });
    list.insertBefore(card, rest[index] || null);
    refresh();
    return true;
  }

  /* Keyboard */
  list.addEventListener("keydown", function (event) {
    var card = event.target.closest(".rank-card");
    if (!card) return;
    var index = cards().indexOf(card);
    var target = null;
    if (event.key === "ArrowUp" || event.key === "ArrowLeft") target = index - 1;
    else if (event.key === "ArrowDown" || event.key === "ArrowRight") target = index + 1;
    else if (/^[1-9]$/.test(event.key) && Number(event.key) <= cards().length) target = Number(event.key) - 1;
    else return;
    event.preventDefault();
    moveTo(card, target);
    card.focus();
    announce(card);
  });

  /* Pointer dragging (mouse, pen, touch). */
  var drag = null;
  list.addEventListener("pointerdown", function (event) {
    var card = event.target.closest(".rank-card");
    if (!card || event.button > 0) return;
    drag = { card: card, id: event.pointerId };
    card.classList.add("dragging");
    try { card.setPointerCapture(event.pointerId); } catch (e) { /* synthetic pointer */ }
    card.focus();
    event.preventDefault();
  });
  document.addEventListener("pointermove", function (event) {
    if (!drag) return;
    var x = event.clientX, y = event.clientY;
    var all = cards();
    for (var i = 0; i < all.length; i++) {
      var other = all[i];
      if (other === drag.card) continue;
      var r = other.getBoundingClientRect();
      if (x >= r.left && x <= r.right && y >= r.top && y <= r.bottom) {
        moveTo(drag.card, i);
        break;
      }
    }
  });
  function endDrag() {
    if (!drag) return;
    var card = drag.card;
    card.classList.remove("dragging");
    drag = null;
    announce(card);
  }
  document.addEventListener("pointerup", endDrag);
  document.addEventListener("pointercancel", endDrag);

  /* Confirmation panel. */
  function openPanel() {
    confirmList.innerHTML = "";
    cards().forEach(function (card) {
      var li = document.createElement("li");
      li.textContent = card.dataset.label + " — " + card.querySelector(".prompt").textContent;
      confirmList.appendChild(li);
    });
    panel.hidden = false;
    document.getElementById("confirm-submit").focus();
  }
  function closePanel() {
    panel.hidden = true;
    reviewButton.focus();
  }
  reviewButton.addEventListener("click", openPanel);
  document.getElementById("confirm-back").addEventListener("click", closePanel);
  panel.addEventListener("keydown", function (event) { if (event.key === "Escape") closePanel(); });
  form.addEventListener("submit", function (event) {
    if (panel.hidden) { event.preventDefault(); openPanel(); return; }
    refresh();
    secondsInput.value = ((Date.now() - started) / 1000).toFixed(1);
  });

  refresh();
})();
