// Account page: the copy button of the one-time key display. Served as a file (the CSP
// allows no inline script). Without script the key is still shown, selectable, and the
// button stays hidden.
"use strict";

function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  // Plain http on a non-local address has no Clipboard API: select and copy the old way.
  return new Promise((resolve, reject) => {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "skip";
    document.body.appendChild(area);
    area.select();
    var ok = document.execCommand("copy");
    document.body.removeChild(area);
    if (ok) resolve();
    else reject(new Error("copy refused"));
  });
}

document.querySelectorAll("button[data-copy-target]").forEach((button) => {
  var target = document.getElementById(button.getAttribute("data-copy-target"));
  var status = document.getElementById(button.getAttribute("data-copy-status"));
  if (!target) return;
  button.hidden = false;
  button.addEventListener("click", () => {
    copyText(target.textContent.trim()).then(
      () => {
        if (status) status.textContent = "Copied to the clipboard.";
      },
      () => {
        if (status) status.textContent = "Could not copy; select the key and copy it by hand.";
      },
    );
  });
});
