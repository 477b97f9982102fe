/* verifier-bench report: case list filtering and drill-down.
 * Case data comes from the JSON block #report-data. Every piece of it is put
 * on the page with textContent (never innerHTML), so markup in a question, a
 * tool result or a model reply is shown as text and never runs. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var records = data.records, cases = data.cases;
  var tbody = document.getElementById("case-rows");
  var countEl = document.getElementById("case-count");
  var ids = ["variant", "kind", "outcome", "tag", "scenario", "text"];
  var controls = {};
  ids.forEach(function (id) { controls[id] = document.getElementById("f-" + id); });
  var rows = [];
  var open = null;

  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (k === "class") { node.className = attrs[k]; } else { node.setAttribute(k, attrs[k]); }
      });
    }
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) { continue; }
      node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  function list(values) { return (values || []).join(", "); }
  function caseOf(r) { return cases[r.run + "::" + r.case] || null; }
  function clipped(c) {
    if (!c || c.text === null || c.text === undefined) { return el("p", { "class": "note" }, "none"); }
    var pre = el("pre", null, c.text);
    if (c.more) { pre.appendChild(document.createTextNode("\n… " + c.more + " more characters in the run folder")); }
    return pre;
  }
  function badge(text, cls) { return el("span", { "class": "badge " + cls }, text); }

  function haystack(r) {
    if (r._hay === undefined) {
      var c = caseOf(r) || {};
      r._hay = [r.case, r.title, r.variant, c.question, list(r.tags), list(r.spec), r.raw_reply && r.raw_reply.text]
        .join("\n").toLowerCase();
    }
    return r._hay;
  }

  function buildRows() {
    var frag = document.createDocumentFragment();
    records.forEach(function (r) {
      var tr = el("tr", { "class": "row", tabindex: "0", "data-i": String(r.i) },
        el("td", { "class": "mono" }, r.case),
        el("td", { "class": "wrap" }, r.variant),
        el("td", { "class": "n" }, r.epoch),
        el("td", null, r.kind),
        el("td", null, badge(r.ok ? "right" : "wrong", r.ok ? "right" : "wrong"), " ",
          r.cat === "right" ? null : el("span", { "class": "note" }, r.cat)),
        el("td", null, r.verdict || "—"),
        el("td", null, list(r.gold_verdict)),
        el("td", { "class": "wrap" }, r.title || ""));
      tr.addEventListener("click", function () { toggle(r, tr); });
      tr.addEventListener("keydown", function (ev) { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); toggle(r, tr); } });
      rows.push({ r: r, tr: tr });
      frag.appendChild(tr);
    });
    tbody.appendChild(frag);
  }

  function matches(r, f) {
    if (f.variant && r.variant !== f.variant) { return false; }
    if (f.kind && r.kind !== f.kind) { return false; }
    if (f.outcome === "right" && !r.ok) { return false; }
    if (f.outcome === "wrong" && r.ok) { return false; }
    if (f.tag && r.tags.indexOf(f.tag) < 0) { return false; }
    if (f.scenario && r.spec.indexOf(f.scenario) < 0) { return false; }
    if (f.text && haystack(r).indexOf(f.text) < 0) { return false; }
    return true;
  }

  function current() {
    var f = {};
    ids.forEach(function (id) { f[id] = controls[id].value; });
    f.text = f.text.trim().toLowerCase();
    return f;
  }

  function apply() {
    var f = current(), shown = 0;
    if (open) { close(); }
    rows.forEach(function (row) {
      var ok = matches(row.r, f);
      row.tr.hidden = !ok;
      if (ok) { shown++; }
    });
    countEl.textContent = String(shown);
    countEl.setAttribute("data-text", f.text);  /* which search the count belongs to (typing is debounced) */
  }

  function close() {
    if (!open) { return; }
    open.detail.remove();
    open.tr.classList.remove("open");
    open = null;
  }

  function toggle(r, tr) {
    var same = open && open.tr === tr;
    close();
    if (same) { return; }
    var detail = el("tr", { "class": "detail" }, el("td", { colspan: "8" }, drill(r)));
    tr.after(detail);
    tr.classList.add("open");
    open = { tr: tr, detail: detail };
  }

  function kv(pairs) {
    var box = el("div", { "class": "kv" });
    pairs.forEach(function (p) { box.appendChild(el("span", { "class": "k" }, p[0])); box.appendChild(el("span", null, p[1])); });
    return box;
  }

  function table(head, body) {
    var t = el("table", null, el("thead", null, el("tr", null)));
    head.forEach(function (h) { t.tHead.rows[0].appendChild(el("th", null, h)); });
    var tb = el("tbody");
    body.forEach(function (cells) {
      var tr = el("tr");
      cells.forEach(function (c) { tr.appendChild(el("td", null, c)); });
      tb.appendChild(tr);
    });
    t.appendChild(tb);
    return t;
  }

  function drill(r) {
    var c = caseOf(r) || { tools: [], claims: {} };
    var box = el("div", { "class": "drill" });
    if (r.why.length) {
      box.appendChild(el("h4", null, r.ok ? "What differed (the verdict was right)" : "Why it failed"));
      var ul = el("ul", { "class": "why" });
      r.why.forEach(function (w) { ul.appendChild(el("li", null, w)); });
      box.appendChild(ul);
    }
    box.appendChild(el("h4", null, "Outcome"));
    box.appendChild(kv([
      ["case", r.case + (c.title ? " — " + c.title : "")],
      ["variant · epoch · kind", r.variant + " · " + r.epoch + " · " + r.kind + " · " + r.dataset],
      ["effective verdict", (r.verdict || "none") + "   (gold: " + list(r.gold_verdict) + ")"],
      ["model verdict", (r.model_verdict || "none") + (r.gold_model_verdict ? "   (gold: " + list(r.gold_model_verdict) + ")" : "")],
      ["derived from claims", r.derived_verdict || "—"],
      ["parse status", (r.parse_status || "—") + "   (expected " + r.gold_parse_status + ")"],
      ["reply", (r.reply_status || "—") + (r.invalid_reason ? " (" + r.invalid_reason + ")" : "")],
      ["groundedness score", r.groundedness === null || r.groundedness === undefined ? "—" : String(r.groundedness)],
      ["latency · tokens", Math.round(r.latency_ms || 0) + " ms · " + (r.tokens || 0) + " tokens" + (r.replayed ? " (result replayed)" : r.cached ? " (cached)" : "")],
      ["tags", list(r.tags)],
      ["scenarios", list(r.spec)]
    ]));
    if (r.error) { box.appendChild(el("h4", null, "Error")); box.appendChild(el("pre", null, r.error)); }
    box.appendChild(el("h4", null, "Question"));
    box.appendChild(el("pre", null, c.question || "(case content not in the run folder)"));
    box.appendChild(el("h4", null, "Tool evidence"));
    var truncated = {};
    r.trace.forEach(function (t) { if (t.truncated) { truncated[t.tool] = true; } });
    if (c.tools.length) {
      box.appendChild(table(["invocation", "tool", "status", "arguments", "result"], c.tools.map(function (t) {
        return [t.id, t.tool + (truncated[t.tool] ? " (excerpt cut in the trace)" : ""), t.status, el("code", null, t.args), clipped(t.result)];
      })));
    } else { box.appendChild(el("p", { "class": "note" }, "no tool invocation")); }
    box.appendChild(el("h4", null, "Claims: gold and predicted class"));
    box.appendChild(table(["claim", "statement", "critical", "gold", "predicted", "", "bindings", "check detail"], r.claims.map(function (cl) {
      var info = c.claims[cl.id] || {};
      var mark = cl.ok === null ? badge("not labelled", "none") : badge(cl.ok ? "right" : "wrong", cl.ok ? "right" : "wrong");
      return [cl.id, info.statement || "", cl.critical ? "yes" : "no", cl.gold ? list(cl.gold) : "—", cl.pred || "(no check)", mark,
        list(info.bindings), (cl.detail || "") + (cl.refs.length ? "  [" + list(cl.refs) + "]" : "")];
    })));
    box.appendChild(el("h4", null, "Gatekeeper result"));
    var gk = r.gatekeeper, gold = r.gold_gatekeeper || {};
    box.appendChild(kv([
      ["status", (gk.status || "—") + "   (expected " + (gold.status || "?") + ")"],
      ["failed rules", list(gk.failed_rules) || "none"],
      ["expected failed rules", list(gold.failed_rules) || "none"]
    ]));
    var issues = gk.errors.map(function (e) { return ["error", e.rule, e.claim_id || "", e.message || ""]; })
      .concat(gk.warnings.map(function (w) { return ["warning", w.rule, w.claim_id || "", w.message || ""]; }));
    if (issues.length) { box.appendChild(table(["", "rule", "claim", "message"], issues)); }
    box.appendChild(el("h4", null, "Policy adjustments"));
    if (r.adjustments.length) {
      box.appendChild(table(["step", "claim", "verdict", "reason"], r.adjustments.map(function (a) {
        return [a.step, a.claim_id || "", a.from_verdict ? a.from_verdict + " → " + a.to_verdict : "", a.reason];
      })));
    } else { box.appendChild(el("p", { "class": "note" }, "none: the policy changed nothing")); }
    box.appendChild(el("h4", null, "Model's raw reply"));
    box.appendChild(clipped(r.raw_reply));
    if (r.rationale) { box.appendChild(el("h4", null, "Rationale (as persisted)")); box.appendChild(el("pre", null, r.rationale)); }
    box.appendChild(el("h4", null, "Executor answer and structured output"));
    box.appendChild(clipped(c.final_answer));
    box.appendChild(clipped(c.structured));
    return box;
  }

  function setFilter(name, value) {
    ids.forEach(function (id) { controls[id].value = ""; });
    if (controls[name]) { controls[name].value = value; }
    apply();
  }

  function fromHash() {
    var h = location.hash, q = h.indexOf("?");
    if (h.indexOf("#cases") !== 0 || q < 0) { return; }
    new URLSearchParams(h.slice(q + 1)).forEach(function (value, key) {
      if (controls[key]) { controls[key].value = value; }
    });
    apply();
  }

  buildRows();
  var typing = null;
  ids.forEach(function (id) {
    if (id === "text") {
      controls[id].addEventListener("input", function () { clearTimeout(typing); typing = setTimeout(apply, 120); });
    } else {
      controls[id].addEventListener("change", apply);
    }
  });
  document.getElementById("f-reset").addEventListener("click", function () { setFilter("", ""); });
  document.querySelectorAll("a[data-filter]").forEach(function (a) {
    a.addEventListener("click", function () { setFilter(a.getAttribute("data-filter"), a.getAttribute("data-value")); });
  });
  var differs = document.getElementById("matrix-differs");
  if (differs) {
    differs.addEventListener("change", function () {
      var shown = 0;
      document.querySelectorAll("#matrix-table tbody tr").forEach(function (tr) {
        tr.hidden = differs.checked && tr.getAttribute("data-differs") !== "1";
        if (!tr.hidden) { shown += 1; }
      });
      document.getElementById("matrix-count").textContent = String(shown);
    });
  }
  window.addEventListener("hashchange", fromHash);
  apply();
  fromHash();
  document.body.setAttribute("data-ready", "1");
})();
