// acp-bridge ui: the live parts of the server-rendered pages. Everything inserted here is a
// fragment the server rendered (escaped there) or text set through textContent.
"use strict";

(() => {
  const TEXT_KINDS = new Set(["message", "thought", "terminal_output", "stderr"]);

  // The runs list: re-rendered rows whenever the server says the runs changed.
  const rows = document.getElementById("rows");
  if (rows && rows.dataset.live === "1") {
    // From the mark the rows were rendered with: a change in between is told at once.
    const source = new EventSource(`/live/runs?mark=${encodeURIComponent(rows.dataset.mark)}`);
    let busy = false;
    source.addEventListener("changed", async () => {
      if (busy) return;
      busy = true;
      try {
        const query = rows.dataset.query;
        const response = await fetch("/runs/rows" + (query ? "?" + query : ""));
        if (response.ok) rows.innerHTML = await response.text();
      } finally {
        busy = false;
      }
    });
  }

  // A batch's or comparison's page: reloaded whenever the server says its runs changed
  // since the page was rendered (counts, failures and attempts are all rendered there).
  const group = document.getElementById("group");
  if (group && group.dataset.live === "1") {
    const id = encodeURIComponent(group.dataset.group);
    const mark = encodeURIComponent(group.dataset.mark);
    const source = new EventSource(`/live/batches/${id}?mark=${mark}`);
    source.addEventListener("changed", () => {
      source.close();
      window.location.reload();
    });
  }

  // A run's timeline: followed while the run records events, reloaded once it ended.
  const timeline = document.getElementById("timeline");
  if (!timeline || timeline.dataset.live !== "1") return;
  const run = timeline.dataset.run;
  let last = Number(timeline.dataset.last);
  let wanted = last;
  let busy = false;
  let ended = false;

  const place = (item) => {
    const kind = item.dataset.kind;
    if (kind === "tool_update" && item.dataset.call) {
      for (const call of timeline.querySelectorAll("li[data-kind='tool_call']")) {
        if (call.dataset.call === item.dataset.call) {
          const status = call.querySelector(".status");
          status.textContent = item.dataset.status;
          status.className = "status st-" + item.dataset.status;
          return;
        }
      }
    }
    if (kind === "subagent") {  // a child session's newer state replaces the one shown
      for (const child of timeline.querySelectorAll("li[data-kind='subagent']")) {
        if (child.dataset.child === item.dataset.child) {
          child.replaceWith(item);
          return;
        }
      }
    }
    const previous = timeline.lastElementChild;
    if (previous && TEXT_KINDS.has(kind) && previous.dataset.kind === kind &&
        previous.dataset.stream === item.dataset.stream) {
      previous.querySelector(".text").textContent += item.querySelector(".text").textContent;
      previous.dataset.seq = item.dataset.seq;
      return;
    }
    timeline.append(item);
  };

  const pull = async () => {
    if (busy) return;
    busy = true;
    try {
      while (last < wanted) {
        const response = await fetch(`/runs/${encodeURIComponent(run)}/timeline?after=${last}`);
        if (!response.ok) break;
        const fragment = document.createElement("template");
        fragment.innerHTML = await response.text();
        for (const item of Array.from(fragment.content.children)) place(item);
        const next = Number(response.headers.get("x-last"));
        if (!(next > last)) break;
        last = next;
        timeline.dataset.last = String(last);
      }
    } finally {
      busy = false;
    }
    if (ended) window.location.reload();
  };

  const source = new EventSource(`/runs/${encodeURIComponent(run)}/live?after=${last}`);
  source.addEventListener("events", (event) => {
    wanted = Math.max(wanted, Number(event.data));
    pull();
  });
  source.addEventListener("ended", () => {
    source.close();
    ended = true;
    pull();
  });
})();
