// The approval page's own script (no build step, no other origin): times
// in the viewer's time zone, and the page reloaded when what waits
// changes (Server-Sent Events from the same process).
"use strict";
for (const time of document.querySelectorAll("time[data-epoch-ms]")) {
  const at = new Date(Number(time.dataset.epochMs));
  time.dateTime = at.toISOString();
  time.textContent = at.toLocaleString();
}
const events = new EventSource("events");
events.addEventListener("changed", () => window.location.reload());
