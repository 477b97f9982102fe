// Keys for the labelling page: 1-6 label the current claim, j/k move, n next, s skip. No inline script (CSP).
(function () {
  "use strict";
  function claims() { return Array.prototype.slice.call(document.querySelectorAll("section.claim")); }
  function current() { return document.querySelector("section.claim.current") || claims()[0]; }
  function focus(el) {
    claims().forEach(function (c) { c.classList.remove("current"); });
    if (el) { el.classList.add("current"); el.scrollIntoView({block: "nearest"}); }
  }
  function go(id) { var a = document.getElementById(id); if (a) { window.location.href = a.getAttribute("href"); } }
  document.addEventListener("click", function (ev) {
    var sec = ev.target.closest ? ev.target.closest("section.claim") : null;
    if (sec) { focus(sec); }
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    var tag = (ev.target && ev.target.tagName) || "";
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") { return; }
    var all = claims(), cur = current(), at = all.indexOf(cur);
    if (ev.key >= "1" && ev.key <= "6" && cur) {
      var button = cur.querySelector('button[data-key="' + ev.key + '"]');
      if (button) { ev.preventDefault(); button.click(); }
    } else if (ev.key === "j" && at + 1 < all.length) { focus(all[at + 1]); }
    else if (ev.key === "k" && at > 0) { focus(all[at - 1]); }
    else if (ev.key === "n") { go("next"); }
    else if (ev.key === "s") { go("skip"); }
  });
  var cur = document.querySelector("section.claim.current");
  if (cur) { cur.scrollIntoView({block: "nearest"}); }
})();
