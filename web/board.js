/* board.js: the Khreibaga board (5x5 points, the Alquerque lines of R1) drawn
   as SVG, and what /play and /viewer share: parsing positions and actions,
   finding the hops and captured pieces of a turn, the move list, the JSON
   calls. Our own code, nothing fetched from elsewhere. Texts from the server
   go in with textContent. */
"use strict";
var KZ = (function () {
  var NS = "http://www.w3.org/2000/svg";
  var N = 5, GAP = 80, M = 40, SIZE = 2 * M + (N - 1) * GAP;

  function el(tag, attrs, text) {
    var e = tag.indexOf("svg:") === 0 ? document.createElementNS(NS, tag.slice(4))
                                      : document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = String(text);
    return e;
  }

  /* "bbbb... b 17" -> {board: "bbbb...", side: "b", chain: 17 or -1} (R20). */
  function parsePosition(p) {
    var parts = p.split(" ");
    return {board: parts[0], side: parts[1], chain: parts.length > 2 ? +parts[2] : -1};
  }
  /* "7x17" -> {from: 7, to: 17, capture: true} (R21). */
  function parseAction(a) {
    var m = /^(\d+)[-x](\d+)$/.exec(a);
    return m ? {from: +m[1], to: +m[2], capture: a.indexOf("x") >= 0} : null;
  }
  /* The hops of the turn that move k belongs to: indices into moves. */
  function turnOf(moves, k) {
    var lo = k, hi = k;
    while (lo > 0 && moves[lo - 1].mover === moves[k].mover && moves[lo - 1].ply === moves[k].ply) lo--;
    while (hi + 1 < moves.length && moves[hi + 1].mover === moves[k].mover && moves[hi + 1].ply === moves[k].ply) hi++;
    return {lo: lo, hi: hi};
  }
  /* The marks of the turn that moves[lo..k] played: the path of the moving
     piece and the points of the pieces it took (occupied before a hop, empty
     after it, and not the piece's own start). */
  function turnMarks(moves, positions, lo, k) {
    var path = [], captured = [];
    for (var j = lo; j <= k; j++) {
      var a = parseAction(moves[j].action);
      if (!a) continue;
      if (!path.length) path.push(a.from);
      path.push(a.to);
      var before = parsePosition(positions[j]).board, after = parsePosition(positions[j + 1]).board;
      for (var q = 0; q < before.length; q++)
        if (q !== a.from && before[q] !== "." && after[q] === ".") captured.push({sq: q, piece: before[q]});
    }
    return {path: path, captured: captured};
  }

  /* A board in an <svg>: draw(position, opts) with opts {flip, selected,
     targets: [{to, capture}], movable: [sq], path: [sq], captured: [{sq,
     piece}], hint: {from, to}}; onclick(sq) is called for clicks on points. */
  function Board(svg, onclick) {
    this.svg = svg;
    this.onclick = onclick;
    svg.setAttribute("viewBox", "0 0 " + SIZE + " " + SIZE);
    if (!svg.getAttribute("width")) svg.setAttribute("width", SIZE);
    if (!svg.getAttribute("height")) svg.setAttribute("height", SIZE);
  }
  Board.prototype.xy = function (sq, flip) {
    var r = Math.floor(sq / N), c = sq % N;
    if (flip) { r = N - 1 - r; c = N - 1 - c; }
    return [M + c * GAP, M + (N - 1 - r) * GAP];
  };
  Board.prototype.draw = function (position, o) {
    o = o || {};
    var svg = this.svg, self = this, flip = !!o.flip;
    var p = parsePosition(position);
    svg.textContent = "";
    svg.setAttribute("data-position", position);
    svg.setAttribute("data-flip", flip ? "1" : "0");
    svg.appendChild(el("svg:rect", {x: 0, y: 0, width: SIZE, height: SIZE, fill: "#e8cf9a"}));
    /* The lines (R1): orthogonal everywhere, diagonals through r + c even. */
    var lines = el("svg:g", {stroke: "#6b4a1e", "stroke-width": 2});
    for (var sq = 0; sq < N * N; sq++) {
      var r = Math.floor(sq / N), c = sq % N, a = this.xy(sq, flip);
      var nbrs = [];
      if (c + 1 < N) nbrs.push(sq + 1);
      if (r + 1 < N) nbrs.push(sq + N);
      if ((r + c) % 2 === 0 && r + 1 < N) {
        if (c + 1 < N) nbrs.push(sq + N + 1);
        if (c > 0) nbrs.push(sq + N - 1);
      }
      nbrs.forEach(function (t) {
        var b = self.xy(t, flip);
        lines.appendChild(el("svg:line", {x1: a[0], y1: a[1], x2: b[0], y2: b[1]}));
      });
    }
    svg.appendChild(lines);
    /* The last turn's path, and the pieces it took (faded, crossed). */
    if (o.path && o.path.length > 1) {
      var pts = o.path.map(function (q) { return self.xy(q, flip).join(","); }).join(" ");
      svg.appendChild(el("svg:polyline", {points: pts, fill: "none", stroke: "#e07b00", "stroke-width": 7,
                                          "stroke-linecap": "round", "stroke-linejoin": "round", opacity: 0.75,
                                          class: "lastpath"}));
    }
    if (o.hint) {
      var h0 = this.xy(o.hint.from, flip), h1 = this.xy(o.hint.to, flip);
      svg.appendChild(el("svg:line", {x1: h0[0], y1: h0[1], x2: h1[0], y2: h1[1], stroke: "#2a7de1",
                                      "stroke-width": 6, "stroke-dasharray": "10 6", opacity: 0.8, class: "hint"}));
    }
    (o.captured || []).forEach(function (cap) {
      var xy = self.xy(cap.sq, flip);
      svg.appendChild(el("svg:circle", {cx: xy[0], cy: xy[1], r: 24, fill: cap.piece.toLowerCase() === "b" ? "#222" : "#fff",
                                        stroke: "#222", opacity: 0.3, class: "captured", "data-sq": cap.sq}));
      svg.appendChild(el("svg:path", {d: "M" + (xy[0] - 16) + " " + (xy[1] - 16) + " l32 32 m0 -32 l-32 32",
                                      stroke: "#c00", "stroke-width": 5}));
    });
    /* Points: number, piece, marks, and a click target over each. */
    for (var q = 0; q < N * N; q++) {
      var xy = this.xy(q, flip), ch = p.board[q] || ".";
      svg.appendChild(el("svg:text", {x: xy[0] + 22, y: xy[1] + 33, "font-size": 11, fill: "#6b4a1e",
                                      "text-anchor": "middle"}, q));
      if (ch !== ".") {
        var black = ch.toLowerCase() === "b";
        svg.appendChild(el("svg:circle", {cx: xy[0], cy: xy[1], r: 26, fill: black ? "#222" : "#fafafa",
                                          stroke: black ? "#000" : "#333", "stroke-width": 2,
                                          class: "piece " + ch}));
        if (ch === "B" || ch === "W")
          svg.appendChild(el("svg:circle", {cx: xy[0], cy: xy[1], r: 13, fill: "none",
                                            stroke: "#d4a017", "stroke-width": 5}));
      } else {
        svg.appendChild(el("svg:circle", {cx: xy[0], cy: xy[1], r: 5, fill: "#6b4a1e"}));
      }
      if (q === p.chain)
        svg.appendChild(el("svg:circle", {cx: xy[0], cy: xy[1], r: 33, fill: "none", stroke: "#c00",
                                          "stroke-width": 3, "stroke-dasharray": "6 4"}));
      if ((o.movable || []).indexOf(q) >= 0)
        svg.appendChild(el("svg:circle", {cx: xy[0], cy: xy[1], r: 31, fill: "none", stroke: "#2e9e44",
                                          "stroke-width": 3, class: "movable"}));
      if (q === o.selected)
        svg.appendChild(el("svg:circle", {cx: xy[0], cy: xy[1], r: 32, fill: "none", stroke: "#f2c200",
                                          "stroke-width": 6, class: "selected"}));
    }
    (o.targets || []).forEach(function (t) {
      var xy = self.xy(t.to, flip);
      svg.appendChild(el("svg:circle", {cx: xy[0], cy: xy[1], r: t.capture ? 20 : 14,
                                        fill: t.capture ? "rgba(204,0,0,0.35)" : "rgba(46,158,68,0.55)",
                                        stroke: t.capture ? "#c00" : "#2e9e44", "stroke-width": 3,
                                        class: "target" + (t.capture ? " capture" : ""), "data-sq": t.to}));
    });
    for (var s2 = 0; s2 < N * N; s2++) {
      var xy2 = this.xy(s2, flip);
      var hit = el("svg:circle", {cx: xy2[0], cy: xy2[1], r: 38, fill: "transparent", class: "pt",
                                  "data-sq": s2, cursor: this.onclick ? "pointer" : "default"});
      if (this.onclick) hit.addEventListener("click", (function (sqr) {
        return function () { self.onclick(sqr); };
      })(s2));
      svg.appendChild(hit);
    }
  };

  /* The move list: one row per turn, one clickable span per hop (a capture's
     hops joined by "x"); current: the index of the last move shown (-1 none). */
  function moveList(box, moves, current, onpick) {
    box.textContent = "";
    for (var k = 0; k < moves.length;) {
      var t = turnOf(moves, k);
      var row = el("div", {class: "turn"});
      row.appendChild(el("span", {class: "num"}, (moves[k].ply + 1) + ". " + moves[k].mover + " "));
      for (var j = t.lo; j <= t.hi; j++) {
        var a = parseAction(moves[j].action);
        var text = j === t.lo ? moves[j].action : (a.capture ? "x" : "-") + a.to;
        var span = el("span", {class: "hop" + (j === current ? " current" : ""), "data-k": j}, text);
        if (onpick) span.addEventListener("click", (function (kk) { return function () { onpick(kk); }; })(j));
        row.appendChild(span);
      }
      box.appendChild(row);
      k = t.hi + 1;
    }
    var cur = box.querySelector(".current");
    if (cur && cur.scrollIntoView) cur.scrollIntoView({block: "nearest"});
  }

  /* A GET or POST of a JSON endpoint: resolves with the parsed answer,
     rejects with the server's one-line message. */
  function call(method, path, args) {
    var q = Object.keys(args || {}).filter(function (k) { return args[k] !== undefined && args[k] !== ""; })
      .map(function (k) { return encodeURIComponent(k) + "=" + encodeURIComponent(args[k]); }).join("&");
    return fetch(path + (q ? "?" + q : ""), {method: method, cache: "no-store"}).then(function (r) {
      return r.text().then(function (t) {
        if (!r.ok) throw new Error(t.trim() || ("HTTP " + r.status));
        return JSON.parse(t);
      });
    });
  }

  function signed(v, d) { return v === null || v === undefined ? "-" : (v >= 0 ? "+" : "\u2212") + Math.abs(v).toFixed(d); }

  return {el: el, parsePosition: parsePosition, parseAction: parseAction, turnOf: turnOf,
          turnMarks: turnMarks, Board: Board, moveList: moveList, call: call, signed: signed};
})();
