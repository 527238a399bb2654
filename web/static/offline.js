// The offline page (offline.html, served by the service worker when a navigation cannot
// reach the server) asks the server's health check every few seconds, and on "Try again
// now", and reloads the address the person opened as soon as it answers.
"use strict";

(() => {
  const status = document.getElementById("status");
  const button = document.getElementById("retry");
  let delay = 2000;
  let timer = 0;

  async function check() {
    clearTimeout(timer);
    status.textContent = "Trying to reach the server…";
    try {
      const res = await fetch("/api/health", { cache: "no-store" });
      if (res.ok) {
        status.textContent = "The server answers: opening jean2…";
        location.reload();
        return;
      }
    } catch {
      // Not reachable yet: try again below.
    }
    const seconds = Math.round(delay / 1000);
    status.textContent = `Not reachable. Trying again in ${seconds} s.`;
    timer = setTimeout(check, delay);
    delay = Math.min(delay * 2, 30000);
  }

  button.addEventListener("click", () => {
    delay = 2000;
    check();
  });
  check();
})();
