/* report.js -- the tracy-export HTML report: reads the aggregated trace
 * from the page's "trace-data" script element and draws the summary, the
 * timeline, the flame graph (d3-flame-graph), the function table, and,
 * when the trace has them, the line view and the rank heat map. */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("trace-data").textContent);
  var sortKey = "self", sortAsc = false, searchTerm = "";
  var chart = null;

  function $(id) { return document.getElementById(id); }
  function ms(ns) { return (ns / 1e6).toFixed(3); }
  function basename(p) { return (p || "").split("/").pop(); }
  function add(parent, tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = text;
    if (cls) e.className = cls;
    parent.appendChild(e);
    return e;
  }
  function funcLabel(f) {
    var fn = D.funcs[f];
    return fn[1] ? fn[0] + " (" + basename(fn[1]) + ":" + fn[2] + ")" : fn[0];
  }
  function threadLabel(s) {
    var t = D.threads[s], p = D.processes[t.p] || {};
    return (basename(p.program) || "process") + " " + p.pid + " / " + (t.name || "thread") +
      " " + t.tid;
  }
  function color(f) {
    var name = f < 0 ? "" : D.funcs[f][0], h = 0;
    for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return "hsl(" + (h % 360) + ",65%,55%)";
  }

  /* ---- Links to tracy-serve ---------------------------------------------- */

  /* Plain links, followed only when clicked: the report itself asks nothing
   * of the network. tracy-serve listens there by default and opens the
   * trace named by its absolute path (#t=PATH), finding a function
   * (&find=NAME), when it serves the trace's folder. */
  var SERVE = "http://127.0.0.1:8791/";

  function serveHref(find) {
    if (!D.trace_abs) return null;
    return SERVE + "#t=" + encodeURIComponent(D.trace_abs) +
      (find ? "&find=" + encodeURIComponent(find) : "");
  }

  function serveLink(parent, text, find, title) {
    var href = serveHref(find);
    if (!href) return null;
    var a = add(parent, "a", text, "serve");
    a.href = href;
    a.target = "_blank";
    a.rel = "noopener";
    a.title = title || "open in tracy-serve";
    return a;
  }

  function serveNote() {
    if (!D.trace_abs) return;
    var dir = D.trace_abs.slice(0, D.trace_abs.lastIndexOf("/")) || "/";
    var p = $("serve-note");
    p.hidden = false;
    add(p, "span", "Every zone of this trace, zoomable and live: ");
    serveLink(p, "open it in tracy-serve", null, "the timeline in tracy-serve");
    add(p, "span", " once it runs (its default address, 127.0.0.1:8791): ");
    add(p, "code", "tracy-serve " + dir);
    serveLink($("timeline-serve"), "open this timeline in tracy-serve (every zone, zoomable)", null);
  }

  /* ---- Selection -------------------------------------------------------- */

  function selected(s) {
    var v = $("filter").value;
    if (v === "all") return true;
    if (v.charAt(0) === "p") return D.threads[s].p === +v.slice(2);
    return s === +v.slice(2);
  }

  function fillFilter() {
    var sel = $("filter");
    add(sel, "option", "all threads (" + D.threads.length + ")").value = "all";
    if (D.processes.length > 1) {
      D.processes.forEach(function (p, i) {
        add(sel, "option", "process " + basename(p.program) + " " + p.pid).value = "p:" + i;
      });
    }
    D.threads.forEach(function (t, s) {
      add(sel, "option", "thread " + threadLabel(s)).value = "t:" + s;
    });
  }

  /* ---- Summary ---------------------------------------------------------- */

  function summary() {
    var programs = {};
    D.processes.forEach(function (p) { programs[p.args || p.program] = 1; });
    var span = D.last > D.first ? D.last - D.first : 0;
    var rows = [
      ["trace", D.trace + (D.complete ? "" : " (incomplete)")],
      ["recorded", D.created ? new Date(D.created / 1e6).toISOString() : "?"],
      ["programs", Object.keys(programs).join("; ")],
      ["processes", D.processes.map(function (p) {
        return basename(p.program) + " " + p.pid + (p.rank >= 0 ? " rank " + p.rank : "") +
          " on " + p.host + ": " + p.status + (p.reason ? " (" + p.reason + ")" : "");
      }).join("; ")],
      ["threads", String(D.threads.length)],
      ["time range", ms(span) + " ms"],
      ["zones", D.zones.toLocaleString("en-US")],
      ["signposts", String(D.signposts_total)],
      ["messages", String(D.messages)],
      ["lost events", String(D.lost)],
      ["rejected clients", String(D.rejected)]
    ];
    $("title").textContent = basename(D.trace) + " \u2014 tracy report";
    var table = add($("summary"), "table");
    rows.forEach(function (r) {
      var tr = add(table, "tr");
      add(tr, "td", r[0]);
      add(tr, "td", r[1]).className = r[0].replace(/ /g, "-");
    });
  }

  /* ---- Function table --------------------------------------------------- */

  function tableRows() {
    var by = {};
    D.table.forEach(function (r) {
      if (!selected(r[0])) return;
      var a = by[r[1]] || (by[r[1]] = { f: r[1], calls: 0, self: 0, total: 0 });
      a.calls += r[2]; a.self += r[3]; a.total += r[4];
    });
    var rows = Object.keys(by).map(function (k) { return by[k]; });
    var selfSum = rows.reduce(function (s, r) { return s + r.self; }, 0) || 1;
    rows.forEach(function (r) {
      var fn = D.funcs[r.f];
      r.name = fn[0];
      r.where = fn[1] ? fn[1] + ":" + fn[2] : "";
      r.kind = fn[3];
      r.mean = r.calls ? r.total / r.calls : 0;
      r.self_pct = 100 * r.self / selfSum;
    });
    rows.sort(function (a, b) {
      var x = a[sortKey], y = b[sortKey];
      var c = typeof x === "string" ? x.localeCompare(y) : x - y;
      if (c === 0) c = a.name.localeCompare(b.name);
      return sortAsc ? c : -c;
    });
    return rows;
  }

  function drawTable() {
    var body = $("functions").tBodies[0], rows = tableRows(), shown = Math.min(rows.length, 1000);
    body.textContent = "";
    for (var i = 0; i < shown; i++) {
      var r = rows[i], tr = add(body, "tr");
      add(tr, "td", r.name, "name");
      add(tr, "td", r.where, "where").title = r.where;
      add(tr, "td", r.kind);
      add(tr, "td", r.calls.toLocaleString("en-US"), "num");
      add(tr, "td", ms(r.self), "num");
      add(tr, "td", r.self_pct.toFixed(1), "num");
      add(tr, "td", ms(r.total), "num");
      add(tr, "td", (r.mean / 1e3).toFixed(3), "num");
      serveLink(add(tr, "td", null, "open"), "\u2197", r.name, "find " + r.name + " in tracy-serve");
      if (searchTerm && r.name.toLowerCase().indexOf(searchTerm) >= 0) tr.className = "match";
    }
    $("table-note").textContent = rows.length > shown
      ? "The " + shown + " first of " + rows.length + " functions." : rows.length + " functions.";
    Array.prototype.forEach.call(document.querySelectorAll("#functions th"), function (th) {
      th.className = (th.className.indexOf("num") >= 0 ? "num " : "") +
        (th.dataset.key === sortKey ? "sorted" + (sortAsc ? " asc" : "") : "");
    });
  }

  function onSort(ev) {
    var key = ev.target.dataset.key;
    if (!key) return;
    if (key === sortKey) sortAsc = !sortAsc;
    else { sortKey = key; sortAsc = key === "name" || key === "where" || key === "kind"; }
    drawTable();
  }

  /* ---- Flame graph ------------------------------------------------------ */

  function hierarchy() {
    var nodes = new Array(D.nodes.length), roots = [];
    D.nodes.forEach(function (n, i) {
      var s = n[0];
      if (!selected(s)) return;
      var o = n[2] < 0
        ? { name: threadLabel(s), value: 0, children: [] }
        : { name: D.funcs[n[2]][0], value: n[4], children: [], f: n[2], calls: n[3], self: n[5] };
      nodes[i] = o;
      if (n[1] < 0) roots.push(o);
      else if (nodes[n[1]]) nodes[n[1]].children.push(o);
    });
    roots.forEach(function (r) {
      r.value = r.children.reduce(function (s, c) { return s + c.value; }, 0);
    });
    roots = roots.filter(function (r) { return r.value > 0; });
    if (roots.length === 1) return roots[0];
    return {
      name: "all threads", value: roots.reduce(function (s, r) { return s + r.value; }, 0),
      children: roots
    };
  }

  function details(d) {
    if (!d) { $("details").textContent = ""; return; }
    var x = d.data;
    $("details").textContent = (x.f !== undefined ? funcLabel(x.f) : x.name) + ": " +
      ms(x.value) + " ms total" + (x.f !== undefined ? ", " + ms(x.self) + " ms self, " +
      x.calls + " calls" : "");
  }

  function drawFlame() {
    var data = hierarchy(), width = $("flame").clientWidth || 960;
    if (!chart) {
      chart = flamegraph.default().width(width).cellHeight(18).minFrameSize(1)
        .transitionDuration(300).sort(true).inverted(true).setDetailsHandler(details)
        .setLabelHandler(function (d) {
          var root = d; while (root.parent) root = root.parent;
          return d.data.name + " (" + ms(d.value) + " ms, " +
            (100 * d.value / (root.value || 1)).toFixed(1) + "%)";
        })
        .setSearchMatch(function (d, term) {
          var name = d.data.name || "";
          return !!term && name.toLowerCase().indexOf(term.toLowerCase()) >= 0;
        });
      d3.select("#flame").datum(data).call(chart);
    } else {
      chart.update(data);
    }
    if (searchTerm) chart.search(searchTerm);
  }

  /* ---- Timeline --------------------------------------------------------- */

  function drawTimeline() {
    var box = $("timeline"), T = D.timeline, span = T.t1 - T.t0, binNs = span / T.bins;
    box.textContent = "";
    var marks = add(box, "div");
    marks.id = "signposts";
    D.signposts.forEach(function (sp) {
      if (sp[1] >= 0 && !selected(sp[1])) return;
      var m = add(marks, "span", sp[2]);
      m.style.left = (100 * (sp[0] - T.t0) / span) + "%";
      m.title = sp[2] + (sp[3] ? ": " + sp[3] : "") + " at " + ms(sp[0] - T.t0) + " ms";
    });
    var lanes = {};
    T.lanes.forEach(function (l) { (lanes[l.s] = lanes[l.s] || [])[l.d] = l; });
    Object.keys(lanes).forEach(function (s) {
      if (!selected(+s)) return;
      var row = add(box, "div", null, "lane");
      add(row, "span", threadLabel(+s), "label").title = threadLabel(+s);
      var c = add(row, "canvas");
      c.width = T.bins;
      c.height = 2 * 12;
      var g = c.getContext("2d");
      lanes[s].forEach(function (l, d) {
        for (var i = 0; i < T.bins; i++) {
          if (!l.busy[i]) continue;
          g.globalAlpha = Math.max(0.25, Math.min(1, l.busy[i] / binNs));
          g.fillStyle = color(l.func[i]);
          g.fillRect(i, d * 12, 1, 11);
        }
      });
      c.addEventListener("mousemove", function (ev) {
        var i = Math.floor(ev.offsetX / c.clientWidth * T.bins);
        var l = lanes[s][ev.offsetY < c.clientHeight / 2 ? 0 : 1];
        var t = ms(T.t0 + i * binNs - D.first) + " ms: ";
        c.title = l && l.func[i] >= 0 ? t + funcLabel(l.func[i]) : t + "idle";
      });
      g.globalAlpha = 1;
      g.fillStyle = "#a33";
      D.signposts.forEach(function (sp) {
        if (sp[1] >= 0 && !selected(sp[1])) return;
        g.fillRect(Math.floor(T.bins * (sp[0] - T.t0) / span), 0, 1, 24);
      });
    });
  }

  /* ---- Line by line ------------------------------------------------------ */

  function heat(share) {  /* 0..1 -> white to orange */
    return "hsl(30,90%," + (100 - 45 * Math.max(0, Math.min(1, share))) + "%)";
  }

  function drawLines() {
    var f = D.lines[+$("line-func").value], body = document.querySelector("#lines tbody");
    body.textContent = "";
    $("line-note").textContent = f.file + ", " + f.func + " at line " + f.first + ": " +
      ms(f.total) + " ms" + (f.note ? " (" + f.note + ")" : "");
    f.rows.forEach(function (r) {
      var tr = add(body, "tr"), share = f.total ? r[2] / f.total : 0;
      add(tr, "td", r[0], "num");
      add(tr, "td", r[1] ? r[1] : "", "num");
      add(tr, "td", r[1] ? (r[2] / 1e3).toFixed(1) : "", "num");
      add(tr, "td", r[1] ? (r[2] / 1e3 / r[1]).toFixed(1) : "", "num");
      add(tr, "td", r[1] ? (100 * share).toFixed(1) : "", "num");
      add(tr, "td", r[3] === null ? "" : r[3], "src");
      if (r[1]) tr.style.background = heat(share);
    });
  }

  function setupLines() {
    if (!D.lines || !D.lines.length) return;
    $("lines-section").hidden = false;
    D.lines.forEach(function (f, i) {
      add($("line-func"), "option", f.func + " (" + basename(f.file) + ":" + f.first + "), " +
        ms(f.total) + " ms").value = i;
    });
    $("line-func").addEventListener("change", drawLines);
    drawLines();
  }

  /* ---- Balance across ranks ---------------------------------------------- */

  function setupRanks() {
    var R = D.ranks;
    if (!R || !R.rows.length) return;
    $("ranks-section").hidden = false;
    var head = add(document.querySelector("#ranks thead"), "tr");
    ["kind", "name"].concat(R.cols, ["imbalance"]).forEach(function (c, i) {
      add(head, "th", c, i > 1 ? "num" : "");
    });
    var body = document.querySelector("#ranks tbody");
    R.rows.forEach(function (r) {
      var tr = add(body, "tr"), max = Math.max.apply(null, r.v) || 1;
      add(tr, "td", r.kind);
      add(tr, "td", r.name);
      r.v.forEach(function (v, c) {
        var td = add(tr, "td", ms(v), "num" + (c === r.slowest ? " slowest" : ""));
        td.style.background = heat(v / max);
        td.title = R.cols[c] + ": " + ms(v) + " ms";
      });
      add(tr, "td", (100 * r.imbalance).toFixed(1) + "%", "num");
    });
  }

  /* ---- Wiring ----------------------------------------------------------- */

  function redraw() {
    drawTimeline();
    drawFlame();
    drawTable();
  }

  fillFilter();
  summary();
  serveNote();
  setupLines();
  setupRanks();
  $("filter").addEventListener("change", redraw);
  $("search").addEventListener("input", function (ev) {
    searchTerm = ev.target.value.trim().toLowerCase();
    if (searchTerm) chart.search(searchTerm); else chart.clear();
    drawTable();
  });
  $("reset").addEventListener("click", function () { chart.resetZoom(); });
  document.querySelector("#functions thead").addEventListener("click", onSort);
  redraw();
  document.body.setAttribute("data-ready", "1");
})();
