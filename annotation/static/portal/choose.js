// The choice pages (portal/choose.html): the form works without this script; with it,
// the answer carries the seconds it took and the window's width, as the ranking page's.
(function () {
  "use strict";
  var form = document.getElementById("choose-form");
  if (!form) return;
  var started = Date.now();
  form.addEventListener("submit", function () {
    document.getElementById("seconds-input").value = ((Date.now() - started) / 1000).toFixed(1);
    document.getElementById("viewport-input").value = String(window.innerWidth);
  });
})();
