// Account page: after "Connect Telegram" opens Telegram in a new tab, ask the server every few
// seconds whether the chat is connected, and reload the page once it is. Served as a file (the
// CSP allows no inline script). Without script the page says to refresh it after pressing Start.
"use strict";

(() => {
  var form = document.getElementById("telegram-connect-form");
  var status = document.getElementById("telegram-waiting");
  if (!form) return;
  var EVERY_MS = 2000;
  // A connect link lives 15 minutes; asking longer than that cannot succeed.
  var GIVE_UP_MS = 15 * 60 * 1000;
  var timer = null;

  function check(startedAt) {
    fetch("/account/telegram/status", {
      headers: { accept: "application/json" },
      credentials: "same-origin",
      cache: "no-store",
    })
      .then((res) => (res.ok ? res.json() : { connected: false }))
      .catch(() => ({ connected: false }))
      .then((answer) => {
        if (answer.connected) {
          window.location.assign("/account?telegram-connected#alerts-h");
        } else if (Date.now() - startedAt < GIVE_UP_MS) {
          timer = window.setTimeout(() => {
            check(startedAt);
          }, EVERY_MS);
        } else if (status) {
          status.textContent = "The link has expired. Press Connect Telegram again.";
        }
      });
  }

  form.addEventListener("submit", () => {
    if (status) status.textContent = "Waiting for you to press Start in Telegram…";
    if (timer !== null) window.clearTimeout(timer);
    var startedAt = Date.now();
    timer = window.setTimeout(() => {
      check(startedAt);
    }, EVERY_MS);
  });
})();
