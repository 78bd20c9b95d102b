// The live watchlist: replaces the table's rows with each server-sent "cells" event of
// /watch/stream (the server renders them, so the page and the stream agree). Without script the
// page still shows the values of the moment it was made.
(() => {
  "use strict";
  var rows = document.getElementById("watch-rows");
  var table = document.getElementById("watch");
  var live = document.getElementById("watch-live");
  if (!rows || !table || typeof EventSource === "undefined") return;
  var source = new EventSource("/watch/stream");
  source.addEventListener("cells", (event) => {
    var data = JSON.parse(event.data);
    rows.innerHTML = data.rows;
    table.setAttribute("data-updated", String(Date.now()));
    if (live) live.textContent = "Live: updates as candles close.";
  });
  source.addEventListener("ended", () => {
    source.close();
    if (live) live.textContent = "Live updates stopped (another tab took over, or you signed out). Reload to resume.";
  });
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED && live)
      live.textContent = "Live updates are off. Reload to try again.";
  };
})();
