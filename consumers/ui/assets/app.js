// fleetflow fleet view: the live feed (server-sent events, pause button) and the page-size select. Every value
// goes into the page as text (textContent), never as markup.
"use strict";

function liveFeed() {
  const feed = document.getElementById("feed");
  const pause = document.getElementById("pause");
  const state = document.getElementById("live-state");
  const heldNote = document.getElementById("held");
  if (!feed || !pause) {
    return;
  }
  const limit = 500;
  let paused = false;
  let held = [];

  function item(e) {
    const li = document.createElement("li");
    li.className = "new";
    const time = document.createElement("time");
    time.textContent = e.time.replace("T", " ");
    const what = document.createElement("span");
    what.className = "what " + e.what;
    what.textContent = e.what;
    const link = document.createElement("a");
    link.href = "/workload?key=" + encodeURIComponent(e.workload);
    link.textContent = e.workload;
    const summary = document.createElement("div");
    summary.className = "summary";
    summary.textContent = e.summary;
    li.append(time, " ", what, " ", link);
    if (e.cluster) {
      li.append(" on " + e.cluster);
    }
    li.append(summary);
    return li;
  }

  function show(e) {
    feed.prepend(item(e));
    while (feed.children.length > limit) {
      feed.lastElementChild.remove();
    }
  }

  function noteHeld() {
    heldNote.textContent = held.length ? held.length + " new while paused" : "";
  }

  pause.addEventListener("click", () => {
    paused = !paused;
    pause.textContent = paused ? "Resume" : "Pause";
    pause.setAttribute("aria-pressed", String(paused));
    if (!paused) {
      held.forEach(show);
      held = [];
    }
    noteHeld();
  });

  const source = new EventSource("/live/events");
  source.addEventListener("open", () => { state.textContent = "live"; });
  source.addEventListener("error", () => { state.textContent = "reconnecting…"; });
  source.addEventListener("entry", (msg) => {
    const e = JSON.parse(msg.data);
    if (paused) {
      held.push(e);
      noteHeld();
    } else {
      show(e);
    }
  });
}

function pageSize() {
  const form = document.getElementById("filter");
  if (!form) {
    return;
  }
  const size = form.querySelector("select[name=size]");
  if (size) {
    size.addEventListener("change", () => form.submit());
  }
}

liveFeed();
pageSize();
