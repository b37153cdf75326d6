// Drover's dashboard: live updates by server-sent events, and the actions on jobs.
// Hand-written, no library: the server renders every part; this only swaps it in.
"use strict";

(function () {
  const live = document.getElementById("live");
  const notice = document.getElementById("notice");
  const connection = document.getElementById("connection");
  const csrf = document.querySelector('meta[name="csrf-token"]').content;

  function follow() {
    if (!live || !live.dataset.stream || !window.EventSource) return;
    const source = new EventSource(live.dataset.stream);
    source.addEventListener("update", function (event) {
      live.innerHTML = JSON.parse(event.data);
      connection.textContent = "live";
      connection.className = "connection";
      document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
    });
    source.addEventListener("output", function (event) {
      const output = document.getElementById("output");
      if (!output) return;
      const atBottom = output.scrollTop + output.clientHeight >= output.scrollHeight - 4;
      output.textContent += JSON.parse(event.data);
      if (atBottom) output.scrollTop = output.scrollHeight;
    });
    source.onerror = function () {
      connection.textContent = "reconnecting";
      connection.className = "connection lost";
    };
  }

  function say(results) {
    notice.innerHTML = "";
    for (const result of results) {
      const line = document.createElement("p");
      line.className = result.ok ? "done" : "refusal";
      line.textContent = result.ref + ": " + result.message;
      notice.appendChild(line);
    }
  }

  // Every action goes to the dashboard's server, which asks the controller as this user; the
  // controller's answer, a refusal too, is shown as it gave it.
  async function act(action, refs) {
    const reply = await fetch("/actions/" + encodeURIComponent(action), {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify({ refs: refs }),
      credentials: "same-origin",
    });
    if (!reply.ok) {
      say(refs.map(function (ref) { return { ref: ref, ok: false, message: "refused: " + reply.status }; }));
      return;
    }
    say((await reply.json()).results);
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest("button.act");
    if (!button) return;
    act(button.dataset.action, [button.dataset.ref]);
  });

  window.droverAct = act;
  follow();
})();
