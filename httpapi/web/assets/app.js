// Gatehouse web chat. Plain JavaScript, no build step.
//
// The conversation is projected from the session's committed events only
// (GET /v1/sessions/{id}/events, then the SSE stream). Partial text is shown
// while a model streams and is replaced by the committed assistant.message.
// Payload text is only ever set with textContent, never parsed as HTML.
"use strict";

(() => {
  const TOKEN_KEY = "gatehouse.token";
  const TOUR_KEY = "gatehouse.tourChats";
  const TOUR_SELECTION = "scripted:tour";
  const PAGE = 1000;
  const KINDS = [
    "user.message", "assistant.message", "tool.result", "run.started",
    "run.finished", "notice", "compaction", "gate.opened", "gate.decided",
    "gate.approval", "effect.receipt", "turn.retry",
  ];

  const $ = (id) => document.getElementById(id);
  const ui = {
    sidebar: $("sidebar"), scrim: $("scrim"), menu: $("menu"),
    sessions: $("sessions"), newChat: $("new-chat"),
    title: $("chat-title"), conn: $("conn"), cancel: $("cancel"),
    scroller: $("scroller"), banner: $("banner"), empty: $("empty"),
    conversation: $("conversation"),
    composer: $("composer"), input: $("input"), delivery: $("delivery"), send: $("send"),
    chatSettings: $("chat-settings"), modelSelect: $("model-select"), thinkSelect: $("think-select"),
    tokenDialog: $("token-dialog"), tokenForm: $("token-form"),
    tokenInput: $("token-input"), tokenWhy: $("token-why"),
    sourceDialog: $("source-dialog"), sourceTitle: $("source-title"),
    sourceHeading: $("source-heading"), sourceText: $("source-text"),
  };

  // ---- API ---------------------------------------------------------------

  let tokenWaiter = null;

  function token() {
    try { return localStorage.getItem(TOKEN_KEY) || ""; } catch { return ""; }
  }

  // askToken shows the token dialog once, however many requests were refused
  // at the same time, and resolves when the user has entered one.
  function askToken(rejected) {
    if (tokenWaiter) return tokenWaiter;
    tokenWaiter = new Promise((resolve) => {
      ui.tokenWhy.textContent = rejected
        ? "The saved token was refused. Enter the API token."
        : "This Gatehouse needs its API token.";
      ui.tokenInput.value = "";
      const done = (ev) => {
        ev.preventDefault();
        const t = ui.tokenInput.value.trim();
        if (!t) return;
        try { localStorage.setItem(TOKEN_KEY, t); } catch { /* private mode */ }
        ui.tokenForm.removeEventListener("submit", done);
        ui.tokenDialog.close();
        tokenWaiter = null;
        resolve(t);
      };
      ui.tokenForm.addEventListener("submit", done);
      ui.tokenDialog.showModal();
      ui.tokenInput.focus();
    });
    return tokenWaiter;
  }

  class APIError extends Error {
    constructor(status, code, message) {
      super(message || code || `HTTP ${status}`);
      this.status = status;
      this.code = code || "";
    }
  }

  // api sends a request with the token, asks for a token on 401 and tries
  // again, and answers the decoded JSON body or throws an APIError.
  async function api(path, opts = {}) {
    for (let tries = 0; ; tries++) {
      const headers = { Accept: "application/json", ...(opts.headers || {}) };
      const t = token();
      if (t) headers.Authorization = `Bearer ${t}`;
      let body = opts.body;
      if (body !== undefined && typeof body !== "string") {
        body = JSON.stringify(body);
        headers["Content-Type"] = "application/json";
      }
      const res = await fetch(path, { method: opts.method || "GET", headers, body, cache: "no-store" });
      if (res.status === 401 && tries < 5) {
        await askToken(Boolean(t));
        continue;
      }
      let data = null;
      const text = await res.text();
      if (text) {
        try { data = JSON.parse(text); } catch { data = null; }
      }
      if (!res.ok) {
        throw new APIError(res.status, data && data.code, (data && data.message) || text.trim() || res.statusText);
      }
      return data || {};
    }
  }

  function newRequestID() {
    if (crypto.randomUUID) return crypto.randomUUID();
    // crypto.randomUUID needs a secure context; getRandomValues does not.
    const b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  // ---- state -------------------------------------------------------------

  const state = {
    sessions: [],
    id: "",          // the open session
    epoch: 0,        // bumps on every switch, so late answers are dropped
    events: [],      // committed events, in seq order, gap-free
    lastSeq: 0,
    early: new Map(), // seq → event that arrived ahead of a gap
    partials: new Map(), // generationId → streaming text
    outbox: [],      // {requestId, text, seq?, failed?} sent, not yet seen in the log
    es: null,
    retry: null,
    catchingUp: false,
    running: false,
    info: null,      // GET /v1/info: the model and what is not configured
  };

  // ---- the tour ------------------------------------------------------------
  // "Try the tour" marks one chat (this browser remembers which): its
  // input is sent with the tour's model selection, and only while no model
  // is configured. Other chats, and every chat once a model is, are not
  // touched.

  function tourChats() {
    try { return new Set(JSON.parse(localStorage.getItem(TOUR_KEY) || "[]")); } catch { return new Set(); }
  }
  function markTour(id) {
    const set = tourChats();
    set.add(id);
    try { localStorage.setItem(TOUR_KEY, JSON.stringify([...set])); } catch { /* private mode */ }
  }
  function isTour(id) {
    return Boolean(id) && Boolean(state.info) && !state.info.modelConfigured && tourChats().has(id);
  }

  // ---- sessions ----------------------------------------------------------

  function sessionFromHash() {
    const m = /^#\/?s\/([^/?#]+)/.exec(location.hash);
    return m ? decodeURIComponent(m[1]) : "";
  }

  function sessionLabel(s) {
    if (s.title) return s.title;
    return `Chat ${String(s.id).slice(0, 8)}`;
  }

  function relTime(iso) {
    const t = Date.parse(iso);
    if (!t) return "";
    const s = Math.round((Date.now() - t) / 1000);
    if (s < 60) return "just now";
    if (s < 3600) return `${Math.floor(s / 60)} min ago`;
    if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
    return new Date(t).toLocaleDateString();
  }

  async function loadSessions() {
    try {
      const data = await api("/v1/sessions");
      state.sessions = Array.isArray(data.sessions) ? data.sessions : [];
      renderSessions();
    } catch (err) {
      showBanner(`Could not load chats: ${err.message}`);
    }
  }

  function renderSessions() {
    const list = state.sessions.slice().sort((a, b) =>
      String(b.updatedAt || "").localeCompare(String(a.updatedAt || "")));
    const frag = document.createDocumentFragment();
    for (const s of list) {
      const li = el("li", "session-item");
      const a = el("a", "session-link");
      a.href = `#/s/${encodeURIComponent(s.id)}`;
      a.dataset.testid = "session-item";
      a.dataset.sessionId = s.id;
      if (s.id === state.id) a.setAttribute("aria-current", "page");
      a.append(el("span", "session-title", sessionLabel(s)));
      a.append(el("span", "session-time", relTime(s.updatedAt)));
      li.append(a);
      frag.append(li);
    }
    if (!list.length) frag.append(el("li", "session-none", "No chats yet"));
    ui.sessions.replaceChildren(frag);
    const cur = state.sessions.find((s) => s.id === state.id);
    ui.title.textContent = cur ? sessionLabel(cur) : state.id ? `Chat ${state.id.slice(0, 8)}` : "Gatehouse";
  }

  async function newChat() {
    ui.newChat.disabled = true;
    try {
      const data = await api("/v1/sessions", { method: "POST", body: {} });
      const s = data.session;
      if (!s || !s.id) throw new Error("the server answered no session");
      if (!state.sessions.some((x) => x.id === s.id)) state.sessions.unshift(s);
      location.hash = `#/s/${encodeURIComponent(s.id)}`;
      closeSidebar();
    } catch (err) {
      showBanner(`Could not start a chat: ${err.message}`);
    } finally {
      ui.newChat.disabled = false;
    }
  }

  // ---- opening a session and following its log ---------------------------

  function closeStream() {
    if (state.es) { state.es.close(); state.es = null; }
    if (state.retry) { clearTimeout(state.retry); state.retry = null; }
  }

  async function openSession(id) {
    closeStream();
    state.epoch++;
    const epoch = state.epoch;
    Object.assign(state, {
      id, events: [], lastSeq: 0, early: new Map(), partials: new Map(),
      outbox: [], catchingUp: false, running: false,
    });
    hideBanner();
    renderSessions();
    renderSetup();
    render();
    ui.input.disabled = ui.send.disabled = !id;
    loadChatSettings(epoch);
    if (!id) { setConn("idle"); return; }
    setConn("connecting");
    try {
      await catchUp(epoch);
    } catch (err) {
      if (epoch !== state.epoch) return;
      if (err.status === 404) {
        showBanner("This chat does not exist.");
        ui.input.disabled = ui.send.disabled = true;
        setConn("idle");
        return;
      }
      showBanner(`Could not load the chat: ${err.message}`);
    }
    if (epoch !== state.epoch) return;
    connect(epoch);
    ui.input.focus();
  }

  // ---- the chat's model and thinking level -------------------------------
  //
  // The selectors show and set the open chat's choices
  // (GET/PUT /v1/sessions/{id}/chat-settings): kept in the database for the
  // chat, applied to every later turn whose input chooses nothing. Only
  // the models GATEHOUSE_CHAT_MODELS lists are offered. A chat platform's
  // session is shown, not changed here: its chat picks with /model.

  function option(value, label) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = label;
    return o;
  }

  function showChatSettings(cs) {
    const models = Array.isArray(cs.models) ? cs.models : [];
    ui.modelSelect.replaceChildren(option("", cs.model ? `Default (${cs.model})` : "Default model"));
    for (const m of models) ui.modelSelect.append(option(m, m));
    if (cs.selection && !models.includes(cs.selection)) ui.modelSelect.append(option(cs.selection, `${cs.selection} (no longer listed)`));
    ui.modelSelect.value = cs.selection || "";
    ui.modelSelect.hidden = models.length === 0;
    ui.thinkSelect.replaceChildren(option("", "Thinking: default"));
    for (const l of cs.thinkingLevels || []) ui.thinkSelect.append(option(l, `Thinking: ${l}`));
    ui.thinkSelect.value = cs.thinking || "";
    const fromChat = Boolean(cs.chat && cs.chat.platform);
    ui.modelSelect.disabled = ui.thinkSelect.disabled = fromChat;
    if (fromChat) ui.chatSettings.title = `Picked in the ${cs.chat.platform} chat with /model and /think`;
    ui.chatSettings.hidden = false;
  }

  async function loadChatSettings(epoch) {
    ui.chatSettings.hidden = true;
    if (!state.id) return;
    try {
      const cs = await api(`/v1/sessions/${encodeURIComponent(state.id)}/chat-settings`);
      if (epoch === state.epoch) showChatSettings(cs);
    } catch (err) {
      if (epoch === state.epoch) showBanner(`Could not read the chat's model: ${err.message}`);
    }
  }

  async function putChatSettings(change) {
    const epoch = state.epoch;
    try {
      const cs = await api(`/v1/sessions/${encodeURIComponent(state.id)}/chat-settings`, {
        method: "PUT", body: change, headers: { "X-Gatehouse-Source": "web" },
      });
      if (epoch === state.epoch) showChatSettings(cs);
    } catch (err) {
      if (epoch !== state.epoch) return;
      showBanner(`Could not change the chat's model: ${err.message}`);
      loadChatSettings(epoch);
    }
  }

  ui.modelSelect.addEventListener("change", () => putChatSettings({ selection: ui.modelSelect.value }));
  ui.thinkSelect.addEventListener("change", () => putChatSettings({ thinking: ui.thinkSelect.value }));

  // catchUp reads the committed events after lastSeq, page by page.
  async function catchUp(epoch) {
    if (state.catchingUp) return;
    state.catchingUp = true;
    try {
      for (;;) {
        const data = await api(`/v1/sessions/${encodeURIComponent(state.id)}/events?after=${state.lastSeq}&limit=${PAGE}`);
        if (epoch !== state.epoch) return;
        const evs = Array.isArray(data.events) ? data.events : [];
        for (const ev of evs) accept(ev);
        if (evs.length < PAGE) break;
      }
      drainEarly();
    } finally {
      if (epoch === state.epoch) state.catchingUp = false;
    }
    scheduleRender();
  }

  // accept applies the next committed event; it ignores repeats and keeps
  // an event that arrived ahead of a gap until the gap is filled.
  function accept(ev) {
    if (!ev || typeof ev.seq !== "number" || ev.seq <= state.lastSeq) return;
    if (ev.seq !== state.lastSeq + 1) {
      state.early.set(ev.seq, ev);
      return;
    }
    state.events.push(ev);
    state.lastSeq = ev.seq;
    if (ev.kind === "assistant.message") {
      const p = payloadOf(ev);
      state.partials.delete(p.generationId || "");
    }
    if (ev.kind === "run.finished") state.partials.clear();
    state.outbox = state.outbox.filter((o) => !(o.seq && o.seq <= state.lastSeq));
    if (ev.kind === "user.message") {
      const p = payloadOf(ev);
      if (p.requestId) state.outbox = state.outbox.filter((o) => o.requestId !== p.requestId);
    }
  }

  function drainEarly() {
    while (state.early.has(state.lastSeq + 1)) {
      const ev = state.early.get(state.lastSeq + 1);
      state.early.delete(ev.seq);
      accept(ev);
    }
    for (const seq of state.early.keys()) if (seq <= state.lastSeq) state.early.delete(seq);
  }

  function connect(epoch) {
    closeStream();
    const t = token();
    let url = `/v1/sessions/${encodeURIComponent(state.id)}/stream?after=${state.lastSeq}`;
    if (t) url += `&access_token=${encodeURIComponent(t)}`;
    const es = new EventSource(url);
    state.es = es;
    const onCommitted = (msg) => {
      if (epoch !== state.epoch) return;
      let ev;
      try { ev = JSON.parse(msg.data); } catch { return; }
      const before = state.lastSeq;
      accept(ev);
      drainEarly();
      if (state.early.size) {
        catchUp(epoch).catch(() => {});
      }
      if (state.lastSeq !== before) {
        scheduleRender();
        if (ev.kind === "run.finished" || ev.kind === "user.message") refreshSessionsSoon();
      }
    };
    for (const k of KINDS) es.addEventListener(k, onCommitted);
    es.onmessage = onCommitted; // a frame without an event name
    es.addEventListener("partial", (msg) => {
      if (epoch !== state.epoch) return;
      let p;
      try { p = JSON.parse(msg.data); } catch { return; }
      if (!p || typeof p.text !== "string") return;
      const gen = p.generationId || "";
      if (state.events.some((e) => e.kind === "assistant.message" && payloadOf(e).generationId === gen && gen)) return;
      state.partials.set(gen, (state.partials.get(gen) || "") + p.text);
      scheduleRender();
    });
    es.onopen = () => { if (epoch === state.epoch) setConn("live"); };
    es.onerror = () => {
      if (epoch !== state.epoch) return;
      if (es.readyState === EventSource.CLOSED) {
        // The server refused the stream (a 401, a 404, a restart): find
        // out through the API, which asks for a token if that is it, and
        // connect again from what is committed.
        setConn("offline");
        closeStream();
        state.retry = setTimeout(async () => {
          try { await catchUp(epoch); } catch { /* shown by the next try */ }
          if (epoch === state.epoch) connect(epoch);
        }, 2000);
      } else {
        setConn("connecting"); // EventSource retries by itself with Last-Event-ID
      }
    };
  }

  let sessionsTimer = null;
  function refreshSessionsSoon() {
    if (sessionsTimer) return;
    sessionsTimer = setTimeout(() => { sessionsTimer = null; loadSessions(); }, 500);
  }

  // ---- sending -------------------------------------------------------------

  async function send(text, delivery) {
    const id = state.id;
    const epoch = state.epoch;
    const item = { requestId: newRequestID(), text, delivery };
    state.outbox.push(item);
    scheduleRender();
    // The same requestId on every try: a retried POST never makes a second message.
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await api(`/v1/sessions/${encodeURIComponent(id)}/input`, {
          method: "POST",
          headers: { "X-Gatehouse-Source": "web" },
          body: { text, requestId: item.requestId, delivery, selection: isTour(id) ? TOUR_SELECTION : undefined },
        });
        if (epoch !== state.epoch) return;
        item.seq = res.seq;
        if (item.seq && item.seq <= state.lastSeq) {
          state.outbox = state.outbox.filter((o) => o !== item);
        } else if (item.seq > state.lastSeq && !state.es) {
          catchUp(epoch).catch(() => {});
        }
        scheduleRender();
        return;
      } catch (err) {
        const retryable = !(err instanceof APIError) || err.status >= 500 || err.status === 429;
        if (!retryable || attempt >= 5) {
          if (epoch !== state.epoch) return;
          item.failed = err.message;
          scheduleRender();
          return;
        }
        await sleep(500 * 2 ** (attempt - 1));
      }
    }
  }

  // ---- projection ----------------------------------------------------------

  function payloadOf(ev) {
    const p = ev && ev.payload;
    if (p && typeof p === "object") return p;
    if (typeof p === "string") {
      try { return JSON.parse(p) || {}; } catch { return {}; }
    }
    return {};
  }

  // project turns the committed events into turns. A turn opens with the
  // first input after a run.finished boundary and closes at the next one.
  // An input committed while a turn is open waits in the queue; the queue
  // drains only at a run.finished boundary, never when an assistant
  // message arrives (the readiness rule). A guide input joins the running
  // turn. A turn that waits for its card holds nothing: a message typed
  // meanwhile is answered in a turn of its own, an aside drawn between
  // the card and the outcome, and the waiting turn, resumed by the
  // decision, goes on in a continuation drawn after it.
  function project(events) {
    const items = [];  // top-level: turns and system lines, in order
    let turn = null;   // the open turn
    let queue = [];    // inputs waiting for the open turn to end
    let lastTurn = null;
    const calls = new Map(); // toolCallId → tool entry
    const gateCards = new Map(); // gateId → approval card
    const consumed = new Set(); // user.message seqs a model request presented
    const waiting = new Map(); // runId → the turn that waits for its card

    const openTurn = (inputs) => {
      turn = { type: "turn", inputs: [], parts: [], finished: null, failed: false };
      for (const u of inputs) turn.parts.push({ type: "user", ev: u.ev, p: u.p });
      items.push(turn);
      lastTurn = turn;
      return turn;
    };
    const current = () => turn || openTurn([]);
    const lastWork = (t) => {
      const last = t.parts[t.parts.length - 1];
      if (last && last.type === "work") return last;
      const w = { type: "work", tools: [] };
      t.parts.push(w);
      return w;
    };

    for (const ev of events) {
      const p = payloadOf(ev);
      switch (ev.kind) {
        case "user.message": {
          const u = { ev, p };
          if (!turn) {
            openTurn([u]);
            if (waiting.size) {
              turn.aside = true;
              turn.parts.push({ type: "note", text: "Answered while a card waits; its turn goes on after the decision." });
            }
          } else if (p.delivery === "guide") {
            turn.parts.push({ type: "user", ev, p, guide: true });
          } else {
            queue.push(u);
          }
          break;
        }
        case "run.started": {
          const resumed = p.runId ? waiting.get(p.runId) : null;
          if (resumed) {
            waiting.delete(p.runId);
            if (!turn && lastTurn !== resumed) {
              // Asides came between: the resumed turn goes on below them.
              openTurn([]);
              turn.resumes = resumed;
              turn.parts.push({ type: "note", text: "Continuing the turn whose card was decided above." });
            }
          }
          if (!turn && queue.length) { openTurn(queue); queue = []; }
          break;
        }
        case "turn.retry":
          // A failed turn runs again, or a good answer is regenerated
          // (replaces names it): the new answer goes in a turn of its own,
          // and a replaced answer is no longer shown as the answer.
          if (p.replaces) {
            for (const it of items) {
              if (it.type !== "turn") continue;
              it.parts = it.parts.filter((part) => !(part.type === "assistant" && part.p && part.p.generationId === p.replaces));
            }
          }
          if (!turn) openTurn(queue.splice(0));
          turn.parts.push({ type: "note", text: p.replaces ? "Regenerating the answer." : "Retrying the failed turn." });
          break;
        case "assistant.message": {
          const t = current();
          const text = typeof p.text === "string" ? p.text : "";
          const toolCalls = Array.isArray(p.toolCalls) ? p.toolCalls : [];
          if (p.stopReason !== "error" && p.stopReason !== "aborted" && Array.isArray(p.inputSeqs)) {
            for (const s of p.inputSeqs) consumed.add(s);
          }
          if (p.stopReason === "error") {
            t.parts.push({ type: "error", ev, p, text: p.error || text || "The model failed.", hint: p.hint, code: p.errorCode });
            t.failed = true;
            break;
          }
          if (text) t.parts.push({ type: "assistant", ev, p, text });
          if (toolCalls.length) {
            const w = lastWork(t);
            for (const c of toolCalls) {
              const entry = { call: c, result: null };
              w.tools.push(entry);
              if (c && c.id) calls.set(c.id, entry);
            }
          }
          if (p.stopReason === "aborted") t.parts.push({ type: "note", text: "Stopped." });
          if (p.stopReason === "max_tokens") t.parts.push({ type: "note", text: "The answer was cut off (max tokens)." });
          break;
        }
        case "tool.result": {
          const entry = calls.get(p.toolCallId);
          if (entry) {
            entry.result = p;
          } else {
            lastWork(current()).tools.push({ call: { id: p.toolCallId, name: p.name }, result: p });
          }
          break;
        }
        case "gate.opened": {
          const card = { type: "gatecard", gateId: p.gateId, tool: p.tool || "a tool", args: p.arguments, fields: p.fields, kind: p.kind,
            question: p.question, options: Array.isArray(p.options) ? p.options : [], expiresAt: p.expiresAt, decision: null };
          if (p.gateId) gateCards.set(p.gateId, card);
          current().parts.push(card);
          break;
        }
        case "gate.approval": {
          // One approval of a card that needs several people's.
          const card = gateCards.get(p.gateId);
          if (card) card.approvals = (card.approvals || []).concat([p]);
          break;
        }
        case "gate.decided": {
          const card = gateCards.get(p.gateId);
          if (card) {
            card.decision = p;
          } else {
            const decision = p.decision || "decided";
            (turn || lastTurn || current()).parts.push({ type: "gate", text: `${cap(decision)} by ${p.by || "someone"}` });
          }
          break;
        }
        case "notice": {
          const line = { type: "notice", text: p.text || p.code || "Notice", code: p.code };
          if (turn) turn.parts.push(line); else items.push(line);
          break;
        }
        case "compaction":
          items.push({ type: "compaction", text: p.summary || "" });
          break;
        case "run.finished": {
          const t = turn || lastTurn;
          if (t) {
            // A guide no request of this turn read (it came as the turn
            // ended) is answered by the next one: it moves there.
            const stray = t.parts.filter((x) => x.type === "user" && x.guide && !consumed.has(x.ev.seq));
            if (stray.length) {
              t.parts = t.parts.filter((x) => !stray.includes(x));
              queue.push(...stray.map((x) => ({ ev: x.ev, p: x.p })));
            }
            t.finished = p;
            const status = p.status || "";
            if (status === "awaiting_approval" && p.runId) waiting.set(p.runId, t.resumes || t);
            if ((status === "failed" || status === "error") && !t.failed) {
              t.parts.push({ type: "error", p, text: p.error || "The turn failed.", hint: p.hint });
              t.failed = true;
            } else if (status === "cancelled" && !t.parts.some((x) => x.type === "note" && x.text === "Stopped.")) {
              t.parts.push({ type: "note", text: "Stopped." });
            }
          }
          turn = null;
          // The boundary: the queue drains. An input the finished turn's
          // model requests already presented (inputSeqs) was answered by
          // it; the others open the next turn.
          if (queue.length) {
            const answered = queue.filter((u) => consumed.has(u.ev.seq));
            const unanswered = queue.filter((u) => !consumed.has(u.ev.seq));
            if (answered.length && t) {
              let at = 0;
              while (at < t.parts.length && t.parts[at].type === "user") at++;
              t.parts.splice(at, 0, ...answered.map((u) => ({ type: "user", ev: u.ev, p: u.p })));
            } else if (answered.length) {
              unanswered.unshift(...answered);
            }
            queue = [];
            if (unanswered.length) openTurn(unanswered);
          }
          break;
        }
        default:
          break; // bookkeeping (effect.receipt) is not shown
      }
    }
    // The last turn, when it failed for good, can be retried.
    const last = items[items.length - 1];
    if (!turn && last && last === lastTurn && last.failed && last.finished && last.finished.status === "failed") {
      last.retryable = true;
    }
    return { items, queue, running: Boolean(turn) };
  }

  function cap(s) { s = String(s); return s.charAt(0).toUpperCase() + s.slice(1); }

  // ---- rendering -----------------------------------------------------------

  function el(tag, cls, text) {
    const n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }

  let renderQueued = false;
  function scheduleRender() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(() => { renderQueued = false; render(); });
  }

  function fmtMs(ms) {
    if (!ms && ms !== 0) return "";
    return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
  }

  function userBubble(ev, p, extra = {}) {
    const li = el("li", "msg msg-user");
    li.dataset.testid = "message";
    li.dataset.role = "user";
    if (ev) li.dataset.seq = ev.seq;
    if (extra.queued) li.dataset.queued = "true";
    if (extra.guide) li.dataset.guide = "true";
    li.append(el("div", "bubble", p.text || ""));
    const notes = [];
    if (extra.queued) notes.push(["queued", "Queued"]);
    if (extra.guide) notes.push(["guide", "Guide for the running turn"]);
    if (p.requestedDelivery === "guide" && p.delivery === "queue") {
      notes.push(["downgraded", "(sent as queued: no turn was running)"]);
    }
    if (p.source && p.source !== "web") notes.push(["source", `via ${p.source}`]);
    if (notes.length) {
      const line = el("div", "msg-note");
      notes.forEach(([kind, text], i) => {
        if (i) line.append(document.createTextNode(" · "));
        const n = el("span", `note-${kind}`, text);
        n.dataset.testid = `note-${kind}`;
        line.append(n);
      });
      li.append(line);
    }
    return li;
  }

  function assistantBubble(text, ev, p) {
    const li = el("li", "msg msg-assistant");
    li.dataset.testid = "message";
    li.dataset.role = "assistant";
    if (ev) li.dataset.seq = ev.seq;
    li.append(withTables(el("div", "bubble"), text));
    // The memories this answer was given, so people see what was used.
    if (p && Array.isArray(p.memories) && p.memories.length) {
      const used = el("div", "memories-used", "Remembered: " + p.memories.map((m) => m.text).join(" · "));
      used.dataset.testid = "memories-used";
      li.append(used);
    }
    // The library passages it cites, as numbered footnotes that open the
    // passage (assistant.message.sources).
    if (p && Array.isArray(p.sources) && p.sources.length) {
      const notes = el("ol", "sources");
      notes.dataset.testid = "sources";
      p.sources.forEach((src) => {
        const item = el("li", "source");
        const b = el("button", "source-link", src.heading ? `${src.document} — ${src.heading}` : String(src.document || ""));
        b.type = "button";
        b.dataset.testid = "source";
        b.addEventListener("click", () => openSource(src));
        item.append(b);
        notes.append(item);
      });
      li.append(notes);
    }
    return li;
  }

  // openSource shows a cited passage in the source dialog: the document as
  // it is now (GET /v1/documents/{id}), the passage by its id. A document
  // changed or removed since the answer says so instead. Every text is set
  // with textContent: names, headings and passages are the uploader's.
  let sourceOpening = 0;
  async function openSource(src) {
    const d = ui.sourceDialog;
    const mine = ++sourceOpening; // a later click wins over a slow load
    ui.sourceTitle.textContent = src.title && src.title !== src.document ? `${src.title} (${src.document})` : String(src.document || "");
    ui.sourceHeading.textContent = src.heading || "";
    ui.sourceText.textContent = "Loading…";
    if (!d.open) d.showModal();
    let text = "";
    try {
      const doc = await api(`/v1/documents/${encodeURIComponent(src.documentId)}`);
      const found = (doc.passages || []).find((x) => x.id === src.passageId);
      text = found ? found.text : "This passage is no longer in the document: it has changed since the answer.";
    } catch (e) {
      text = e && e.status === 404 ? "This document is no longer in the library." : `The passage could not be loaded: ${e && e.message ? e.message : e}`;
    }
    if (mine === sourceOpening) ui.sourceText.textContent = text;
  }

  // withTables fills a bubble with text, Markdown tables ("| a | b |" rows
  // with a "| --- |" line under the head) shown as tables. Cells are set
  // with textContent, like every payload text.
  function withTables(bubble, text) {
    const lines = String(text).split("\n");
    const row = (l) => /^\s*\|.*\|\s*$/.test(l);
    const cells = (l) => l.trim().slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
    let plain = [];
    const flush = () => { if (plain.length) bubble.append(document.createTextNode(plain.join("\n"))); plain = []; };
    for (let i = 0; i < lines.length; i++) {
      if (row(lines[i]) && i + 1 < lines.length && /^\s*\|[\s:|-]+\|\s*$/.test(lines[i + 1])) {
        flush();
        const table = el("table", "md-table");
        table.dataset.testid = "answer-table";
        const head = el("tr");
        for (const c of cells(lines[i])) head.append(el("th", "", c));
        table.append(el("thead"), el("tbody"));
        table.tHead.append(head);
        i += 2;
        for (; i < lines.length && row(lines[i]); i++) {
          const tr = el("tr");
          for (const c of cells(lines[i])) tr.append(el("td", "", c));
          table.tBodies[0].append(tr);
        }
        i--;
        bubble.append(table);
        continue;
      }
      plain.push(lines[i]);
    }
    flush();
    return bubble;
  }

  // What is kept about the person: listed on opening, each removable.
  async function loadMemory() {
    const list = $("memory-list");
    let facts = [];
    try {
      facts = (await api("/v1/memory")).facts || [];
    } catch (e) {
      list.replaceChildren(el("li", "memory-empty", "Memory is not available."));
      return;
    }
    if (!facts.length) {
      list.replaceChildren(el("li", "memory-empty", "Nothing yet."));
      return;
    }
    list.replaceChildren(...facts.map((f) => {
      const li = el("li", "memory-item");
      li.dataset.testid = "memory-item";
      li.append(el("span", "", f.text));
      const del = el("button", "memory-forget", "Forget");
      del.dataset.testid = "memory-forget";
      del.addEventListener("click", async () => {
        del.disabled = true;
        try {
          await api(`/v1/memory/${encodeURIComponent(f.id)}`, { method: "DELETE" });
        } catch (e) {
          showBanner(`Could not forget it: ${e.message}`);
        }
        loadMemory();
      });
      li.append(del);
      return li;
    }));
  }
  $("memory").addEventListener("toggle", () => { if ($("memory").open) loadMemory(); });

  function errorBubble(part, retryable) {
    const li = el("li", "msg msg-assistant msg-error");
    li.dataset.testid = "message";
    li.dataset.role = "assistant";
    li.dataset.error = "true";
    if (part.ev) li.dataset.seq = part.ev.seq;
    const b = el("div", "bubble");
    const head = el("div", "error-text");
    // No model: what to do is said once, in the note at the top.
    const noModel = part.code === "model-not-configured" && state.info && !state.info.modelConfigured;
    head.append(el("span", "error-icon", "⚠️ "), document.createTextNode(noModel ? "No answer: no model is configured (see the note at the top)." : part.text));
    b.append(head);
    if (part.hint && !noModel) {
      const h = el("div", "error-hint", part.hint);
      h.dataset.testid = "error-hint";
      b.append(h);
    }
    if (part.code) b.append(el("div", "error-code", part.code));
    if (retryable) {
      const btn = el("button", "retry", "Retry");
      btn.type = "button";
      btn.dataset.testid = "retry";
      btn.addEventListener("click", async () => {
        btn.disabled = true;
        try {
          await api(`/v1/sessions/${encodeURIComponent(state.id)}/retry`, { method: "POST", body: { requestId: newRequestID() } });
        } catch (err) {
          btn.disabled = false;
          showBanner(`Could not retry: ${err.message}`);
        }
      });
      b.append(btn);
    }
    li.append(b);
    return li;
  }

  function workBlock(work, openSet) {
    const li = el("li", "work");
    li.dataset.testid = "tool-work";
    const d = el("details");
    const key = work.tools.map((t) => t.call && t.call.id).join(",");
    d.dataset.key = key;
    if (openSet.has(key)) d.open = true;
    const n = work.tools.length;
    const pending = work.tools.filter((t) => !t.result).length;
    const failed = work.tools.filter((t) => t.result && t.result.isError).length;
    const names = [...new Set(work.tools.map((t) => (t.call && t.call.name) || "tool"))].join(", ");
    let summary = `${pending ? "Running" : "Used"} ${names}`;
    if (n > 1) summary += ` (${n} calls)`;
    if (!pending && failed) summary += ` · ${failed} failed`;
    d.append(el("summary", "", summary));
    for (const t of work.tools) {
      const item = el("div", "tool");
      item.dataset.testid = "tool-call";
      if (t.result && t.result.isError) item.classList.add("tool-failed");
      const head = el("div", "tool-head");
      head.append(el("span", "tool-name", (t.call && t.call.name) || "tool"));
      if (t.result && t.result.durationMs !== undefined) head.append(el("span", "tool-time", fmtMs(t.result.durationMs)));
      item.append(head);
      const args = t.call && t.call.arguments;
      if (args !== undefined && args !== null && args !== "") {
        const s = typeof args === "string" ? args : JSON.stringify(args);
        if (s && s !== "{}") item.append(el("pre", "tool-args", s));
      }
      if (t.result) {
        const r = el("pre", "tool-result", t.result.content || (t.result.isError ? "(error)" : "(no output)"));
        r.dataset.testid = "tool-result";
        item.append(r);
      } else {
        item.append(el("div", "tool-pending", "running…"));
      }
      d.append(item);
    }
    li.append(d);
    return li;
  }

  // Reasons typed for a denial, by gate id: kept across re-renders.
  const reasonDrafts = new Map();

  // An approval card: the tool and the fields that decide its effect,
  // whole, as text with invisible characters escaped (card.js), with
  // Approve, a reason field and Deny (or the options of a clarifying
  // question) until someone decides; then who decided, where, and why.
  // The web chat decides as the operator. The first decision on any
  // surface wins.
  function gateCard(card) {
    const cards = window.GatehouseCards;
    const li = el("li", "gate-card");
    li.dataset.testid = "gate-card";
    li.dataset.gateId = card.gateId || "";
    li.dataset.role = "system";
    // A question and a stuck turn's incident are answered with their options.
    const asks = card.kind === "clarify" || card.kind === "incident";
    const title = card.kind === "incident" ? `🚨 ${card.question || "This turn is stuck."}`
      : card.kind === "clarify" ? (card.question || `A question about ${card.tool}`) : `Approve ${card.tool}?`;
    li.append(el("div", "gate-title", cards.visible(title)));
    if (!asks) {
      li.append(cards.render(cards.fieldsOf(card.fields, card.args)));
    }
    const d = card.decision;
    if (d) {
      li.dataset.decision = d.decision;
      const words = { approved: "Approved", denied: "Denied", expired: "Expired — nobody decided in time", answered: `Answered: ${d.answer || ""}` };
      if (card.kind === "incident") {
        // What was done about the stuck turn, not an answer to a question.
        Object.assign(words, { answered: d.answer === "Close" ? "Closed" : "Diagnosis asked for",
          expired: d.reason && d.reason !== "timeout" ? "Resolved: " + d.reason : "Nobody pressed in time" });
      }
      let text = words[d.decision] || cap(d.decision || "decided");
      const who = d.by === "local" ? "the operator" : (d.by || "someone");
      if (d.decision !== "expired") text += ` by ${who} via ${d.surface || "?"}`;
      if (d.reason && !(card.kind === "incident" && d.decision === "expired")) text += ` — ${d.reason}`;
      const out = el("div", "gate-outcome", cards.visible(text));
      out.dataset.testid = "gate-outcome";
      li.append(out);
      return li;
    }
    if (card.approvals && card.approvals.length) {
      // GATEHOUSE_APPROVERS_NEEDED: who approved so far.
      const last = card.approvals[card.approvals.length - 1];
      const who = card.approvals.map((a) => `${a.by === "local" ? "the operator" : (a.by || "someone")} (${a.surface || "?"})`).join(", ");
      const line = el("div", "gate-approvals", cards.visible(`☑️ ${last.count} of ${last.needed} approvals: ${who}`));
      line.dataset.testid = "gate-approvals";
      li.append(line);
    }
    const row = el("div", "gate-buttons");
    const press = async (decision, answer, reason) => {
      for (const b of row.querySelectorAll("button")) b.disabled = true;
      try {
        const res = await api(`/v1/gates/${encodeURIComponent(card.gateId)}/decision`, {
          method: "POST", headers: { "X-Gatehouse-Source": "web" },
          body: { decision, answer, reason: reason || undefined },
        });
        if (res && res.decision === "pending") {
          // Counted, short of the approvals the card needs: it waits on.
          showBanner("Your approval is counted; the card needs another person's before it runs.");
          for (const b of row.querySelectorAll("button")) b.disabled = false;
          return;
        }
        if (res && res.won === false) showBanner(`Already decided: ${res.decision} by ${res.by === "local" ? "the operator" : (res.by || "someone")} via ${res.surface || "?"}.`);
        if (res && res.won) reasonDrafts.delete(card.gateId);
      } catch (e) {
        showBanner(`The decision was not recorded: ${e.message}`);
        for (const b of row.querySelectorAll("button")) b.disabled = false;
      }
    };
    if (asks) {
      for (const o of card.options) {
        const b = el("button", "gate-option", cards.visible(o));
        b.dataset.testid = "gate-option";
        b.addEventListener("click", () => press("answer", o));
        row.append(b);
      }
    } else {
      const ok = el("button", "gate-approve", "Approve");
      ok.dataset.testid = "gate-approve";
      ok.addEventListener("click", () => press("approve"));
      const why = document.createElement("input");
      why.type = "text";
      why.className = "gate-reason";
      why.dataset.testid = "gate-reason";
      why.maxLength = 1000;
      why.placeholder = "Reason for denying (optional)";
      why.setAttribute("aria-label", "Reason for denying");
      why.value = reasonDrafts.get(card.gateId) || "";
      why.addEventListener("input", () => reasonDrafts.set(card.gateId, why.value));
      const no = el("button", "gate-deny", "Deny");
      no.dataset.testid = "gate-deny";
      no.addEventListener("click", () => press("deny", undefined, why.value.trim()));
      why.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); no.click(); } });
      row.append(ok, why, no);
    }
    li.append(row);
    return li;
  }

  function systemLine(text, cls, testid) {
    const li = el("li", `sys ${cls || ""}`.trim());
    li.dataset.testid = testid || "notice";
    li.dataset.role = "system";
    li.append(el("span", "", text));
    return li;
  }

  function runMeta(f) {
    const bits = [];
    if (f.status && f.status !== "done") bits.push(f.status);
    if (f.model) bits.push(f.model);
    if (f.thinking) bits.push(`thinking ${f.thinking}`);
    else if (f.note) bits.push(f.note.split(":")[0]); // "thinking high not applied"
    const tok = f.tokens ? (f.tokens.inputTokens || 0) + (f.tokens.outputTokens || 0) : 0;
    if (tok) bits.push(`${tok} tokens`);
    if (f.durationMs) bits.push(fmtMs(f.durationMs));
    if (!bits.length) bits.push(f.status || "done");
    const li = el("li", "meta", bits.join(" · "));
    if (f.note) li.title = f.note;
    li.dataset.testid = "run-meta";
    return li;
  }

  function render() {
    const openSet = new Set();
    for (const d of ui.conversation.querySelectorAll("details[open]")) openSet.add(d.dataset.key);
    const nearBottom = ui.scroller.scrollHeight - ui.scroller.scrollTop - ui.scroller.clientHeight < 80;

    const view = project(state.events);
    state.running = view.running || view.queue.length > 0;
    const frag = document.createDocumentFragment();

    for (const item of view.items) {
      if (item.type === "notice") { frag.append(systemLine(item.text)); continue; }
      if (item.type === "compaction") {
        const li = el("li", "sys compaction");
        li.dataset.testid = "compaction";
        li.dataset.role = "system";
        const d = el("details");
        d.append(el("summary", "", "Earlier messages were summarised"));
        d.append(el("div", "compaction-text", item.text));
        li.append(d);
        frag.append(li);
        continue;
      }
      for (const part of item.parts) {
        switch (part.type) {
          case "user": frag.append(userBubble(part.ev, part.p, { guide: part.guide })); break;
          case "assistant": frag.append(assistantBubble(part.text, part.ev, part.p)); break;
          case "error": frag.append(errorBubble(part, item.retryable)); break;
          case "work": frag.append(workBlock(part, openSet)); break;
          case "gate": frag.append(systemLine(part.text, "gate", "gate")); break;
          case "gatecard": frag.append(gateCard(part)); break;
          case "notice": frag.append(systemLine(part.text)); break;
          case "note": frag.append(systemLine(part.text, "note", "note")); break;
          default: break;
        }
      }
      if (item.finished) {
        const m = runMeta(item.finished);
        if (m) frag.append(m);
      }
    }

    // Streaming text of the running turn, keyed by generationId.
    for (const [gen, text] of state.partials) {
      if (!text) continue;
      const li = el("li", "msg msg-assistant msg-streaming");
      li.dataset.testid = "streaming";
      li.dataset.generationId = gen;
      li.append(el("div", "bubble", text));
      frag.append(li);
    }
    if (view.running && !state.partials.size) {
      const li = el("li", "typing");
      li.dataset.testid = "typing";
      li.setAttribute("aria-label", "The agent is working");
      li.append(el("span"), el("span"), el("span"));
      frag.append(li);
    }
    for (const u of view.queue) frag.append(userBubble(u.ev, u.p, { queued: true }));

    // Sent, not yet in the log.
    for (const o of state.outbox) {
      const li = el("li", "msg msg-user msg-pending");
      li.dataset.testid = "pending";
      li.dataset.role = "pending";
      li.append(el("div", "bubble", o.text));
      li.append(el("div", "msg-note", o.failed ? `Not sent: ${o.failed}` : "Sending…"));
      if (o.failed) li.classList.add("msg-failed");
      frag.append(li);
    }

    ui.conversation.replaceChildren(frag);
    ui.empty.hidden = Boolean(state.id) && (state.events.length > 0 || state.outbox.length > 0 || state.partials.size > 0);
    if (state.id && !state.events.length && !state.outbox.length) {
      ui.empty.firstElementChild.textContent = "Say something to start.";
    } else if (!state.id) {
      ui.empty.firstElementChild.textContent = "Start a new chat, or pick one from the list.";
    }
    ui.cancel.hidden = !(state.id && state.running);
    ui.delivery.hidden = !(state.id && state.running);
    if (ui.delivery.hidden) ui.delivery.value = "queue";
    if (nearBottom) ui.scroller.scrollTop = ui.scroller.scrollHeight;
  }

  // ---- chrome --------------------------------------------------------------

  function setConn(s) {
    ui.conn.dataset.state = s;
    ui.conn.textContent = { live: "live", connecting: "connecting…", offline: "offline", idle: "" }[s] || "";
  }

  function showBanner(text) {
    ui.banner.textContent = text;
    ui.banner.hidden = false;
  }
  function hideBanner() { ui.banner.hidden = true; ui.banner.textContent = ""; }

  function openSidebar() { document.body.classList.add("show-sidebar"); ui.scrim.hidden = false; }
  function closeSidebar() { document.body.classList.remove("show-sidebar"); ui.scrim.hidden = true; }

  function autosize() {
    ui.input.style.height = "auto";
    ui.input.style.height = `${Math.min(ui.input.scrollHeight, 200)}px`;
  }

  ui.tokenDialog.addEventListener("cancel", (ev) => ev.preventDefault()); // the token is needed
  ui.composer.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = ui.input.value;
    if (!state.id || !text.trim()) return;
    const delivery = state.running && ui.delivery.value === "guide" ? "guide" : "queue";
    ui.input.value = "";
    autosize();
    send(text, delivery);
  });
  ui.input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      ui.composer.requestSubmit();
    }
  });
  ui.input.addEventListener("input", autosize);
  ui.newChat.addEventListener("click", newChat);
  ui.menu.addEventListener("click", openSidebar);
  ui.scrim.addEventListener("click", closeSidebar);
  ui.sessions.addEventListener("click", (ev) => { if (ev.target.closest("a")) closeSidebar(); });
  ui.cancel.addEventListener("click", async () => {
    ui.cancel.disabled = true;
    try {
      await api(`/v1/sessions/${encodeURIComponent(state.id)}/cancel`, { method: "POST", body: {} });
    } catch (err) {
      showBanner(`Could not stop: ${err.message}`);
    } finally {
      ui.cancel.disabled = false;
    }
  });
  window.addEventListener("hashchange", () => {
    const id = sessionFromHash();
    if (id !== state.id) openSession(id);
  });
  setInterval(() => { if (!document.hidden) renderSessions(); }, 60000);

  // What is not configured is said once, here, each with what to do
  // (GET /v1/info "missing"). With no model the note offers the tour.
  async function loadInfo() {
    try {
      state.info = await api("/v1/info");
    } catch (e) { return; /* the banner already reports API errors */ }
    renderSetup();
    render();
  }

  const TOUR_TRIES = ["Email Sara that the report is ready.", "remember that I prefer short answers", "what do you remember?", "show me a table"];

  function renderSetup() {
    const note = $("model-hint");
    const info = state.info;
    const tour = isTour(state.id);
    $("tour-badge").hidden = !tour;
    const missing = info && Array.isArray(info.missing) ? info.missing : [];
    if (!info || (!missing.length && !tour)) { note.hidden = true; note.replaceChildren(); return; }
    const frag = document.createDocumentFragment();
    if (tour) {
      const t = el("p", "setup-line tour-note", "Tour: this chat runs the built-in tour (scripted:tour), not a model. Its answers are scripted, and its mails go to a local dev mailbox (see /admin), never out.");
      t.dataset.testid = "tour-note";
      frag.append(t);
      const tries = el("div", "setup-actions");
      for (const text of TOUR_TRIES) {
        const b = el("button", "btn btn-small", text);
        b.type = "button";
        b.dataset.testid = "tour-try";
        b.addEventListener("click", () => { ui.input.value = text; autosize(); ui.input.focus(); });
        tries.append(b);
      }
      frag.append(tries);
    }
    for (const m of missing) {
      if (tour && m.setting !== "GATEHOUSE_MODEL") continue; // the tour needs none of the rest
      const line = el("p", "setup-line");
      line.dataset.testid = "setup-missing";
      line.dataset.setting = m.setting || "";
      line.append(el("span", "setup-setting", m.setting || ""), document.createTextNode(m.message || ""));
      frag.append(line);
      if (m.setting === "GATEHOUSE_MODEL" && !tour) {
        const b = el("button", "btn btn-primary btn-small tour-try", "Try the tour");
        b.type = "button";
        b.dataset.testid = "try-tour";
        b.addEventListener("click", tryTour);
        const row = el("div", "setup-actions");
        row.append(b);
        frag.append(row);
      }
    }
    note.replaceChildren(frag);
    note.hidden = false;
  }

  // tryTour selects the tour for the open chat, or for a new one.
  async function tryTour() {
    if (!state.id) await newChat();
    const id = sessionFromHash() || state.id;
    if (!id) return;
    markTour(id);
    renderSetup();
    if (id === state.id) ui.input.focus();
  }

  loadInfo();
  loadSessions();
  openSession(sessionFromHash());
})();
