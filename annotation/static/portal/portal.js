/* Every portal and dashboard page: after a redirect with news ("Ranking saved."),
   focus moves to the message, so that a screen reader reads it at once. */
(function () {
  "use strict";
  var region = document.getElementById("messages");
  if (region && region.querySelector(".message")) region.focus();
})();
