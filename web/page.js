/* page.js: what every page's script shares (GET /page.js): the dashboard
   (server/dashboard.html), the game viewer and the play page load it first,
   before board.js (which draws with el) and their own script. */
"use strict";

/* A new element: tag "svg:NAME" makes an SVG one; attrs become its
   attributes; text, when given, its textContent (never parsed as HTML, so
   texts from the network go in safely). */
var SVG_NS = "http://www.w3.org/2000/svg";
function el(tag, attrs, text) {
  var e = tag.indexOf("svg:") === 0 ? document.createElementNS(SVG_NS, tag.slice(4))
                                    : document.createElement(tag);
  for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = String(text);
  return e;
}

/* The page's element with this id. */
function $(id) { return document.getElementById(id); }
