// Gatehouse approval cards: the fields a card shows, for the web chat and
// the admin page alike. Values are set as text (never as HTML), with the
// characters a reader cannot see written as escapes — the same rule as
// the chat platforms' cards (package cards, Visible).
(function () {
  "use strict";

  // Control and format characters (bidi overrides and isolates, zero-width
  // characters, the byte order mark…), the other default-ignorables,
  // line and paragraph separators, and lone surrogates. A line break and
  // a tab are kept.
  const HIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/gu;

  function visible(s) {
    return String(s == null ? "" : s).replace(HIDDEN, (c) => {
      if (c === "\n" || c === "\t") return c;
      const hex = c.codePointAt(0).toString(16).toUpperCase();
      return hex.length > 4 ? "\\U" + hex.padStart(8, "0") : "\\u" + hex.padStart(4, "0");
    });
  }

  // fieldsOf is what a card shows: the fields committed with the gate, or,
  // for a gate opened before cards had fields, each argument whole.
  function fieldsOf(fields, args) {
    if (Array.isArray(fields) && fields.length) return fields;
    if (args && typeof args === "object" && !Array.isArray(args)) {
      return Object.keys(args).sort().map((k) => ({
        label: k, value: typeof args[k] === "string" ? args[k] : JSON.stringify(args[k]),
      }));
    }
    return args == null ? [] : [{ label: "arguments", value: JSON.stringify(args) }];
  }

  // render builds the fields as a list: each label, and its value whole;
  // free text and values of several lines as a block.
  function render(fields) {
    const dl = document.createElement("dl");
    dl.className = "gate-fields";
    dl.dataset.testid = "gate-fields";
    for (const f of fields) {
      const dt = document.createElement("dt");
      dt.textContent = visible(f.label);
      const value = visible(f.value);
      const dd = document.createElement("dd");
      dd.dataset.testid = "gate-field";
      dd.dataset.label = String(f.label == null ? "" : f.label);
      if (f.freeText || value.includes("\n")) dd.className = "block";
      dd.textContent = value === "" ? "(empty)" : value;
      dl.append(dt, dd);
    }
    return dl;
  }

  window.GatehouseCards = { visible, fieldsOf, render };
})();
