// The labelling app's keys and answer queue (no inline script: the CSP forbids it).
// A key is resolved to its claim when it is pressed, shown at once, and queued; the queue sends one answer at a
// time to /api/answer with its case, claim and a request id, and keeps it until the server says it is on disk,
// retrying while the server is away (a restart), so keys typed ahead land in order on the claims they were meant
// for and none is written twice. After a session's last open claim the next open session is loaded into this
// page once the queue is empty; keys typed meanwhile wait for it.
(function () {
  "use strict";
  var state = {queue: [], sending: false, pending: [], undo: [], loading: false, wait: 200, after: null};

  function main() { return document.getElementById("page"); }
  function one(sel, root) { return (root || document).querySelector(sel); }
  function all(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }
  function kind() { return main().dataset.page || ""; }
  function claims() { return all("section.claim", main()); }
  function current() { return one("section.claim.current", main()); }
  function rows() { return all("tr.row", main()); }

  // how many answers and keys are not yet on disk or placed (0: all saved), for a person and for the tests
  function signal() {
    document.body.dataset.unsaved = String(state.queue.length + state.pending.length + (state.loading ? 1 : 0));
  }

  function status(text) {
    var box = document.getElementById("status");
    if (!box) { return; }
    box.hidden = !text;
    box.textContent = text || "";
  }

  function focus(el, list) {
    (list || claims()).forEach(function (c) { c.classList.remove("current"); });
    if (el) { el.classList.add("current"); el.scrollIntoView({block: "nearest"}); }
  }

  function requestId() {
    var bytes = new Uint8Array(12);
    window.crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
  }

  // --- a claim's answer, as the page shows it -------------------------------------------------

  function stateOf(sec) {
    var area = one("textarea[name=comment]", sec);
    return {label: sec.dataset.label || null, unsure: sec.dataset.unsure === "1", comment: area ? area.value : ""};
  }

  function show(sec, s) {
    sec.dataset.label = s.label || "";
    sec.dataset.unsure = s.unsure ? "1" : "";
    sec.classList.toggle("labelled", !!s.label);
    sec.classList.toggle("unsure", !!s.unsure);
    all("form.classes button", sec).forEach(function (b) { b.classList.toggle("chosen", b.value === s.label); });
    var value = one(".label-value", sec);
    if (value) { value.textContent = s.label || "\u2014"; }
    var mark = one(".unsure-mark", sec);
    if (mark) { mark.hidden = !s.unsure; }
    var box = one("input[name=unsure]", sec);
    if (box) { box.checked = !!s.unsure; }
    var area = one("textarea[name=comment]", sec);
    if (area && area.value !== s.comment) { area.value = s.comment; }
    var done = claims().filter(function (c) { return !!c.dataset.label; }).length;
    var count = document.getElementById("case-done");
    if (count) { count.textContent = String(done); }
    var finished = document.getElementById("case-finished");
    if (finished) { finished.hidden = done < claims().length; }
  }

  function send(caseId, claimId, s) {
    state.queue.push({case_id: caseId, claim_id: claimId, label: s.label, unsure: s.unsure, comment: s.comment,
                      annotator: main().dataset.annotator, request: requestId()});
    pump();
  }

  // answer one claim of this page: shown now, remembered for undo, queued for the server
  function answer(sec, change, remember) {
    var before = stateOf(sec), after = Object.assign({}, before, change);
    if (remember !== false) { state.undo.push({caseId: main().dataset.case, claimId: sec.dataset.claim, before: before}); }
    show(sec, after);
    send(main().dataset.case, sec.dataset.claim, after);
  }

  function nextOpen(sec) {
    var list = claims(), at = list.indexOf(sec);
    for (var i = at + 1; i < list.length; i++) { if (!list[i].dataset.label) { return list[i]; } }
    return null;
  }

  // after an answer: the next open claim; after the session's last open one, the next open session. Relabelling
  // in a session already done goes to the claim below and stays (a further key goes on to the next session).
  function labelClaim(sec, value) {
    var wasOpen = claims().some(function (c) { return !c.dataset.label; });
    answer(sec, {label: value});
    var next = nextOpen(sec) || (claims().filter(function (c) { return !c.dataset.label; })[0] || null);
    if (next || !wasOpen) {
      var list = claims();
      focus(next || list[list.indexOf(sec) + 1] || null);
      return;
    }
    focus(null);
    advance();
  }

  function labelKey(value) {
    var cur = current();
    if (state.loading || !cur) {
      if (main().dataset.following || state.loading) {
        state.pending.push(value);
        advance();
        signal();
      } else {
        status("every claim of this session is labelled and no open session is left; j/k choose a claim to relabel");
      }
      return;
    }
    labelClaim(cur, value);
  }

  // --- the queue ---------------------------------------------------------------------------

  function whenDrained(fn) {
    state.after = fn;
    pump();
  }

  function pump() {
    signal();
    if (state.sending) { return; }
    if (!state.queue.length) {
      var after = state.after;
      state.after = null;
      if (after) { after(); }
      return;
    }
    state.sending = true;
    var item = state.queue[0];
    window.fetch("/api/answer", {
      method: "POST", credentials: "same-origin", cache: "no-store",
      headers: {"Content-Type": "application/json", "X-Label-Token": main().dataset.token},
      body: JSON.stringify(item)
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (data) {
        if (response.ok) {
          state.queue.shift();
          state.wait = 200;
          status(state.queue.length ? state.queue.length + " answer(s) being saved" : "");
          state.sending = false;
          pump();
        } else if (response.status === 403 && data.reload) {
          refreshToken();
        } else if (response.status >= 500) {
          retry("the server failed (" + response.status + (data.error ? ": " + data.error : "") + ")");
        } else {
          state.queue.shift();
          status("not saved: " + (data.error || response.status) + "; reload the page");
          state.sending = false;
          pump();
        }
      });
    }).catch(function () { retry("the server does not answer"); });
  }

  function retry(why) {
    status(why + "; " + state.queue.length + " answer(s) kept in this page, retrying\u2026");
    window.setTimeout(function () { state.sending = false; pump(); }, state.wait);
    state.wait = Math.min(state.wait * 2, 2000);
  }

  // a page from before the folder's token changed: take the current token from a fresh copy of the page
  function refreshToken() {
    window.fetch(window.location.pathname, {credentials: "same-origin", cache: "no-store"})
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var fresh = new window.DOMParser().parseFromString(html, "text/html").getElementById("page");
        if (fresh && fresh.dataset.token) { main().dataset.token = fresh.dataset.token; }
        state.sending = false;
        pump();
      })
      .catch(function () { retry("the server does not answer"); });
  }

  window.addEventListener("beforeunload", function (ev) {
    if (state.queue.length) { ev.preventDefault(); ev.returnValue = ""; }
  });

  // --- moving between sessions without losing the queue ---------------------------------------

  function advance() {
    var url = main().dataset.following;
    if (state.loading || !url) { return; }
    state.loading = true;
    whenDrained(function () { load(url, null); });
  }

  function load(url, claimId) {
    state.loading = true;
    status("loading the next session\u2026");
    window.fetch(url, {credentials: "same-origin", cache: "no-store"})
      .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.text(); })
      .then(function (html) {
        var doc = new window.DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("page");
        if (!fresh) { throw new Error("no page"); }
        main().replaceWith(document.adoptNode(fresh));
        var nav = one("header.top nav.moves"), freshNav = one("header.top nav.moves", doc);
        if (nav) { nav.remove(); }
        if (freshNav) { one("header.top").appendChild(document.adoptNode(freshNav)); }
        document.title = doc.title;
        window.history.pushState(null, "", url);
        state.loading = false;
        if (claimId) { focus(document.getElementById("claim-" + claimId)); }
        var cur = current();
        if (cur) { cur.scrollIntoView({block: "nearest"}); } else { window.scrollTo(0, 0); }
        status("");
        var keys = state.pending;
        state.pending = [];
        keys.forEach(labelKey);
        signal();
      })
      .catch(function () {
        window.setTimeout(function () { load(url, claimId); }, state.wait);
        state.wait = Math.min(state.wait * 2, 2000);
        status("the server does not answer; retrying\u2026");
      });
  }

  function go(id) {
    var a = document.getElementById(id);
    if (!a) { return; }
    if (kind() === "case") { whenDrained(function () { load(a.getAttribute("href"), null); }); }
    else { window.location.href = a.getAttribute("href"); }
  }

  function undo() {
    var last = state.undo.pop();
    if (!last) { status("nothing to undo"); return; }
    if (last.caseId === main().dataset.case) {
      var sec = document.getElementById("claim-" + last.claimId);
      answer(sec, last.before, false);
      focus(sec);
    } else {
      send(last.caseId, last.claimId, last.before);
      whenDrained(function () { load("/case/" + encodeURIComponent(last.caseId), last.claimId); });
    }
  }

  // --- keys and clicks ---------------------------------------------------------------------

  function toggleHelp(open) {
    var help = document.getElementById("help");
    help.hidden = open === undefined ? !help.hidden : !open;
  }

  document.addEventListener("click", function (ev) {
    var target = ev.target;
    if (target.closest && target.closest("#help-button")) { toggleHelp(); return; }
    if (target.id === "help") { toggleHelp(false); return; }
    var sec = target.closest ? target.closest("section.claim") : null;
    if (sec) { focus(sec); }
    var row = target.closest ? target.closest("tr.row") : null;
    if (row) { focus(row, rows()); }
  });

  document.addEventListener("submit", function (ev) {
    if (kind() !== "case") { return; }  // adjudication and sign-in post as forms
    var form = ev.target, sec = form.closest("section.claim");
    if (!sec) { return; }
    ev.preventDefault();
    if (form.classList.contains("classes") && ev.submitter) { focus(sec); labelClaim(sec, ev.submitter.value); }
    else if (form.classList.contains("note-form")) {
      answer(sec, {unsure: one("input[name=unsure]", form).checked, comment: one("textarea", form).value});
    }
  });

  document.addEventListener("change", function (ev) {
    var box = ev.target;
    if (kind() === "case" && box.name === "unsure") { answer(box.closest("section.claim"), {unsure: box.checked}); }
  });

  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    var target = ev.target, tag = (target && target.tagName) || "";
    if (tag === "TEXTAREA" && target.name === "comment") {
      if (ev.key === "Enter" && !ev.shiftKey) {
        ev.preventDefault();
        answer(target.closest("section.claim"), {comment: target.value});
        target.blur();
      } else if (ev.key === "Escape") { target.blur(); }
      return;
    }
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") { return; }
    var help = document.getElementById("help");
    if (ev.key === "?") { ev.preventDefault(); toggleHelp(); return; }
    if (ev.key === "Escape") { toggleHelp(false); return; }
    if (help && !help.hidden) { return; }
    var page = kind();
    if (page === "index") { listKey(ev); }
    else if (page === "case") { caseKey(ev); }
    else if (page === "adjudicate") { adjudicateKey(ev); }
  });

  function move(list, by) {
    var cur = list.filter(function (x) { return x.classList.contains("current"); })[0];
    var at = list.indexOf(cur) + by;
    if (at >= 0 && at < list.length) { focus(list[at], list); }
  }

  function listKey(ev) {
    var cur = one("tr.row.current", main());
    if (ev.key === "j") { move(rows(), 1); }
    else if (ev.key === "k") { move(rows(), -1); }
    else if (ev.key === "Enter" && cur) { window.location.href = cur.dataset.href; }
    else if (ev.key === "s" || ev.key === "n") { go("start"); }
  }

  function caseKey(ev) {
    var cur = current(), key = ev.key;
    if (key >= "1" && key <= "6") {
      var button = one('button[data-key="' + key + '"]', main());
      if (button) { ev.preventDefault(); labelKey(button.value); }
    } else if (key === "j") { move(claims(), 1); }
    else if (key === "k") { move(claims(), -1); if (!current() && claims().length) { focus(claims()[claims().length - 1]); } }
    else if (key === "u" && cur) { answer(cur, {unsure: !stateOf(cur).unsure}); }
    else if (key === "c" && cur) { ev.preventDefault(); one("textarea[name=comment]", cur).focus(); }
    else if (key === "z") { undo(); }
    else if (key === "n") { go("next"); }
    else if (key === "p") { go("prev"); }
    else if (key === "s") { go("skip"); }
    else if (key === "t") { var tools = document.getElementById("tools"); if (tools) { tools.open = !tools.open; } }
  }

  function adjudicateKey(ev) {
    var cur = current(), key = ev.key;
    if (key >= "1" && key <= "6" && cur) {
      var button = one('button[data-key="' + key + '"]', cur);
      if (button) { ev.preventDefault(); button.click(); }
    } else if (key === "j") { move(claims(), 1); }
    else if (key === "k") { move(claims(), -1); }
  }

  var first = current();
  if (first) { first.scrollIntoView({block: "nearest"}); }
  signal();
})();
