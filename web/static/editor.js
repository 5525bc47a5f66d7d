// The /submit page: its code textarea becomes a CodeMirror editor (vendored under /static/vendor/codemirror; the
// form posts the textarea, which CodeMirror keeps in step), and choosing another leaderboard or template reloads
// the form for it, asking first when the code was edited. Without JavaScript: a plain textarea and a Choose button.
"use strict";
(function () {
  var area = document.getElementById("code");
  var fileName = document.getElementById("file_name");
  var chooser = document.getElementById("choose-board");
  if (!area) return;
  var edited = false;

  function modeOf(name) {
    return /\.(cu|cuh|cpp|cc|h|hpp)$/i.test(name || "") ? "text/x-c++src" : "python";
  }
  if (window.CodeMirror) {
    var editor = window.CodeMirror.fromTextArea(area, {
      lineNumbers: true,
      indentUnit: 4,
      tabSize: 4,
      mode: modeOf(fileName && fileName.value),
      extraKeys: { Tab: function (cm) { cm.execCommand(cm.somethingSelected() ? "indentMore" : "insertSoftTab"); } },
    });
    editor.on("change", function () { edited = true; });
    if (fileName) {
      fileName.addEventListener("input", function () { editor.setOption("mode", modeOf(fileName.value)); });
    }
  } else {
    area.addEventListener("input", function () { edited = true; });
  }

  function mayLeave() {
    return !edited || window.confirm("Replace the code you edited? It is not kept.");
  }
  if (chooser) {
    var select = chooser.querySelector("select");
    document.getElementById("choose-button").hidden = true;
    select.addEventListener("change", function () {
      if (select.value === select.dataset.current) return;
      if (mayLeave()) chooser.submit();
      else select.value = select.dataset.current;
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("a.template"), function (link) {
    link.addEventListener("click", function (event) {
      if (!mayLeave()) event.preventDefault();
    });
  });
})();
