// Gatehouse admin page: activity charts, incidents, the knowledge library,
// platforms, tools, people, grants, pending approvals, the receive log and dead
// letters, read from
// the /v1 API. No framework, no build step.
(function () {
  "use strict";
  const TOKEN_KEY = "gatehouse.token";
  const $ = (id) => document.getElementById(id);
  const Cards = window.GatehouseCards;

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
    if (!res.ok) {
      const err = new Error(body.message || (body.error && body.error.message) || res.statusText);
      err.status = res.status;
      throw err;
    }
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
      cell(tr, a.allowed + (a.people ? " + " + a.people + " let in" : "") + (a.pairing ? " (pairing on)" : ""));
      cell(tr, a.leaseOwner || "nobody");
      const m = a.lastMessage;
      cell(tr, m ? when(m.receivedAt) + ": " + m.outcome + (m.reason ? " (" + m.reason + ")" : "") : "none yet", m && m.outcome === "dropped" ? "dropped" : "");
      cell(tr, a.outboxPending + " pending, " + a.outboxDead + " dead");
      const td = cell(tr, "");
      button(td, "Test", "adapter-check", () => checkPlatform(a.platform));
      td.lastChild.dataset.platform = a.platform;
    });
    $("adapters-hint").textContent = hints.join(" ");
    platformOptions((body.adapters || []).map((a) => a.platform));
  }

  // checkPlatform runs the Test of one platform (POST
  // /v1/adapters/{platform}/check) and shows its steps, each with what was
  // found and, when it fails, what to do. The result stays until the next
  // Test: the page's refresh does not touch it.
  async function checkPlatform(platform) {
    const box = $("check");
    box.hidden = false;
    $("check-summary").textContent = "Testing " + platform + "…";
    $("check-steps").replaceChildren();
    box.dataset.state = "running";
    const res = await api("/v1/adapters/" + encodeURIComponent(platform) + "/check", { method: "POST" });
    $("check-summary").textContent = "Test of " + res.platform + " on " + res.replica + ": " +
      (res.ok ? "every step passed" : "failed at " + res.failed);
    for (const s of res.steps || []) {
      const li = document.createElement("li");
      li.dataset.testid = "check-step-" + s.name;
      li.dataset.result = s.result;
      li.className = "check-" + s.result;
      const head = document.createElement("strong");
      head.textContent = s.name + ": " + s.result;
      li.appendChild(head);
      li.appendChild(document.createTextNode(" — " + s.detail));
      if (s.fix) {
        const fix = document.createElement("p");
        fix.className = "fix";
        fix.dataset.testid = "check-fix-" + s.name;
        fix.textContent = "What to do: " + s.fix;
        li.appendChild(fix);
      }
      $("check-steps").appendChild(li);
    }
    box.dataset.state = res.ok ? "ok" : "failed";
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

  // Reasons typed for a denial, by gate id: the page refreshes every few
  // seconds, and what is typed survives it.
  const reasons = new Map();

  // reasonField is a text field for why gate id is denied.
  function reasonField(id, testid) {
    const f = document.createElement("input");
    f.type = "text";
    f.maxLength = 1000;
    f.placeholder = "Reason for denying (optional)";
    f.setAttribute("aria-label", "Reason for denying");
    f.dataset.testid = testid;
    f.value = reasons.get(id) || "";
    f.addEventListener("input", () => reasons.set(id, f.value));
    return f;
  }

  // decide decides as the operator ("local"); a denial carries the reason
  // typed for it.
  async function decide(id, decision) {
    const reason = decision === "deny" ? (reasons.get(id) || "").trim() : "";
    await api("/v1/gates/" + encodeURIComponent(id) + "/decision", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(reason ? { decision: decision, reason: reason } : { decision: decision }),
    });
    reasons.delete(id);
    await refresh();
  }

  function decider(by) { return by === "local" ? "the operator" : (by || "someone"); }

  async function loadGates() {
    const body = await api("/v1/gates?state=pending");
    fill("gates", body.gates || [], (tr, g) => {
      const id = cell(tr, "");
      const a = document.createElement("a");
      a.href = "#card=" + encodeURIComponent(g.id);
      a.textContent = g.id;
      id.appendChild(a);
      cell(tr, g.sessionId);
      cell(tr, Cards.visible(g.tool));
      cell(tr, "", "text").appendChild(Cards.render(Cards.fieldsOf(g.fields, g.arguments)));
      cell(tr, when(g.expiresAt));
      const td = cell(tr, "");
      if (g.kind === "approval" || g.kind === "library") {
        for (const [label, d] of [["Approve", "approve"], ["Deny", "deny"]]) {
          if (d === "deny") td.appendChild(reasonField(g.id, "admin-reason"));
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

  // cardID is the gate named by the page's address, /admin#card=<id>: the
  // link a chat card carries when its text had to be clipped.
  function cardID() {
    const m = /^#card=([^&]+)/.exec(location.hash);
    if (!m) return "";
    try { return decodeURIComponent(m[1]); } catch (e) { return ""; }
  }

  // loadCard shows that gate's whole card: the tool, every field whole,
  // the expiry, and Approve and Deny while it waits, or its outcome.
  async function loadCard() {
    const id = cardID();
    $("card").hidden = !id;
    if (!id) return;
    $("card-id").textContent = id;
    const body = $("card-body");
    const { gate: g } = await api("/v1/gates/" + encodeURIComponent(id));
    const parts = [];
    const head = document.createElement("p");
    head.dataset.testid = "card-title";
    head.textContent = Cards.visible(g.kind === "clarify" || g.kind === "incident" ? (g.question || "A question about " + g.tool) : "Approve " + g.tool + "?");
    parts.push(head);
    if (g.kind === "approval") parts.push(Cards.render(Cards.fieldsOf(g.fields, g.arguments)));
    const state = document.createElement("p");
    state.dataset.testid = "card-state";
    if (g.state === "pending") {
      state.textContent = "Waiting for a decision; expires " + when(g.expiresAt) + ".";
      if (g.approvals && g.approvals.length) {
        // GATEHOUSE_APPROVERS_NEEDED: who approved so far.
        const who = g.approvals.map((a) => (a.person === "local" ? "the operator" : a.by) + " (" + a.surface + ")").join(", ");
        state.textContent += " " + Cards.visible("☑️ " + g.approvals.length + " of " + g.approvals[g.approvals.length - 1].needed + " approvals: " + who);
      }
    } else {
      let text = g.state;
      if (g.state !== "expired") text += " by " + decider(g.decidedBy) + " via " + (g.surface || "?");
      if (g.reason) text += " — " + g.reason;
      state.textContent = Cards.visible(text);
    }
    parts.push(state);
    if (g.state === "pending" && g.kind === "approval") {
      const row = document.createElement("p");
      for (const [label, d] of [["Approve", "approve"], ["Deny", "deny"]]) {
        if (d === "deny") row.appendChild(reasonField(g.id, "card-reason"));
        const b = document.createElement("button");
        b.type = "button";
        b.textContent = label;
        b.dataset.testid = "card-" + d;
        b.addEventListener("click", () => decide(g.id, d).catch(show));
        row.appendChild(b);
      }
      parts.push(row);
    }
    body.replaceChildren(...parts);
  }

  // People: the pending pairing codes with Approve, the people let in with
  // Revoke, and a field for a code someone tells the admin.
  async function approveCode(code) {
    await api("/v1/people", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ code: code, by: "admin" }),
    });
    await loadPeople();
  }

  async function revokePerson(p) {
    await api("/v1/people/" + encodeURIComponent(p.platform) + "/" + encodeURIComponent(p.userId), { method: "DELETE" });
    await loadPeople();
  }

  function button(td, label, testid, onClick) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.dataset.testid = testid;
    b.addEventListener("click", () => onClick().catch(show));
    td.appendChild(b);
  }

  async function loadPeople() {
    const body = await api("/v1/people");
    fill("pending-codes", body.pending || [], (tr, c) => {
      cell(tr, c.code);
      cell(tr, c.platform);
      cell(tr, (c.userName || "") + " [" + c.userId + "]");
      cell(tr, when(c.createdAt));
      cell(tr, c.text, "text");
      cell(tr, when(c.expiresAt));
      button(cell(tr, ""), "Approve", "people-approve", () => approveCode(c.code));
    });
    fill("people", body.people || [], (tr, p) => {
      cell(tr, p.platform);
      cell(tr, (p.userName || "") + " [" + p.userId + "]");
      cell(tr, p.code || "let in directly");
      cell(tr, when(p.approvedAt));
      cell(tr, p.approvedBy);
      button(cell(tr, ""), "Revoke", "people-revoke", () => revokePerson(p));
    });
    fill("zones", body.zones || [], (tr, z) => {
      cell(tr, z.platform);
      cell(tr, (z.userName || "") + " [" + z.userId + "]");
      cell(tr, z.timeZone);
      cell(tr, when(z.setAt));
      cell(tr, z.setBy);
      const td = cell(tr, "");
      button(td, "Change", "zone-change", async () => {
        const f = $("zone-form").elements;
        f.platform.value = z.platform;
        f.user.value = z.userId;
        f.zone.value = z.timeZone;
        f.zone.focus();
      });
      button(td, "Clear", "zone-clear", () => clearZone(z));
    });
  }

  // Time zones: set one for a person (as their /tz does), or clear it.
  function zonePath(platform, user) {
    return "/v1/people/" + encodeURIComponent(platform) + "/" + encodeURIComponent(user) + "/zone";
  }

  async function setZone(platform, user, zone) {
    await api(zonePath(platform, user), {
      method: "PUT", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ timeZone: zone, by: "admin" }),
    });
    await loadPeople();
  }

  async function clearZone(z) {
    await api(zonePath(z.platform, z.userId), { method: "DELETE" });
    await loadPeople();
  }

  // Grants: the active approvals for a chat, with Revoke.
  async function revokeGrant(g) {
    await api("/v1/grants/" + encodeURIComponent(g.id), { method: "DELETE" });
    await loadGrants();
  }

  async function loadGrants() {
    const body = await api("/v1/grants?active=true&limit=100");
    fill("grants", body.grants || [], (tr, g) => {
      cell(tr, decider(g.grantedBy) + (g.surface ? " via " + g.surface : ""));
      cell(tr, Cards.visible(g.tool));
      cell(tr, Cards.visible(g.label || g.bound), "text");
      cell(tr, g.sessionId);
      cell(tr, when(g.expiresAt));
      button(cell(tr, ""), "Revoke", "grants-revoke", () => revokeGrant(g));
    });
  }

  // Tools: GET /v1/tools, read each refresh so a lost MCP server shows.
  async function loadTools() {
    const body = await api("/v1/tools");
    fill("tools", body.tools || [], (tr, t) => {
      tr.dataset.tool = t.name;
      tr.dataset.available = String(!!t.available);
      cell(tr, t.name, "text");
      cell(tr, t.server);
      cell(tr, t.tier === "safe" ? "safe" : "needs approval");
      cell(tr, t.approval);
      cell(tr, t.isolation);
      cell(tr, t.available ? "yes" : "no: " + (t.error || "unavailable"), t.available ? "" : "text");
    });
  }

  // Activity: GET /v1/admin/stats over the chosen window, drawn by
  // charts.js.
  const Charts = window.GatehouseCharts;
  const money = (v) => "$" + (v >= 1 || v === 0 ? v.toFixed(2) : v.toPrecision(2));
  const sumOf = (m) => Object.values(m || {}).reduce((a, b) => a + b, 0);

  function legend(id, parts) {
    const span = $(id);
    span.replaceChildren();
    for (const [key, label] of parts) {
      const k = document.createElement("span");
      k.className = "key k-" + key;
      span.appendChild(k);
      span.appendChild(document.createTextNode(label));
    }
  }

  async function loadStats() {
    const win = $("stats-window").elements.window.value || "1h";
    const body = await api("/v1/admin/stats?window=" + encodeURIComponent(win));
    const bs = body.buckets || [], t = body.totals || {};
    const span = win === "24h" ? "the last day" : "the last hour";
    $("stats-range").textContent = "from " + when(body.since) + " to " + when(body.until) + ", in steps of " + (body.stepSeconds / 60) + " min";
    const r = t.receives || {};
    Charts.render($("chart-receives"), bs, { layout: "stack", series: [
      { key: "handed_on", label: "handed on", value: (b) => b.receives.handed_on || 0 },
      { key: "dropped", label: "dropped", value: (b) => b.receives.dropped || 0 }] });
    $("chart-receives").setAttribute("aria-label", "Messages received in " + span + ": " + (r.handed_on || 0) + " handed on, " + (r.dropped || 0) + " dropped");
    legend("legend-receives", [["handed_on", "handed on " + (r.handed_on || 0)], ["dropped", "dropped " + (r.dropped || 0)]]);

    const tu = t.turns || {};
    const ms = (v) => (v >= 1000 ? (v / 1000).toFixed(1) + " s" : v + " ms");
    Charts.render($("chart-turns"), bs, { layout: "stack", series: [
      { key: "done", label: "done", value: (b) => b.turns.done || 0 },
      { key: "failed", label: "failed", value: (b) => b.turns.failed || 0 },
      { key: "cancelled", label: "cancelled", value: (b) => b.turns.cancelled || 0 }],
      points: { label: "p95", value: (b) => b.turnP95Ms || 0, format: ms } });
    const worst = Math.max(0, ...bs.map((b) => b.turnP95Ms || 0));
    $("chart-turns").setAttribute("aria-label", "Turns settled in " + span + ": " + sumOf(tu) + " (" + (tu.done || 0) + " done, " + (tu.failed || 0) + " failed, " + (tu.cancelled || 0) + " cancelled); highest p95 " + ms(worst));
    legend("legend-turns", [["done", "done " + (tu.done || 0)], ["failed", "failed " + (tu.failed || 0)], ["cancelled", "cancelled " + (tu.cancelled || 0)], ["p95", "p95 time"]]);

    const gd = t.gatesDecided || {};
    Charts.render($("chart-gates"), bs, { layout: "side", series: [
      { key: "opened", label: "opened", value: (b) => b.gatesOpened || 0 },
      { key: "decided", label: "decided", value: (b) => sumOf(b.gatesDecided) }] });
    $("chart-gates").setAttribute("aria-label", "Approvals in " + span + ": " + (t.gatesOpened || 0) + " opened, " + sumOf(gd) + " decided");
    legend("legend-gates", [["opened", "opened " + (t.gatesOpened || 0)], ["decided", "decided " + sumOf(gd) + " (" +
      ["approved", "denied", "answered", "expired"].map((k) => (gd[k] || 0) + " " + k).join(", ") + ")"]]);

    Charts.render($("chart-spend"), bs, { layout: "stack", format: money, series: [
      { key: "spend", label: "spent", value: (b) => b.spendUsd || 0 }] });
    $("chart-spend").setAttribute("aria-label", "Spend in " + span + ": " + money(t.spendUsd || 0) + " over " + (t.modelCalls || 0) + " model calls");
    legend("legend-spend", [["spend", money(t.spendUsd || 0) + " over " + (t.modelCalls || 0) + " model calls"]]);
  }

  // Incidents: GET /v1/incidents when this gateway serves it; anything
  // else (not there yet, refused, unreachable) shows "none", never an
  // error.
  async function loadIncidents() {
    let list = [];
    try {
      const headers = { "X-Gatehouse-Source": "web" };
      const tok = localStorage.getItem(TOKEN_KEY);
      if (tok) headers.Authorization = "Bearer " + tok;
      const res = await fetch("/v1/incidents", { headers: headers });
      if (res.status === 200) {
        const body = await res.json().catch(() => ({}));
        list = (body.incidents || body.entries || []).filter((i) => !i.state || i.state === "open");
      }
    } catch (e) {
      list = [];
    }
    $("incidents-none").hidden = list.length > 0;
    $("incidents").hidden = list.length === 0;
    if (list.length === 0) return;
    fill("incidents", list, (tr, i) => {
      cell(tr, i.id);
      cell(tr, i.sessionId);
      cell(tr, Cards.visible(i.message || i.text || i.step || i.lastStep || ""), "text");
      cell(tr, when(i.openedAt || i.createdAt));
      cell(tr, i.state || "open");
    });
  }

  // The tour's dev mailbox: shown only when the gateway has one.
  async function loadDevMail() {
    const body = await api("/v1/devmail");
    $("devmail-section").hidden = !body.enabled;
    if (!body.enabled) return;
    $("devmail-dir").textContent = body.dir || "";
    fill("devmail", body.entries || [], (tr, m) => {
      cell(tr, when(m.date));
      cell(tr, m.to);
      cell(tr, m.subject);
      cell(tr, m.body, "devmail-body");
      cell(tr, m.id);
    });
  }

  // Knowledge: the collections, the documents with Delete and their
  // passages, an upload into the shared collection, and a question to
  // test. Hidden when this gateway serves no library (404).
  const size = (n) => (n >= 1 << 20 ? (n / (1 << 20)).toFixed(1) + " MiB" : n >= 1024 ? (n / 1024).toFixed(1) + " KiB" : n + " B");
  const num = (v) => (v == null ? "?" : Number(v).toFixed(2));
  let shownDoc = 0;

  async function loadKnowledge() {
    let cols, docs;
    try {
      [cols, docs] = await Promise.all([api("/v1/collections"), api("/v1/documents?limit=1000")]);
    } catch (e) {
      if (e.status === 404) { $("knowledge-section").hidden = true; return; }
      throw e;
    }
    $("knowledge-section").hidden = false;
    fill("collections", cols.collections || [], (tr, c) => {
      cell(tr, c.name + (c.trusted ? " (trusted)" : ""));
      cell(tr, c.documents);
      cell(tr, c.passages);
      cell(tr, when(c.updatedAt));
    });
    const list = docs.documents || [];
    fill("documents", list, (tr, d) => {
      tr.dataset.id = String(d.id);
      cell(tr, (d.title && d.title !== d.name ? d.title + " — " : "") + d.name + (d.version > 1 ? " (v" + d.version + ")" : ""), "text");
      cell(tr, d.collection);
      cell(tr, d.mediaType);
      cell(tr, size(d.size));
      cell(tr, d.passages);
      cell(tr, d.source + (d.addedBy ? " (" + d.addedBy + ")" : ""));
      cell(tr, when(d.updatedAt));
      const td = cell(tr, "");
      button(td, "Passages", "document-passages", () => showDocument(d.id));
      button(td, "Delete", "document-delete", () => deleteDocument(d));
    });
    const fails = docs.failures || [];
    $("knowledge-failures").hidden = fails.length === 0;
    $("knowledge-failures").querySelector("ul").replaceChildren(...fails.map((f) => {
      const li = document.createElement("li");
      li.textContent = f.name + ": " + f.error;
      return li;
    }));
    if (shownDoc && !list.some((d) => d.id === shownDoc)) {
      shownDoc = 0;
      $("document-view").hidden = true;
    }
  }

  async function showDocument(id) {
    const body = await api("/v1/documents/" + id);
    shownDoc = id;
    $("document-view-name").textContent = body.document.name;
    $("document-view").querySelector("ol").replaceChildren(...(body.passages || []).map((p) => {
      const li = document.createElement("li");
      li.dataset.testid = "document-passage";
      if (p.heading.length) {
        const h = document.createElement("strong");
        h.textContent = p.heading.join(" › ");
        li.appendChild(h);
      }
      const t = document.createElement("p");
      t.className = "passage-text";
      t.textContent = p.text;
      li.appendChild(t);
      return li;
    }));
    $("document-view").hidden = false;
  }

  // deleteDocument removes a document; one from the folder comes back at
  // the watcher's next scan unless its file is removed too.
  async function deleteDocument(d) {
    await api("/v1/documents/" + d.id, { method: "DELETE" });
    await loadKnowledge();
  }

  async function uploadDocument() {
    const input = $("knowledge-upload").elements.file;
    const status = $("knowledge-upload-status");
    if (!input.files.length) { status.textContent = "Choose a file first."; return; }
    const form = new FormData();
    form.append("collection", "shared");
    form.append("source", "admin");
    form.append("file", input.files[0]);
    status.textContent = "Uploading " + input.files[0].name + "…";
    try {
      const body = await api("/v1/documents", { method: "POST", body: form });
      const d = body.document;
      status.textContent = body.changed ? "Added " + d.name + ": " + d.passages + " passages." : d.name + " is already there, unchanged.";
      input.value = "";
    } catch (e) {
      status.textContent = "Not added: " + (e.message || e);
      status.classList.add("dropped");
      return;
    }
    status.classList.remove("dropped");
    await loadKnowledge();
  }

  // evidenceText says what each retriever found for a passage.
  function evidenceText(ev, floors) {
    const parts = [];
    const l = ev.lexical, m = ev.embeddings;
    if (l) parts.push("lexical: evidence " + num(l.evidence) + " = closeness " + num(l.closeness) + " + coverage " + num(l.coverage) +
      (l.evidence >= floors.lexical ? " ≥ " : " < ") + "floor " + floors.lexical + (l.rank ? ", rank " + l.rank : "") +
      " (BM25 " + num(l.score) + " against a background of " + num(l.background) + ")");
    if (m) parts.push("embeddings: closeness " + num(m.closeness) + (m.closeness >= floors.embeddings ? " ≥ " : " < ") + "floor " + floors.embeddings +
      (m.rank ? ", rank " + m.rank : "") + " (similarity " + num(m.similarity) + " against " + num(m.background) + ")");
    parts.push("fused " + (ev.fused ? ev.fused.toFixed(4) : "0"));
    return parts.join("; ");
  }

  function recalledList(items, floors, testid) {
    const ol = document.createElement("ol");
    for (const r of items) {
      const li = document.createElement("li");
      li.dataset.testid = testid;
      const head = document.createElement("strong");
      head.textContent = (r.document.title || r.document.name) + " (" + r.document.collection + "/" + r.document.name + ")" +
        (r.passage.heading.length ? " › " + r.passage.heading.join(" › ") : "") + (r.reason ? " — " + r.reason : "");
      const text = document.createElement("p");
      text.className = "passage-text";
      text.textContent = r.passage.text;
      const ev = document.createElement("p");
      ev.className = "evidence";
      ev.dataset.testid = "evidence";
      ev.textContent = evidenceText(r.evidence, floors);
      li.append(head, text, ev);
      ol.appendChild(li);
    }
    return ol;
  }

  async function askKnowledge() {
    const f = $("knowledge-ask").elements;
    const out = $("knowledge-answer");
    const req = { question: f.question.value.trim() };
    if (f.sessionId.value.trim()) req.sessionId = f.sessionId.value.trim();
    if (f.user.value.trim()) req.user = f.user.value.trim();
    const body = await api("/v1/knowledge/recall", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(req),
    });
    const floors = { lexical: body.lexicalFloor, embeddings: body.embeddingsFloor };
    const parts = [];
    const summary = document.createElement("p");
    summary.dataset.testid = "knowledge-summary";
    summary.textContent = (body.passages.length ? body.passages.length + " passage" + (body.passages.length === 1 ? "" : "s") + " would be given" : "Nothing would be recalled") +
      " (terms: " + (body.terms.join(", ") || "none") + "; collections: " + body.collections.join(", ") + "; at most " + body.maxPassages +
      " passages within " + body.tokenBudget + " tokens" + (body.embeddings ? "" : "; lexical only, no embeddings configured") + ")." +
      (body.embeddingsError ? " Embeddings failed: " + body.embeddingsError : "");
    parts.push(summary);
    if (body.passages.length) parts.push(recalledList(body.passages, floors, "recalled"));
    if (body.notRecalled.length) {
      const h = document.createElement("h4");
      h.textContent = "Considered, not given";
      parts.push(h, recalledList(body.notRecalled, floors, "not-recalled"));
    }
    out.replaceChildren(...parts);
  }

  function show(err) { $("status").textContent = err ? String(err.message || err) : ""; }

  async function refresh() {
    show(null);
    const results = await Promise.allSettled([loadCard(), loadStats(), loadIncidents(), loadKnowledge(), loadAdapters(), loadGates(), loadReceive(), loadDead(), loadPeople(), loadGrants(), loadTools(), loadDevMail()]);
    const failed = results.find((r) => r.status === "rejected");
    if (failed) show(failed.reason);
    // How many refreshes have finished, for whoever waits on the page.
    document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
  }

  $("refresh").addEventListener("click", refresh);
  window.addEventListener("hashchange", () => loadCard().catch(show));
  $("receive-filter").addEventListener("change", () => loadReceive().catch(show));
  $("stats-window").addEventListener("change", () => loadStats().catch(show));
  $("stats-window").addEventListener("submit", (ev) => ev.preventDefault());
  $("pair-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const input = $("pair-form").elements.code;
    approveCode(input.value.trim()).then(() => { input.value = ""; show(null); }).catch(show);
  });
  $("zone-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = $("zone-form").elements;
    setZone(f.platform.value.trim(), f.user.value.trim(), f.zone.value.trim()).then(() => { f.zone.value = ""; show(null); }).catch(show);
  });
  $("knowledge-upload").addEventListener("submit", (ev) => { ev.preventDefault(); uploadDocument().catch(show); });
  $("knowledge-ask").addEventListener("submit", (ev) => {
    ev.preventDefault();
    askKnowledge().catch((e) => { $("knowledge-answer").textContent = "Could not ask: " + (e.message || e); });
  });
  refresh();
  setInterval(refresh, 5000);
})();
