/* Admin, studies: a "Copy" button copies the entry link in the box it names. */
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy]");
    if (!button) return;
    var box = document.getElementById(button.dataset.copy);
    box.select();
    function done() { button.textContent = "Copied"; }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(box.value).then(done, function () {
        document.execCommand("copy");
        done();
      });
    } else {
      document.execCommand("copy");
      done();
    }
  });
})();
