/* board.js: any game's board drawn as SVG from the game's description (GET
   /api/info's "view", docs/web.md "A game's description": points and lines
   or squares, pieces and their colours, the players, how positions and
   actions are written), and what /play and /viewer share: reading positions
   and actions, the hops and captured pieces of a turn, the move list, the
   JSON calls. Our own code, nothing fetched from elsewhere. Texts from the
   server go in with textContent (page.js's el, loaded before this file). */
"use strict";
var KZ = (function () {
  var UNIT = 80; /* pixels per unit of the description's coordinates */

  function escapeClass(s) { return s.replace(/[\\\]\-^]/g, "\\$&"); }

  /* A game from its description: points by index and by label, the board's
     extent, the pieces, how positions and actions read. */
  function Game(view) {
    var self = this;
    this.view = view;
    this.players = view.players.map(function (p) { return p.name; });
    this.points = view.board.points.map(function (p) {
      return {x: +p[0], y: +p[1], label: String(p[2]), stack: p[3] || null};
    });
    this.byLabel = {};
    this.points.forEach(function (p, i) { self.byLabel[p.label] = i; });
    this.byLabelOf = moverLabels(view);
    var xs = this.points.map(function (p) { return p.x; }), ys = this.points.map(function (p) { return p.y; });
    /* Labels outside a stack's base (board.labels "outside") are inside the board. */
    this.points.forEach(function (p) {
      if (p.stack && view.board.labels === "outside") {
        xs.push(p.x - 1.3 * p.stack[0]);
        ys.push(p.y - 1.3 * p.stack[1]);
      }
    });
    (view.board.shapes || []).forEach(function (s) {
      var c = s.rect ? [s.rect[0], s.rect[1], s.rect[0] + s.rect[2], s.rect[1] + s.rect[3]] : s.poly || [];
      for (var i = 0; i + 1 < c.length; i += 2) { xs.push(c[i]); ys.push(c[i + 1]); }
    });
    tallySpots(view).forEach(function (t) { xs.push(t.x); ys.push(t.y); });
    var shaped = (view.board.shapes || []).length > 0, pad = shaped ? 0.15 : 0.5;
    this.x0 = Math.min.apply(null, xs) - pad; this.x1 = Math.max.apply(null, xs) + pad;
    this.y0 = Math.min.apply(null, ys) - pad; this.y1 = Math.max.apply(null, ys) + pad;
    this.pieces = view.pieces || {};
    this.empty = (view.position && view.position.empty) || ".";
    var seps = (view.actions && view.actions.separators) || "-x";
    this.sepRe = new RegExp("[" + escapeClass(seps) + "]");
    this.capture = (view.actions && view.actions.capture) || "x";
    this.strip = view.actions && view.actions.strip ? new RegExp(view.actions.strip) : null;
    this.bottom = view.board.bottom || 0;
    /* A turn that goes on is one piece capturing on (a "chain" field). */
    this.chainField = ((view.position && view.position.fields) || []).indexOf("chain") >= 0;
    readActionForms(this, view.actions || {});
  }
  /* What a description's "actions" says beyond its separators (docs/web.md):
     prefixes (characters before an action's first point, Yinsh's x of xe5),
     the separators of the actions that draw the path (default: all), and which
     pieces a turn took ("other": the other side's that left a point; "any":
     any piece that left a point without another taking its place), the
     separators of actions that may be clicked from either end. */
  function readActionForms(game, a) {
    game.prefixes = a.prefixes || "";
    game.pathSeps = a.path === undefined ? null : a.path;
    game.taken = a.taken || "other";
    game.either = a.either || "";
  }
  /* Whether a two-point action may be clicked from either end: its
     separator is one of "either" (Yinsh's row e5:e9). */
  Game.prototype.eitherEnd = function (a) {
    if (!a.points || a.points.length !== 2 || !this.either) return false;
    for (var i = 0; i < this.either.length; i++)
      if (a.text.indexOf(this.either[i]) > 0) return true;
    return false;
  };
  /* The slots of a description's "tallies" (pieces off the board counted by
     a position field, Yinsh's rings removed): [{x, y, player, piece}], each
     player's in order. */
  function tallySpots(view) {
    var t = view.board.tallies, out = [];
    if (!t || !t.at) return out;
    t.at.forEach(function (a, pl) {
      for (var i = 0; i < (t.slots || 0); i++)
        out.push({x: a[0] + i * a[2], y: a[1] + i * a[3], player: pl, piece: t.pieces[pl]});
    });
    return out;
  }
  /* The labels each player's actions give the points (actions.labels: a
     list per player, "" for a point it cannot name), as maps label ->
     point; null when the actions name points by their board labels. */
  function moverLabels(view) {
    var ls = view.actions && view.actions.labels;
    if (!ls) return null;
    return ls.map(function (list) {
      var m = {};
      list.forEach(function (l, i) { if (l !== "") m[String(l)] = i; });
      return m;
    });
  }
  /* The label of point i as player (an index) names it: its own label
     (actions.labels), else the board's. */
  Game.prototype.labelFor = function (i, player) {
    var ls = this.view.actions && this.view.actions.labels;
    var l = ls && ls[player] ? ls[player][i] : "";
    return l !== undefined && l !== "" ? String(l) : this.label(i);
  };
  /* A player's index from its name or index (-1 when neither). */
  Game.prototype.player = function (p) {
    return typeof p === "number" ? p : this.playerIndex(p);
  };
  Game.prototype.label = function (i) { return this.points[i] ? this.points[i].label : String(i); };
  Game.prototype.playerIndex = function (name) { return this.players.indexOf(name); };
  Game.prototype.colour = function (player) {
    return (this.view.players[player] && this.view.players[player].colour) || (player ? "#fafafa" : "#222");
  };
  /* What stands on each point of a position: an array of strings, one per
     point, its pieces' characters ("" when empty). */
  Game.prototype.board = function (position) {
    var n = this.points.length, out = [], kind = (this.view.position && this.view.position.board) || "chars";
    if (kind === "gnubg-id") return gnubgBoard(this, position);
    if (kind === "counts") {
      /* The first field: one comma-separated token per point, a count and
         a piece character ("3w"), or "" / "0" when empty. */
      var toks = position.split(" ")[0].split(",");
      for (var i = 0; i < n; i++) {
        var m = /^(\d*)(\D?)$/.exec(toks[i] || ""), c = m ? (m[1] === "" ? 1 : +m[1]) : 0;
        out.push(m && m[2] ? new Array(c + 1).join(m[2]) : "");
      }
      return out;
    }
    for (var q = 0; q < n; q++) {
      var ch = position[q] || this.empty;
      out.push(ch === this.empty ? "" : ch);
    }
    return out;
  };
  /* The named fields after the board (docs/web.md: "fields"). */
  Game.prototype.fields = function (position) {
    if (this.view.position && this.view.position.board === "gnubg-id")
      return gnubgFields(this, position);
    var parts = position.split(" ").slice(1), names = (this.view.position && this.view.position.fields) || [];
    var f = {};
    names.forEach(function (nm, i) { if (parts[i] !== undefined) f[nm] = parts[i]; });
    return f;
  };
  /* An action string of mover (a name or index; the board's labels when
     not given): {text, points: [point indices] (null when a token is not a
     point), capture}. */
  Game.prototype.parseAction = function (a, mover) {
    var p = mover === undefined ? -1 : this.player(mover);
    var labels = this.byLabelOf && this.byLabelOf[p] ? this.byLabelOf[p] : this.byLabel;
    var body = this.prefixes && this.prefixes.indexOf(a[0]) >= 0 ? a.slice(1) : a;
    var toks = (this.strip ? body.replace(this.strip, "") : body).split(this.sepRe), pts = [];
    for (var i = 0; i < toks.length; i++) {
      var k = labels[toks[i]];
      if (k === undefined) { pts = null; break; }
      pts.push(k);
    }
    return {text: a, points: pts, capture: a.indexOf(this.capture) >= 0 && toks.length > 1};
  };
  /* The player owning a piece character (-1 when unknown). */
  Game.prototype.owner = function (ch) {
    var p = this.pieces[ch];
    return p ? p.player : -1;
  };

  /* Backgammon positions: "ID [ROLL[:LEFT]] SIDE" or "ID opening", ID a GNU
     Backgammon Position ID (docs/rules-backgammon.md B17; position.board
     "gnubg-id", docs/web.md). */
  var B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  /* The checkers of a Position ID: {own, opp}, 25 counts each (index i the
     side's point i + 1, 24 its bar), own the side on roll; null when it is
     not 14 base64 characters. As backgammon_parse_id: 80 bits, the bytes'
     bits low first, per side (the other first) a 1 per checker and a 0 after
     each of its 25 places. */
  function gnubgDecode(id) {
    if (!/^[A-Za-z0-9+\/]{14}$/.test(id || "")) return null;
    var bits = [], sides = [[], []], side = 0, at = 0;
    for (var i = 0; i < 14; i++)
      for (var j = 5; j >= 0; j--) bits.push(B64.indexOf(id[i]) >> j & 1);
    for (var q = 0; q < 25; q++) { sides[0].push(0); sides[1].push(0); }
    for (var b = 0; b < 80 && side < 2; b++) {
      if (bits[(b >> 3) * 8 + 7 - (b & 7)]) sides[side][at]++;
      else if (++at === 25) { at = 0; side++; }
    }
    return {own: sides[1], opp: sides[0]};
  }
  /* The fields after the ID: {side (its character, or "opening"), mover
     (the player on roll: the ID's own side), dice (the roll, "53"), left
     (the dice still to play, "3"; all of the roll when none is played)}. */
  function gnubgFields(game, position) {
    var pv = game.view.position, t = position.split(" ").slice(1), f = {mover: 0};
    if (t[0] === "opening") { f.side = "opening"; return f; }
    if (/^[1-6]{2}(:[1-6]+)?$/.test(t[0] || "")) {
      var r = t.shift().split(":");
      f.dice = r[0];
      f.left = r.length > 1 ? r[1] : r[0][0] === r[0][1] ? r[0] + r[0] : r[0];
    }
    if (t[0]) { f.side = t[0]; f.mover = Math.max(0, (pv.sides || []).indexOf(t[0])); }
    return f;
  }
  /* What stands on each point: position.points[p][i] is the board point of
     player p's place i, position.off[p] its tray of borne-off checkers
     (position.checkers, 15, less those on the board). */
  function gnubgBoard(game, position) {
    var pv = game.view.position, out = game.points.map(function () { return ""; });
    var d = gnubgDecode(position.split(" ")[0]), on = gnubgFields(game, position).mover;
    if (!d) return out;
    [on, 1 - on].forEach(function (p, k) {
      var c = k ? d.opp : d.own, ch = pv.pieces[p], total = 0;
      for (var i = 0; i < 25; i++) {
        out[pv.points[p][i]] += new Array(c[i] + 1).join(ch);
        total += c[i];
      }
      out[pv.off[p]] += new Array(Math.max(0, (pv.checkers || 15) - total) + 1).join(ch);
    });
    return out;
  }

  /* The hops of the turn that move k belongs to: indices into moves. */
  function turnOf(moves, k) {
    var lo = k, hi = k;
    while (lo > 0 && moves[lo - 1].mover === moves[k].mover && moves[lo - 1].ply === moves[k].ply) lo--;
    while (hi + 1 < moves.length && moves[hi + 1].mover === moves[k].mover && moves[hi + 1].ply === moves[k].ply) hi++;
    return {lo: lo, hi: hi};
  }
  /* The marks of the turn that moves[lo..k] played: the path of the moving
     piece and the pieces of the other side it took (fewer of them on a
     point after a hop than before; with "taken": "any", see anyTaken, also
     the pieces it flipped). */
  function turnMarks(game, moves, positions, lo, k) {
    var path = [], captured = [], flipped = [];
    for (var j = lo; j <= k; j++) {
      if (moves[j].chance) continue; /* nature's (a roll): nothing moves */
      var a = game.parseAction(moves[j].action, moves[j].mover);
      /* null in the path: the next action starts elsewhere (a new line). */
      if (a.points && onPath(game, moves[j].action)) a.points.forEach(function (q, i) {
        if (i === 0 && path.length && path[path.length - 1] === q) return;
        if (i === 0 && path.length) path.push(null);
        path.push(q);
      });
      var mover = game.playerIndex(moves[j].mover);
      var before = game.board(positions[j]), after = game.board(positions[j + 1]);
      if (game.taken === "any") {
        anyTaken(game, before, after, captured, flipped);
        continue;
      }
      for (var q = 0; q < before.length; q++) {
        var was = before[q].split("").filter(function (c) { return game.owner(c) >= 0 && game.owner(c) !== mover; });
        var now = after[q].split("").filter(function (c) { return game.owner(c) >= 0 && game.owner(c) !== mover; });
        if (was.length > now.length) captured.push({sq: q, piece: was[was.length - 1]});
      }
    }
    return {path: path, captured: captured, flipped: flipped};
  }
  /* Whether an action draws the path: it has a separator of "path" (all do
     when the description names none). */
  function onPath(game, text) {
    if (game.pathSeps === null) return true;
    for (var i = 0; i < game.pathSeps.length; i++)
      if (text.indexOf(game.pathSeps[i]) > 0) return true;
    return false;
  }
  /* "taken": "any": a point that holds fewer pieces after an action lost its
     last (a Yinsh row's markers, a ring removed); one whose piece turned to
     another player's was flipped (a Yinsh marker jumped). */
  function anyTaken(game, before, after, captured, flipped) {
    for (var q = 0; q < before.length; q++) {
      var b = before[q], f = after[q];
      if (b.length > f.length) {
        captured.push({sq: q, piece: b[b.length - 1]});
      } else if (b.length && b.length === f.length && game.owner(b[b.length - 1]) >= 0 &&
                 game.owner(f[f.length - 1]) >= 0 &&
                 game.owner(b[b.length - 1]) !== game.owner(f[f.length - 1]) &&
                 game.pieces[b[b.length - 1]].kind === game.pieces[f[f.length - 1]].kind) {
        if (flipped.indexOf(q) < 0) flipped.push(q);
      }
    }
  }

  /* A board in an <svg> for game: draw(position, opts) with opts {flip,
     selected, targets: [{to, capture}], movable: [sq], path: [sq],
     captured: [{sq, piece}], flipped: [sq], hint: [sq], chain: sq};
     onclick(sq) is called for clicks on points (sq: the point's index,
     data-sq; data-label its label). */
  function Board(svg, game, onclick) {
    this.svg = svg;
    this.game = game;
    this.onclick = onclick;
    var w = (game.x1 - game.x0) * UNIT, h = (game.y1 - game.y0) * UNIT;
    svg.setAttribute("viewBox", "0 0 " + w + " " + h);
    var scale = Math.min(1, (game.view.board.pixels || 560) / Math.max(w, h));
    svg.setAttribute("width", Math.round(w * scale));
    svg.setAttribute("height", Math.round(h * scale));
    svg.setAttribute("data-game", game.view.name || "");
    /* Labels at least 9 pixels high on a board shrunk to fit (Yinsh's 85). */
    this.labelSize = Math.max(11, Math.round(9 / scale));
  }
  /* The pieces a position's tally field counts (docs/web.md: "tallies",
     Yinsh's rings removed: digit i of the field is player i's count), in a
     group of their own beside the board: each slot an outline, the first
     `count` of a player's slots holding its piece (class "tallied"). */
  Board.prototype.drawTallies = function (position, flip) {
    var t = this.game.view.board.tallies, spots = tallySpots(this.game.view);
    if (!spots.length) return;
    var counts = (this.game.fields(position)[t.field] || "").replace(/\D/g, ""), self = this;
    var R = (this.game.view.board.piece || 0.33) * UNIT, keep = this.svg;
    var grp = el("svg:g", {class: "tally", "data-field": t.field});
    keep.appendChild(grp);
    grp.appendChild(el("svg:title", {}, this.game.players.map(function (name, i) {
      return name + " " + t.field + ": " + (+(counts[i] || 0));
    }).join(", ")));
    var seen = [0, 0];
    spots.forEach(function (sp) {
      var xy = self.at(sp.x, sp.y, flip), k = seen[sp.player]++;
      grp.appendChild(el("svg:circle", {cx: xy[0], cy: xy[1], r: R * 1.1, fill: "rgba(0,0,0,0.08)",
                                        stroke: self.game.view.board.ink || "#6b4a1e",
                                        "stroke-width": 1.5, "stroke-dasharray": "5 4",
                                        class: "slot"}));
      if (k < +(counts[sp.player] || 0)) {
        var g1 = el("svg:g", {class: "tallied", "data-player": sp.player});
        grp.appendChild(g1);
        self.svg = g1;
        self.piece(sp.piece, 1, xy, -1);
        self.svg = keep;
      }
    });
  };
  /* Pixel coordinates of description coordinates, turned 180 degrees when flipped. */
  Board.prototype.at = function (x, y, flip) {
    var g = this.game;
    if (flip) { x = g.x0 + g.x1 - x; y = g.y0 + g.y1 - y; }
    return [(x - g.x0) * UNIT, (y - g.y0) * UNIT];
  };
  Board.prototype.xy = function (sq, flip) {
    var p = this.game.points[sq];
    return this.at(p.x, p.y, flip);
  };
  /* One piece (character ch, count of a stack) at point centre xy; kind:
     its class ("piece", or "checker" for the ones piled on it). */
  Board.prototype.piece = function (ch, count, xy, q, kind) {
    var g = this.game, info = g.pieces[ch] || {player: 0, kind: "man"};
    var R = (g.view.board.piece || 0.33) * UNIT, fill = info.colour || g.colour(info.player);
    var dark = lum(fill) < 0.5, stroke = dark ? "#000" : "#333";
    var cls = {class: (kind || "piece") + " " + ch};
    var svg = this.svg;
    function circle(r, a) {
      var o = {cx: xy[0], cy: xy[1], r: r};
      for (var k in a) o[k] = a[k];
      svg.appendChild(el("svg:circle", o));
    }
    if (info.kind === "ring") {
      circle(R, {fill: "none", stroke: fill, "stroke-width": R * 0.32, class: cls.class, "data-sq": q});
      circle(R * 1.16, {fill: "none", stroke: stroke, "stroke-width": 1.5});
      circle(R * 0.84, {fill: "none", stroke: stroke, "stroke-width": 1.5});
    } else if (info.kind === "marker") {
      circle(R * 0.6, {fill: fill, stroke: stroke, "stroke-width": 2, class: cls.class, "data-sq": q});
    } else {
      circle(R, {fill: fill, stroke: stroke, "stroke-width": 2, class: cls.class, "data-sq": q});
      if (info.kind === "king")
        circle(R * 0.5, {fill: "none", stroke: "#d4a017", "stroke-width": R * 0.19});
    }
    if (count > 1)
      svg.appendChild(el("svg:text", {x: xy[0], y: xy[1] + R * 0.3, "font-size": R * 0.85, "font-weight": 700,
                                      fill: dark ? "#fff" : "#222", "text-anchor": "middle",
                                      class: "count", "pointer-events": "none"}, count));
  };
  /* Stacks (points with a stack direction, board.points' 4th member): the
     pixel centre of the k-th checker of point q (0 its base). */
  Board.prototype.slot = function (q, k, flip) {
    var p = this.game.points[q], d = p.stack || [0, 0];
    return this.at(p.x + d[0] * k, p.y + d[1] * k, flip);
  };
  /* The checkers here (a string, one character each) piled on point q: up
     to board.stack of them, the last showing the count when there are more;
     the base is the "piece" (data-count: all of them), the others "checker". */
  Board.prototype.pile = function (here, q, flip) {
    var n = here.length, shown = Math.min(n, this.game.view.board.stack || 5);
    for (var k = 0; k < shown; k++) {
      var last = this.svg.lastChild;
      this.piece(here[k], k === shown - 1 && n > shown ? n : 1, this.slot(q, k, flip), q,
                 k ? "checker" : "piece");
      var disc = last ? last.nextSibling : this.svg.firstChild;
      disc.setAttribute("pointer-events", "none"); /* a click goes to the point's shape */
      if (!k) disc.setAttribute("data-count", n);
    }
  };
  /* The SVG path through points: straight lines, or between piles (which
     sit in rows along the board's edges) arcs bowed towards the middle, so
     that moves along one row stay apart. */
  Board.prototype.route = function (run, flip) {
    var self = this, g = this.game, mid = this.at((g.x0 + g.x1) / 2, (g.y0 + g.y1) / 2, false);
    return run.map(function (q, i) {
      var b = self.xy(q, flip);
      if (!i) return "M" + b.join(" ");
      var a = self.xy(run[i - 1], flip);
      if (!g.points[q].stack || !g.points[run[i - 1]].stack) return "L" + b.join(" ");
      var m = [(a[0] + b[0]) / 2, (a[1] + b[1]) / 2], len = Math.hypot(b[0] - a[0], b[1] - a[1]);
      var to = [mid[0] - m[0], mid[1] - m[1]], d = Math.hypot(to[0], to[1]) || 1;
      var k = Math.min(0.35 * len, d) / d;
      return "Q" + (m[0] + k * to[0]) + " " + (m[1] + k * to[1]) + " " + b.join(" ");
    }).join(" ");
  };
  /* Where a mark goes on point q holding `here`: the top checker of a pile
     (next: the place the next checker would take), else the point. */
  Board.prototype.spot = function (q, here, flip, next) {
    if (!this.game.points[q].stack) return this.xy(q, flip);
    var max = this.game.view.board.stack || 5, n = here ? here.length : 0;
    return this.slot(q, next ? Math.min(n, max - 1) : Math.max(0, Math.min(n, max) - 1), flip);
  };
  function lum(c) {
    var m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(c || "");
    if (!m) return 1;
    return (0.299 * parseInt(m[1], 16) + 0.587 * parseInt(m[2], 16) + 0.114 * parseInt(m[3], 16)) / 255;
  }
  Board.prototype.draw = function (position, o) {
    o = o || {};
    var svg = this.svg, self = this, g = this.game, flip = !!o.flip, v = g.view.board;
    var ink = v.ink || "#6b4a1e", u = UNIT;
    var pts = g.points, board = g.board(position), n = pts.length;
    svg.textContent = "";
    svg.setAttribute("data-position", position);
    svg.setAttribute("data-flip", flip ? "1" : "0");
    svg.appendChild(el("svg:rect", {x: 0, y: 0, width: (g.x1 - g.x0) * u, height: (g.y1 - g.y0) * u,
                                    fill: v.background || "#e8cf9a"}));
    /* Squares, triangles and the like, then the lines. */
    (v.shapes || []).forEach(function (s) {
      var c = s.rect ? [s.rect[0], s.rect[1], s.rect[0] + s.rect[2], s.rect[1],
                        s.rect[0] + s.rect[2], s.rect[1] + s.rect[3], s.rect[0], s.rect[1] + s.rect[3]] : s.poly;
      var p = [];
      for (var i = 0; i + 1 < c.length; i += 2) p.push(self.at(c[i], c[i + 1], flip).join(","));
      var shape = el("svg:polygon", {points: p.join(" "), fill: s.fill || "none",
                                     stroke: s.stroke || "none", class: "shape"});
      /* A shape of a point ("point": its index: a triangle, a tray) is clicked as the point. */
      if (s.point !== undefined) {
        shape.setAttribute("data-sq", s.point);
        if (self.onclick) {
          shape.setAttribute("cursor", "pointer");
          shape.addEventListener("click", function () { self.onclick(s.point); });
        }
      }
      svg.appendChild(shape);
    });
    var lines = el("svg:g", {stroke: ink, "stroke-width": 2});
    (v.lines || []).forEach(function (l) {
      var a = self.xy(l[0], flip), b = self.xy(l[1], flip);
      lines.appendChild(el("svg:line", {x1: a[0], y1: a[1], x2: b[0], y2: b[1]}));
    });
    svg.appendChild(lines);
    /* The last turn's path, and the pieces it took (faded, crossed). */
    /* (A null in the path starts a new line: the next action moved another piece.) */
    (o.path || []).concat([null]).reduce(function (run, q) {
      if (q !== null) return run.concat([q]);
      if (run.length > 1)
        svg.appendChild(el("svg:path", {d: self.route(run, flip), fill: "none", stroke: "#e07b00",
                                        "stroke-width": 7, "stroke-linecap": "round",
                                        "stroke-linejoin": "round", opacity: 0.75,
                                        class: "lastpath", "pointer-events": "none"}));
      return [];
    }, []);
    if (o.hint && o.hint.length) {
      var hp = o.hint.map(function (q) { return self.xy(q, flip).join(","); }).join(" ");
      svg.appendChild(el("svg:polyline", {points: hp, fill: "none", stroke: "#2a7de1", "stroke-width": 6,
                                          "stroke-dasharray": "10 6", opacity: 0.8, class: "hint"}));
      if (o.hint.length === 1) {
        var h0 = self.xy(o.hint[0], flip);
        svg.appendChild(el("svg:circle", {cx: h0[0], cy: h0[1], r: 0.3 * u, fill: "none", stroke: "#2a7de1",
                                          "stroke-width": 5, "stroke-dasharray": "8 5", class: "hint"}));
      }
    }
    var R = (v.piece || 0.33) * u;
    (o.captured || []).forEach(function (cap) {
      /* On a pile: beside the pieces there now (where the next would go). */
      var xy = self.spot(cap.sq, board[cap.sq], flip, true);
      var g0 = el("svg:g", {opacity: 0.35, class: "captured", "data-sq": cap.sq});
      svg.appendChild(g0);
      var keep = self.svg;
      self.svg = g0;
      self.piece(cap.piece, 1, xy, cap.sq);
      self.svg = keep;
      svg.appendChild(el("svg:path", {d: "M" + (xy[0] - R * 0.6) + " " + (xy[1] - R * 0.6) + " l" + 1.2 * R + " " +
                                      1.2 * R + " m0 " + (-1.2 * R) + " l" + (-1.2 * R) + " " + 1.2 * R,
                                      stroke: "#c00", "stroke-width": 5}));
    });
    this.drawTallies(position, flip);
    /* Points: label, piece, marks, and a click target over each. The labels
       are the ones of the player whose side is at the bottom (actions.labels). */
    var kind = g.view.position && g.view.position.board;
    var stacks = kind === "counts" || kind === "gnubg-id";
    var viewer = o.labelsOf !== undefined ? o.labelsOf : flip ? 1 - g.bottom : g.bottom;
    var mover = o.selected !== undefined && board[o.selected] ? g.owner(board[o.selected][0]) : -1;
    for (var q = 0; q < n; q++) {
      var xy = this.xy(q, flip), here = board[q], st = pts[q].stack;
      if (v.labels === "outside" && st) {
        var lxy = this.at(pts[q].x - st[0], pts[q].y - st[1], flip);
        svg.appendChild(el("svg:text", {x: lxy[0], y: lxy[1] + 0.12 * u, "font-size": 0.32 * u,
                                        fill: ink, "text-anchor": "middle", class: "label"},
                           g.labelFor(q, viewer)));
      } else if (v.labels !== "none") {
        svg.appendChild(el("svg:text", {x: xy[0] + 0.3 * u, y: xy[1] + 0.42 * u,
                                        "font-size": this.labelSize, fill: ink,
                                        "text-anchor": "middle", class: "label"},
                           g.labelFor(q, viewer)));
      }
      if (here) {
        if (stacks && st) this.pile(here, q, flip);
        else if (stacks) this.piece(here[0], here.length, xy, q);
        else for (var c = 0; c < here.length; c++) this.piece(here[c], 1, xy, q);
      } else if (!(v.shapes || []).length) {
        svg.appendChild(el("svg:circle", {cx: xy[0], cy: xy[1], r: 5, fill: ink}));
      }
      if (here && (o.flipped || []).indexOf(q) >= 0)
        svg.appendChild(el("svg:circle", {cx: xy[0], cy: xy[1], r: R * 0.8, fill: "none",
                                          stroke: "#e07b00", "stroke-width": 3,
                                          "stroke-dasharray": "4 3", class: "flipped",
                                          "data-sq": q}));
      xy = this.spot(q, here, flip, false); /* the marks: on the top checker of a pile */
      if (q === o.chain)
        svg.appendChild(el("svg:circle", {cx: xy[0], cy: xy[1], r: R + 7, fill: "none", stroke: "#c00",
                                          "stroke-width": 3, "stroke-dasharray": "6 4", class: "chain"}));
      if ((o.movable || []).indexOf(q) >= 0)
        svg.appendChild(el("svg:circle", {cx: xy[0], cy: xy[1], r: R + 5, fill: "none", stroke: "#2e9e44",
                                          "stroke-width": 3, class: "movable", "data-sq": q,
                                          "pointer-events": "none"}));
      if (q === o.selected)
        svg.appendChild(el("svg:circle", {cx: xy[0], cy: xy[1], r: R + 6, fill: "none", stroke: "#f2c200",
                                          "stroke-width": 6, class: "selected",
                                          "pointer-events": "none"}));
    }
    (o.targets || []).forEach(function (t) {
      /* Where the piece would land: on a pile of its own side, above it. */
      var there = board[t.to], own = there && g.owner(there[0]) === mover;
      var xy = self.spot(t.to, own ? there : "", flip, true);
      svg.appendChild(el("svg:circle", {cx: xy[0], cy: xy[1], r: t.capture ? 0.25 * u : 0.18 * u,
                                        fill: t.capture ? "rgba(204,0,0,0.35)" : "rgba(46,158,68,0.55)",
                                        stroke: t.capture ? "#c00" : "#2e9e44", "stroke-width": 3,
                                        class: "target" + (t.capture ? " capture" : ""),
                                        "data-sq": t.to,
                                        "pointer-events": "none"}));
    });
    for (var s2 = 0; s2 < n; s2++) {
      var xy2 = this.xy(s2, flip);
      var hit = el("svg:circle", {cx: xy2[0], cy: xy2[1], r: 0.47 * u, fill: "transparent", class: "pt",
                                  "data-sq": s2, "data-label": pts[s2].label,
                                  cursor: this.onclick ? "pointer" : "default"});
      if (this.onclick) hit.addEventListener("click", (function (sqr) {
        return function () { self.onclick(sqr); };
      })(s2));
      svg.appendChild(hit);
    }
    /* Dice, when the position has them (a field named "dice": its digits). */
    var f = g.fields(position);
    if (f.dice) this.dice(f);
  };
  /* The dice of fields f: its digits, in the middle of the board or at the
     mover's place (board.dice: [x, y] per player); with f.left (the dice
     still to play; a double's four) the played ones faded. */
  Board.prototype.dice = function (f) {
    var svg = this.svg, g = this.game, u = UNIT, v = g.view.board;
    var flip = svg.getAttribute("data-flip") === "1", place = v.dice && v.dice[f.mover];
    var ds = f.dice.replace(/[^1-6]/g, "").split("");
    var left = f.left !== undefined ? f.left.split("") : null;
    if (left && ds.length === 2 && ds[0] === ds[1]) ds = ds.concat(ds);
    var at = place ? this.at(place[0], place[1], flip)
                   : [(g.x1 - g.x0) * u / 2, (g.y1 - g.y0) * u / 2];
    var cx = at[0] - (ds.length - 1) * 0.4 * u;
    ds.forEach(function (d, i) {
      var k = left ? left.indexOf(d) : 0, used = k < 0;
      if (!used && left) left.splice(k, 1);
      var x = cx + i * 0.8 * u - 0.3 * u, y = at[1] - 0.3 * u;
      var o = used ? 0.35 : 1;
      svg.appendChild(el("svg:rect", {x: x, y: y, width: 0.6 * u, height: 0.6 * u, rx: 8,
                                      fill: "#fff", stroke: "#222", "stroke-width": 2,
                                      "data-value": d, class: "die" + (used ? " used" : ""),
                                      opacity: o}));
      svg.appendChild(el("svg:text", {x: x + 0.3 * u, y: y + 0.42 * u, "font-size": 0.36 * u,
                                      "text-anchor": "middle", fill: "#222", opacity: o}, d));
    });
  };

  /* The move list: one row per turn, one clickable span per hop (a capture's
     hops joined: "7x17x27"; a roll of the dice "53:", as the position after it
     shows the dice when positions are given); current: the index of the last
     move shown (-1 none). */
  function moveList(game, box, moves, current, onpick, positions) {
    box.textContent = "";
    for (var k = 0; k < moves.length;) {
      var t = turnOf(moves, k);
      var row = el("div", {class: "turn"});
      row.appendChild(el("span", {class: "num"}, (moves[k].ply + 1) + ". " + moves[k].mover + " "));
      for (var j = t.lo; j <= t.hi; j++) {
        var text = moves[j].action, first = text.split(game.sepRe)[0];
        /* A hop that goes on from where the last one ended is joined to it. */
        var joined = j > t.lo && !moves[j - 1].chance && first.length < text.length &&
                     goesOn(game, moves[j - 1].action, text, moves[j].mover);
        if (moves[j].chance)
          text = ((positions && game.fields(positions[j + 1] || "").dice) || text) + ":";
        else if (joined) text = text.slice(first.length);
        else if (j > t.lo) row.appendChild(document.createTextNode(" "));
        var span = el("span", {class: "hop" + (moves[j].chance ? " roll" : "") +
                                      (j === current ? " current" : ""), "data-k": j}, text);
        if (onpick) span.addEventListener("click", (function (kk) { return function () { onpick(kk); }; })(j));
        row.appendChild(span);
      }
      box.appendChild(row);
      k = t.hi + 1;
    }
    /* The current move in view inside the list (the page itself stays put). */
    var cur = box.querySelector(".current");
    if (cur) {
      var top = cur.offsetTop - box.offsetTop, bottom = top + cur.offsetHeight;
      if (top < box.scrollTop) box.scrollTop = top;
      else if (bottom > box.scrollTop + box.clientHeight) box.scrollTop = bottom - box.clientHeight;
    }
  }

  /* Whether action b starts on the point where action a ended (a capture's
     next hop: written on from there, "7x17x27"), not a new action of the
     same turn (Yinsh's row e5:e9 after a ring moved). */
  function goesOn(game, a, b, mover) {
    var pa = game.parseAction(a, mover).points, pb = game.parseAction(b, mover).points;
    return !!(pa && pb && pa.length > 1 && pa[pa.length - 1] === pb[0]);
  }

  /* Whether the actions lo..hi of moves are one piece's hops, each going on
     where the last ended (a capture sequence). */
  function chained(game, moves, lo, hi) {
    for (var j = lo + 1; j <= hi; j++)
      if (!goesOn(game, moves[j - 1].action, moves[j].action, moves[j].mover)) return false;
    return true;
  }
  /* What the description's actions.says tells a person about an action of
     this form (its prefix, else a separator in it, else "" for one point),
     or null: Yinsh's "remove one of your rings" for xe5. */
  function actionSays(game, text) {
    var says = (game.view.actions && game.view.actions.says) || {};
    if (game.prefixes && game.prefixes.indexOf(text[0]) >= 0 && says[text[0]]) return says[text[0]];
    for (var i = 1; i < text.length; i++)
      if (game.sepRe.test(text[i]) && says[text[i]]) return says[text[i]];
    var a = game.parseAction(text);
    return a.points && a.points.length === 1 && says[""] ? says[""] : null;
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

  return {Game: Game, turnOf: turnOf, turnMarks: turnMarks, Board: Board, moveList: moveList,
          call: call, signed: signed, goesOn: goesOn, chained: chained, actionSays: actionSays};
})();
