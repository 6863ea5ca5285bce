// Reorder the ranking cards by pointer drag or keyboard; confirm, then submit.
(function () {
  const list = document.getElementById("ranking");
  const live = document.getElementById("live");
  const started = Date.now();
  const cards = () => Array.from(list.children);

  function renumber(moved) {
    cards().forEach((card, i) => { card.querySelector(".pos").textContent = i + 1; });
    if (moved) live.textContent = `${moved.getAttribute("aria-label")}: place ${cards().indexOf(moved) + 1}`;
  }
  function moveTo(card, index) {
    const others = cards().filter((c) => c !== card);
    index = Math.max(0, Math.min(index, others.length));
    list.insertBefore(card, others[index] || null);
    card.focus();
    renumber(card);
  }

  list.addEventListener("keydown", (event) => {
    const card = event.target.closest(".card");
    if (!card) return;
    const at = cards().indexOf(card);
    if (event.key === "ArrowUp") moveTo(card, at - 1);
    else if (event.key === "ArrowDown") moveTo(card, at + 1);
    else if (/^[1-9]$/.test(event.key)) moveTo(card, Number(event.key) - 1);
    else return;
    event.preventDefault();
  });

  let dragged = null;
  list.addEventListener("pointerdown", (event) => {
    dragged = event.target.closest(".card");
    if (!dragged) return;
    dragged.classList.add("dragging");
    dragged.setPointerCapture(event.pointerId);
  });
  list.addEventListener("pointermove", (event) => {
    if (!dragged) return;
    const over = document.elementsFromPoint(event.clientX, event.clientY)
      .find((el) => el.classList && el.classList.contains("card") && el !== dragged);
    if (!over) return;
    const box = over.getBoundingClientRect();
    list.insertBefore(dragged, event.clientY > box.top + box.height / 2 ? over.nextSibling : over);
    renumber();
  });
  const drop = () => { if (dragged) { dragged.classList.remove("dragging"); renumber(dragged); dragged = null; } };
  list.addEventListener("pointerup", drop);
  list.addEventListener("pointercancel", drop);

  const confirmBox = document.getElementById("confirm");
  document.getElementById("review").addEventListener("click", () => {
    const ids = cards().map((c) => Number(c.dataset.id));
    document.getElementById("order").value = JSON.stringify(ids);
    document.getElementById("seconds").value = ((Date.now() - started) / 1000).toFixed(1);
    const summary = document.getElementById("confirm-list");
    summary.replaceChildren(...cards().map((c) => {
      const li = document.createElement("li"); li.textContent = c.getAttribute("aria-label"); return li;
    }));
    confirmBox.hidden = false;
    document.getElementById("confirm-submit").focus();
  });
  document.getElementById("confirm-cancel").addEventListener("click", () => { confirmBox.hidden = true; });
})();
