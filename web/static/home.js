// The front page's filter: rows whose name, devices or summary hold every word typed stay, the others hide; a
// folded section with a match opens while the filter holds text. Without JavaScript the box stays hidden.
"use strict";
(function () {
  var box = document.getElementById("filter-box");
  var input = document.getElementById("filter");
  var count = document.getElementById("filter-count");
  var none = document.getElementById("filter-none");
  if (!box || !input) return;
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr[data-filter]"));
  var sections = Array.prototype.slice.call(document.querySelectorAll("details.problems-section"));
  sections.forEach(function (section) { section.dataset.wasOpen = section.open ? "1" : ""; });
  box.hidden = false;

  function apply() {
    var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    rows.forEach(function (row) {
      var text = row.dataset.filter;
      var match = words.every(function (w) { return text.indexOf(w) >= 0; });
      row.hidden = !match;
      if (match) shown += 1;
    });
    sections.forEach(function (section) {
      var hit = section.querySelector("tr[data-filter]:not([hidden])") !== null;
      section.hidden = words.length > 0 && !hit;
      section.open = words.length > 0 ? hit : section.dataset.wasOpen === "1";
    });
    var table = document.getElementById("open-ranked");
    if (table) table.hidden = words.length > 0 && table.querySelector("tr[data-filter]:not([hidden])") === null;
    count.textContent = words.length ? shown + " of " + rows.length + " problems" : "";
    none.hidden = !(words.length && shown === 0);
  }
  input.addEventListener("input", apply);
  apply(); // a value the browser kept from before a reload
})();
