#!/bin/sh
# draw_curve: draws a small line chart (SVG on standard output) from a data
# file of columns, as docs/solve.md's accuracy curve (docs/img/accuracy.svg).
# Plain sh and awk, like tools/draw_layers.sh.
#
# The data file: '#' lines give the chart's words, the others are rows of
# numbers: x, then one y a series ('-' where a series has no point).
#   # title: Perfect-play accuracy over training
#   # x: CPU-minutes of training
#   # y: turns keeping the proven value (%)
#   # series: A mcts:200|A policy|alphabeta:4
#   3.67 91.2 85.0 93.1
#
# Usage: tools/draw_curve.sh DATA > FILE.svg
set -eu
[ $# -eq 1 ] || { echo "usage: tools/draw_curve.sh DATA > FILE.svg" >&2; exit 2; }
[ -r "$1" ] || { echo "draw_curve: cannot read $1" >&2; exit 2; }
awk '
/^# title:/  { sub(/^# title: */, ""); title = $0; next }
/^# x:/      { sub(/^# x: */, ""); xl = $0; next }
/^# y:/      { sub(/^# y: */, ""); yl = $0; next }
/^# series:/ { sub(/^# series: */, ""); ns = split($0, names, "|"); next }
/^#/ || NF == 0 { next }
{
    n++; x[n] = $1 + 0
    for (s = 1; s < NF; s++) { y[n, s] = $(s + 1); if ($(s + 1) != "-") {
        v = $(s + 1) + 0; if (!got || v < ymin) ymin = v; if (!got || v > ymax) ymax = v; got = 1 } }
    if (n == 1 || x[n] < xmin) xmin = x[n]; if (n == 1 || x[n] > xmax) xmax = x[n]
}
END {
    if (n == 0 || !got) { print "draw_curve: no data rows" > "/dev/stderr"; exit 2 }
    W = 760; H = 380; L = 70; R = 200; T = 40; B = 50
    pw = W - L - R; ph = H - T - B
    # y range: whole steps (2, 5 or 10 by the spread of the data) around the data
    step = (ymax - ymin) <= 8 ? 2 : (ymax - ymin) <= 25 ? 5 : 10
    lo = int(ymin / step) * step; if (lo > ymin - 1) lo -= step
    hi = int(ymax / step) * step + step
    if (xmax == xmin) xmax = xmin + 1
    split("#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #7f7f7f #17becf", col, " ")
    split("0 0 6,4 6,4 2,3 2,3 0 6,4", dash, " ")
    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"DejaVu Sans, sans-serif\">\n", W, H
    printf "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n"
    printf "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\" fill=\"#222\">%s</text>\n", L, title
    for (v = lo; v <= hi; v += step) {
        yy = T + ph - (v - lo) / (hi - lo) * ph
        printf "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", L, yy, L + pw, yy
        printf "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" fill=\"#555\" text-anchor=\"end\">%g</text>\n", L - 6, yy + 4, v
    }
    xs = (xmax - xmin) <= 12 ? 2 : (xmax - xmin) <= 30 ? 5 : 10
    for (v = int(xmin / xs) * xs; v <= xmax; v += xs) {
        if (v < xmin) continue
        xx = L + (v - xmin) / (xmax - xmin) * pw
        printf "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e4e4e4\"/>\n", xx, T, xx, T + ph
        printf "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" fill=\"#555\" text-anchor=\"middle\">%g</text>\n", xx, T + ph + 16, v
    }
    printf "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n", L, T, pw, ph
    printf "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#333\" text-anchor=\"middle\">%s</text>\n", L + pw / 2, H - 12, xl
    printf "<text x=\"16\" y=\"%d\" font-size=\"12\" fill=\"#333\" text-anchor=\"middle\" transform=\"rotate(-90 16 %d)\">%s</text>\n", T + ph / 2, T + ph / 2, yl
    for (s = 1; s <= ns; s++) {
        pts = ""; k = 0
        for (i = 1; i <= n; i++) {
            if (!((i, s) in y) || y[i, s] == "-") continue
            xx = L + (x[i] - xmin) / (xmax - xmin) * pw
            yy = T + ph - (y[i, s] - lo) / (hi - lo) * ph
            pts = pts sprintf("%.1f,%.1f ", xx, yy); k++
            printf "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", xx, yy, col[s]
        }
        if (k > 1)
            printf "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\"/>\n", pts, col[s], dash[s]
        ly = T + 10 + (s - 1) * 20
        printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\"/>\n", L + pw + 12, ly, L + pw + 36, ly, col[s], dash[s]
        printf "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#222\">%s</text>\n", L + pw + 42, ly + 4, names[s]
    }
    print "</svg>"
}' "$1"
