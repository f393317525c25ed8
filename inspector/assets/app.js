// loom inspector: re-render on every control change, follow workspace
// changes over Server-Sent Events, and drive the memory and cache-diff forms.
// Every fragment comes from the server as HTML; this script only fetches and
// swaps it.
(function () {
  "use strict";
  var view = document.getElementById("view");
  var form = document.getElementById("controls");
  var tab = "prompt";
  var closed = new Set();
  var seq = 0;
  var lastDiffPin = null;
  window.loomInspector = { renders: 0, lastRender: 0 };

  function query() {
    var p = new URLSearchParams();
    new FormData(form).forEach(function (v, k) {
      if (String(v).trim() !== "") p.set(k, v);
    });
    return p.toString();
  }

  function layout() {
    view.querySelectorAll("[data-pct]").forEach(function (el) {
      el.style.width = el.getAttribute("data-pct") + "%";
    });
    view.querySelectorAll(".panel").forEach(function (p) {
      p.hidden = p.getAttribute("data-panel") !== tab;
    });
    view.querySelectorAll("details.section").forEach(function (d) {
      if (closed.has(d.getAttribute("data-name"))) d.open = false;
    });
    window.loomInspector.renders++;
    window.loomInspector.lastRender = performance.now();
  }

  function refresh() {
    var q = query();
    var mine = ++seq;
    return fetch("view?" + q, { headers: { Accept: "text/html" } })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        // A newer refresh is under way, or the controls changed since
        // this one asked (the refresh for them follows): showing this
        // answer would put a view of other controls on the page.
        if (mine !== seq || q !== query()) return;
        view.innerHTML = html;
        history.replaceState(null, "", q ? "?" + q : location.pathname);
        layout();
        if (lastDiffPin !== null) compare(lastDiffPin);
      })
      .catch(function (e) { console.warn("refresh failed", e); });
  }

  var timer = null;
  function soon() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 15);
  }
  form.addEventListener("input", soon);
  form.addEventListener("change", soon);
  form.addEventListener("submit", function (e) { e.preventDefault(); refresh(); });

  document.querySelectorAll(".tabs button[data-tab]").forEach(function (b) {
    b.addEventListener("click", function () {
      tab = b.getAttribute("data-tab");
      document.querySelectorAll(".tabs button[data-tab]").forEach(function (o) {
        o.classList.toggle("active", o === b);
      });
      layout();
    });
  });

  // The page's form token: the server takes a form only with it, so no
  // other site's page can post one.
  var token = document.querySelector('meta[name="loom-form-token"]').content;

  function post(url, body) {
    return fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", "X-Loom-Form-Token": token },
      body: body,
    }).then(function (r) {
      if (!r.ok) return r.text().then(function (t) { throw new Error(t); });
      return r.json();
    });
  }

  function compare(id) {
    lastDiffPin = id;
    return fetch("diff?pin=" + encodeURIComponent(id) + "&" + query())
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var d = document.getElementById("diff");
        if (d) d.innerHTML = html;
      });
  }

  view.addEventListener("click", function (e) {
    var t = e.target;
    if (t.classList.contains("toggle-raw")) {
      var sec = t.closest("details");
      var raw = sec.querySelector(".raw"), md = sec.querySelector(".md");
      raw.hidden = !raw.hidden;
      md.hidden = !raw.hidden;
      t.textContent = raw.hidden ? "raw" : "rendered";
    } else if (t.classList.contains("forget")) {
      post("memories/" + encodeURIComponent(t.getAttribute("data-id")) + "/forget", "").then(refresh);
    } else if (t.id === "pin") {
      post("pin", query()).then(refresh);
    } else if (t.id === "compare") {
      var sel = document.getElementById("pins");
      if (sel && sel.value) compare(sel.value);
    }
  });
  view.addEventListener("toggle", function (e) {
    var d = e.target;
    if (d.matches && d.matches("details.section")) {
      var n = d.getAttribute("data-name");
      if (d.open) closed.delete(n); else closed.add(n);
    }
  }, true);
  view.addEventListener("submit", function (e) {
    if (e.target.id !== "add-memory") return;
    e.preventDefault();
    post("memories", new URLSearchParams(new FormData(e.target)).toString())
      .then(function () { e.target.reset(); return refresh(); })
      .catch(function (err) { console.warn("remember failed", err); });
  });

  var live = document.getElementById("live");
  if (window.EventSource) {
    var es = new EventSource("events");
    es.addEventListener("open", function () { live.classList.add("on"); });
    es.addEventListener("error", function () { live.classList.remove("on"); });
    es.addEventListener("change", refresh);
  }
  layout();
})();
