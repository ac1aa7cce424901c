// memstrata ui: keyboard navigation, and nothing a page needs to work.
// "/" focuses the search box (or opens Search); "g" then o/f/s/e/l opens a page;
// j/k move through the rows of a list and Enter opens the selected one.
(function () {
  "use strict";
  var pending = false;
  var rows = [];
  var at = -1;
  function typing(el) {
    return el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable);
  }
  function collect() {
    rows = Array.prototype.slice.call(document.querySelectorAll("table.rows tbody tr, ol.hits > li, ol.turns > li.turn"));
  }
  function select(n) {
    if (!rows.length) { return; }
    if (at >= 0 && rows[at]) { rows[at].classList.remove("selected"); }
    at = Math.max(0, Math.min(rows.length - 1, n));
    var row = rows[at];
    row.classList.add("selected");
    if (!row.hasAttribute("tabindex")) { row.setAttribute("tabindex", "-1"); }
    row.focus();
    row.scrollIntoView({block: "nearest"});
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) { return; }
    var key = event.key;
    if (pending) {
      pending = false;
      var link = document.querySelector('.top nav a[data-key="' + key + '"]');
      if (link) { event.preventDefault(); window.location.href = link.getAttribute("href"); }
      return;
    }
    if (key === "g") { pending = true; return; }
    if (key === "/") {
      var box = document.querySelector('input[type="search"]');
      event.preventDefault();
      if (box) { box.focus(); box.select(); } else { window.location.href = "/search"; }
      return;
    }
    if (key === "j" || key === "k") {
      if (!rows.length) { collect(); }
      event.preventDefault();
      select(at + (key === "j" ? 1 : -1));
      return;
    }
    if (key === "Enter" && at >= 0 && rows[at] && document.activeElement === rows[at]) {
      var first = rows[at].querySelector("a[href]");
      if (first) { event.preventDefault(); first.click(); }
    }
  });
  document.addEventListener("DOMContentLoaded", function () {
    var target = document.querySelector(".turn.target, .line.hl");
    if (target && !window.location.hash) { target.scrollIntoView({block: "center"}); }
  });
})();
