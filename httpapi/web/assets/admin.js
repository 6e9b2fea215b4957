// Gatehouse admin page: platforms, pending approvals, the receive log and
// dead letters, read from the /v1 API. No framework, no build step.
(function () {
  "use strict";
  const TOKEN_KEY = "gatehouse.token";
  const $ = (id) => document.getElementById(id);

  async function api(path, init) {
    init = init || {};
    init.headers = Object.assign({ "X-Gatehouse-Source": "web" }, init.headers || {});
    const t = localStorage.getItem(TOKEN_KEY);
    if (t) init.headers.Authorization = "Bearer " + t;
    let res = await fetch(path, init);
    if (res.status === 401) {
      const entered = window.prompt("This Gatehouse needs its API token.");
      if (!entered) throw new Error("an API token is needed");
      localStorage.setItem(TOKEN_KEY, entered.trim());
      init.headers.Authorization = "Bearer " + entered.trim();
      res = await fetch(path, init);
    }
    const body = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error((body.error && body.error.message) || res.statusText);
    return body;
  }

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text == null ? "" : String(text);
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function fill(id, rows, render) {
    const tbody = $(id).querySelector("tbody");
    tbody.replaceChildren();
    for (const r of rows) {
      const tr = document.createElement("tr");
      tr.dataset.testid = id + "-row";
      render(tr, r);
      tbody.appendChild(tr);
    }
    if (rows.length === 0) {
      const tr = document.createElement("tr");
      const td = cell(tr, "nothing here");
      td.colSpan = $(id).querySelectorAll("th").length;
      tbody.appendChild(tr);
    }
  }

  const when = (s) => (s ? new Date(s).toLocaleString() : "");

  async function loadAdapters() {
    const body = await api("/v1/adapters");
    const hints = [];
    if (body.hint) hints.push(body.hint);
    fill("adapters", body.adapters || [], (tr, a) => {
      if (a.hint) hints.push(a.platform + ": " + a.hint);
      cell(tr, a.platform);
      cell(tr, a.state + (a.lastError ? " (" + a.lastError + ")" : "") + (a.webhook ? ", webhook" : ""));
      cell(tr, a.allowed);
      cell(tr, a.leaseOwner || "nobody");
      const m = a.lastMessage;
      cell(tr, m ? when(m.receivedAt) + ": " + m.outcome + (m.reason ? " (" + m.reason + ")" : "") : "none yet", m && m.outcome === "dropped" ? "dropped" : "");
      cell(tr, a.outboxPending + " pending, " + a.outboxDead + " dead");
    });
    $("adapters-hint").textContent = hints.join(" ");
    platformOptions((body.adapters || []).map((a) => a.platform));
  }

  // platformOptions offers the served platforms in the receive-log filter
  // (after "all"), keeping the one chosen.
  function platformOptions(names) {
    const sel = $("receive-filter").elements.platform;
    const current = sel.value;
    if (current && !names.includes(current)) names = names.concat(current);
    const have = Array.from(sel.options).slice(1).map((o) => o.value);
    if (have.join("\n") === names.join("\n")) return;
    while (sel.options.length > 1) sel.remove(1);
    for (const n of names) {
      const o = document.createElement("option");
      o.textContent = n;
      sel.appendChild(o);
    }
    sel.value = current;
  }

  async function decide(id, decision) {
    await api("/v1/gates/" + encodeURIComponent(id) + "/decision", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ decision: decision, by: "admin" }),
    });
    await refresh();
  }

  async function loadGates() {
    const body = await api("/v1/gates?state=pending");
    fill("gates", body.gates || [], (tr, g) => {
      cell(tr, g.id);
      cell(tr, g.sessionId);
      cell(tr, g.tool);
      cell(tr, JSON.stringify(g.arguments), "text");
      cell(tr, when(g.expiresAt));
      const td = cell(tr, "");
      if (g.kind === "approval") {
        for (const [label, d] of [["Approve", "approve"], ["Deny", "deny"]]) {
          const b = document.createElement("button");
          b.type = "button";
          b.textContent = label;
          b.dataset.testid = "admin-" + d;
          b.addEventListener("click", () => decide(g.id, d).catch(show));
          td.appendChild(b);
        }
      }
    });
  }

  async function loadReceive() {
    const f = new FormData($("receive-filter"));
    const q = new URLSearchParams();
    for (const [k, v] of f) if (v) q.set(k, v);
    q.set("limit", "100");
    const body = await api("/v1/receive-log?" + q);
    fill("receive", body.entries || [], (tr, e) => {
      cell(tr, e.id);
      cell(tr, when(e.receivedAt));
      cell(tr, e.platform);
      cell(tr, (e.userName || "") + " [" + e.userId + "]" + (e.isBot ? " bot" : ""));
      cell(tr, e.text, "text");
      cell(tr, e.outcome, e.outcome === "dropped" ? "dropped" : "");
      cell(tr, e.reason + (e.detail ? ": " + e.detail : ""));
      cell(tr, e.sessionId ? e.sessionId + (e.seq ? " / " + e.seq : "") : "");
    });
  }

  async function loadDead() {
    const body = await api("/v1/outbox?state=dead");
    fill("dead", body.entries || [], (tr, o) => {
      cell(tr, o.id);
      cell(tr, o.platform);
      cell(tr, o.sessionId + " / " + o.seq);
      cell(tr, o.kind);
      cell(tr, o.lastError, "text");
      cell(tr, when(o.updatedAt));
    });
  }

  function show(err) { $("status").textContent = err ? String(err.message || err) : ""; }

  async function refresh() {
    show(null);
    const results = await Promise.allSettled([loadAdapters(), loadGates(), loadReceive(), loadDead()]);
    const failed = results.find((r) => r.status === "rejected");
    if (failed) show(failed.reason);
  }

  $("refresh").addEventListener("click", refresh);
  $("receive-filter").addEventListener("change", () => loadReceive().catch(show));
  refresh();
  setInterval(refresh, 5000);
})();
