// The upload form's drop zone: shows the chosen files' names and takes dropped files.
(function () {
  "use strict";
  function ready() {
    var input = document.getElementById("id_files"), drop = document.getElementById("drop"),
        names = document.getElementById("drop-files");
    if (!input || !drop || !names) { return; }
    function show() { names.textContent = Array.from(input.files).map(function (f) { return f.name; }).join(", "); }
    input.addEventListener("change", show);
    ["dragenter", "dragover"].forEach(function (e) { drop.addEventListener(e, function (ev) { ev.preventDefault(); drop.classList.add("over"); }); });
    ["dragleave", "drop"].forEach(function (e) { drop.addEventListener(e, function () { drop.classList.remove("over"); }); });
    drop.addEventListener("drop", function (ev) { ev.preventDefault(); input.files = ev.dataTransfer.files; show(); });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", ready); }
  else { ready(); }
})();
