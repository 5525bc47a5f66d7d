// Live progress of a submission: its event stream (same origin, the session cookie) into the list, then the
// full report by reloading the page when it is done. Without JavaScript the page refreshes itself instead.
"use strict";
(function () {
  var list = document.getElementById("progress");
  var outcome = document.getElementById("outcome");
  if (!list || !window.EventSource) return;
  var source = new EventSource(list.dataset.events);
  var finished = false;
  function add(text) {
    var item = document.createElement("li");
    item.textContent = text;
    list.appendChild(item);
  }
  function reload() {
    source.close();
    window.location.reload();
  }
  source.addEventListener("progress", function (e) {
    var p = JSON.parse(e.data);
    add(p.device + ": " + p.phase + (p.detail ? " — " + p.detail : ""));
  });
  source.addEventListener("done", function (e) {
    var s = JSON.parse(e.data);
    finished = true;
    outcome.textContent = s.accepted ? "accepted" : "not accepted";
    outcome.className = "outcome " + (s.accepted ? "good" : "bad");
    add("done");
    window.setTimeout(reload, 5000); // the server ends the stream after "done"; this only if it does not
  });
  ["error", "timeout"].forEach(function (name) {
    source.addEventListener(name, function (e) {
      if (finished) return reload(); // the server ended the stream after "done": nothing is left in flight
      if (!e.data) return; // a dropped connection: EventSource reconnects by itself
      source.close();
      add(JSON.parse(e.data).error.message);
    });
  });
})();
