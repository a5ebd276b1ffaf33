// The approval page's own script (no build step, no other origin): times
// in the viewer's time zone, and the page reloaded when what waits
// changes (Server-Sent Events from the same process, at the page's own
// stream: what waits, or the activity).
"use strict";
for (const time of document.querySelectorAll("time[data-epoch-ms], time[datetime]")) {
  const at = time.dataset.epochMs ? new Date(Number(time.dataset.epochMs)) : new Date(time.dateTime);
  if (Number.isNaN(at.getTime())) continue;
  time.dateTime = at.toISOString();
  time.textContent = at.toLocaleString();
}
const events = new EventSource(document.body.dataset.events);
events.addEventListener("changed", () => window.location.reload());
