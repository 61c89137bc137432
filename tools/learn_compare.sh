#!/bin/sh
# learn_compare: two or more `make learn` runs side by side, so that an A/B
# reads at a glance. Reads each run's curve.csv (bench_learning writes it
# beside results.txt: per snapshot the minutes, CPU minutes, games, steps,
# version and its rating on the anchor scale with its 95% interval) and
# prints a table of the runs' last rated points; with -o FILE it also writes
# an HTML page with the table and a plot (SVG, no script) of every run's
# rating over time with its intervals. Every run is on the same scale
# (play/scales.txt), so the numbers compare.
#
# Usage: tools/learn_compare.sh [-o FILE.html] [-x minutes|cpu_minutes] DIR1 DIR2 ...
# Exit status 2 for bad usage or a run without curve.csv. Plain sh and awk.
set -eu
out=""
xcol=minutes
while [ $# -gt 0 ]; do
    case $1 in
    -o) [ $# -ge 2 ] || { echo "learn_compare: -o wants a file" >&2; exit 2; }; out=$2; shift 2 ;;
    -x) [ $# -ge 2 ] || { echo "learn_compare: -x wants minutes or cpu_minutes" >&2; exit 2; }
        xcol=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "learn_compare: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
case $xcol in minutes|cpu_minutes) ;; *) echo "learn_compare: -x is minutes or cpu_minutes" >&2; exit 2 ;; esac
[ $# -ge 2 ] || { echo "learn_compare: give two runs or more (make learn's directories)" >&2; exit 2; }
for d in "$@"; do
    [ -r "$d/curve.csv" ] || { echo "learn_compare: $d/curve.csv: no such file (a make learn run?)" >&2; exit 2; }
done

# One stream: "RUN<TAB>line of curve.csv" for every run.
for d in "$@"; do
    tail -n +2 "$d/curve.csv" | sed "s|^|$d	|"
done | awk -F'\t' -v xcol="$xcol" -v out="$out" '
{
    run = $1
    if (!(run in idx)) { idx[run] = n + 0; name[n++] = run }
    split($2, f, ",")
    k = idx[run]; m = cnt[k]++
    x[k, m] = xcol == "minutes" ? f[1] : f[2]
    games[k, m] = f[3]; steps[k, m] = f[4]; ver[k, m] = f[5]
    e[k, m] = f[6]; lo[k, m] = f[7]; hi[k, m] = f[8]
}
END {
    printf "%-40s %8s %8s %10s %9s %8s  %s\n", "RUN", "VERSION", xcol, "GAMES", "STEPS", "ELO", "95% INTERVAL"
    for (k = 0; k < n; k++) {
        last = -1
        for (m = 0; m < cnt[k]; m++) if (e[k, m] != "") last = m
        if (last < 0) { printf "%-40s (no rated snapshot)\n", name[k]; continue }
        printf "%-40s %8s %8.1f %10d %9d %+8.0f  [%+.0f, %+.0f]\n", name[k], "v" ver[k, last], x[k, last],
               games[k, last], steps[k, last], e[k, last], lo[k, last], hi[k, last]
        fin[k] = last
    }
    if (out == "") exit
    # The plot: x from 0 to the largest x, y over every interval (and 0).
    xmax = 0; ymin = 0; ymax = 100
    for (k = 0; k < n; k++) for (m = 0; m < cnt[k]; m++) {
        if (x[k, m] + 0 > xmax) xmax = x[k, m] + 0
        if (e[k, m] == "") continue
        if (lo[k, m] + 0 < ymin) ymin = lo[k, m] + 0
        if (hi[k, m] + 0 > ymax) ymax = hi[k, m] + 0
    }
    if (xmax <= 0) xmax = 1
    W = 760; H = 420; L = 70; R = 20; T = 20; B = 50
    split("#1f77b4 #d62728 #2ca02c #9467bd #ff7f0e #8c564b #e377c2 #7f7f7f", col, " ")
    print "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">" > out
    print "<title>make learn: runs side by side</title>" > out
    print "<style>body{font:14px system-ui,sans-serif;margin:1.5em} table{border-collapse:collapse}" \
          " td,th{border:1px solid #ccc;padding:2px 8px;text-align:right} td.l,th.l{text-align:left}</style>" > out
    print "</head><body><h1>make learn: runs side by side</h1>" > out
    print "<p>Ratings on the fixed anchor scale (play/scales.txt, random = 0), 95% intervals.</p>" > out
    print "<table><tr><th class=l>run</th><th>version</th><th>" xcol "</th><th>games</th><th>steps</th>" \
          "<th>Elo</th><th>95% interval</th></tr>" > out
    for (k = 0; k < n; k++) {
        if (!(k in fin)) { print "<tr><td class=l>" name[k] "</td><td colspan=6>no rated snapshot</td></tr>" > out; continue }
        m = fin[k]
        printf "<tr><td class=l style=\"color:%s\">%s</td><td>v%s</td><td>%.1f</td><td>%d</td><td>%d</td>" \
               "<td>%+.0f</td><td>[%+.0f, %+.0f]</td></tr>\n", col[k % 8 + 1], name[k], ver[k, m], x[k, m],
               games[k, m], steps[k, m], e[k, m], lo[k, m], hi[k, m] > out
    }
    print "</table>" > out
    printf "<svg width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"rating over %s\">\n", W, H, xcol > out
    printf "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fff\" stroke=\"#ccc\"/>\n", L, T, W - L - R, H - T - B > out
    for (i = 0; i <= 4; i++) {
        yv = ymin + (ymax - ymin) * i / 4; py = T + (H - T - B) * (1 - i / 4)
        printf "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%+.0f</text>\n", L - 6, py + 4, yv > out
        xv = xmax * i / 4; px = L + (W - L - R) * i / 4
        printf "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n", px, H - B + 16, sprintf(xmax < 10 ? "%.1f" : "%.0f", xv) > out
    }
    printf "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">%s</text>\n", (L + W - R) / 2, H - 12, xcol > out
    printf "<text x=\"14\" y=\"%d\" font-size=\"12\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">Elo</text>\n", (T + H - B) / 2, (T + H - B) / 2 > out
    for (k = 0; k < n; k++) {
        pts = ""
        for (m = 0; m < cnt[k]; m++) {
            if (e[k, m] == "") continue
            px = L + (W - L - R) * x[k, m] / xmax
            py = T + (H - T - B) * (1 - (e[k, m] - ymin) / (ymax - ymin))
            pl = T + (H - T - B) * (1 - (lo[k, m] - ymin) / (ymax - ymin))
            ph = T + (H - T - B) * (1 - (hi[k, m] - ymin) / (ymax - ymin))
            pts = pts sprintf("%.1f,%.1f ", px, py)
            printf "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" opacity=\"0.5\"/>\n", px, pl, px, ph, col[k % 8 + 1] > out
            printf "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s v%s: %+.0f [%+.0f, %+.0f] at %.1f</title></circle>\n", \
                   px, py, col[k % 8 + 1], name[k], ver[k, m], e[k, m], lo[k, m], hi[k, m], x[k, m] > out
        }
        printf "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n", pts, col[k % 8 + 1] > out
        printf "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"%s\">%s</text>\n", L + 10, T + 16 + 16 * k, col[k % 8 + 1], name[k] > out
    }
    print "</svg></body></html>" > out
    printf "wrote %s\n", out
}'
