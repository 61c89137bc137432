#!/bin/sh
# draw_layers: draws docs/architecture.md's layers table as a picture of
# floors (SVG on standard output): the ground at the bottom, each floor's
# folders side by side, each folder with its modules (the .c files found in
# it). The table is the one tools/check_layers.sh enforces, so the picture
# and the check cannot disagree.
#
# Usage: tools/draw_layers.sh [DOC] > docs/img/layers.svg
set -eu
cd "$(dirname "$0")/.."
doc=${1:-docs/architecture.md}
[ -r "$doc" ] || { echo "draw_layers: cannot read $doc" >&2; exit 2; }
rows=$(awk '/^```layers/ { b = 1; next } /^```/ { b = 0 } b && NF { print }' "$doc")
[ -n "$rows" ] || { echo "draw_layers: no layers block in $doc" >&2; exit 2; }
# One line per entry: floor<TAB>entry<TAB>modules
i=0
echo "$rows" | while read -r line; do
    i=$((i + 1))
    for e in $line; do
        if [ -d "$e" ]; then
            mods=$(ls "$e"/*.c 2>/dev/null | sed 's|.*/||; s|\.c$||' | tr '\n' ' ')
        else
            mods="(one module: its own floor)"
        fi
        printf '%s\t%s\t%s\n' "$i" "$e" "$mods"
    done
done | awk -F '\t' '
{ floor[NR] = $1; name[NR] = $2; mods[NR] = $3; n = NR; if ($1 > top) top = $1;
  count[$1]++ }
END {
    W = 1100; H = 52; gap = 10; pad = 14
    height = top * (H + gap) + 2 * pad + 24
    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"DejaVu Sans, sans-serif\">\n", W, height
    printf "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n"
    printf "<text x=\"%d\" y=\"%d\" font-size=\"13\" fill=\"#444\">Floors of the tree (docs/architecture.md, Layers): a folder includes its own and lower floors only</text>\n", pad, pad + 10
    for (f = 1; f <= top; f++) seen[f] = 0
    for (k = 1; k <= n; k++) {
        f = floor[k]
        y = height - pad - f * (H + gap) + gap
        w = (W - 2 * pad - 60 - (count[f] - 1) * gap) / count[f]
        x = pad + 60 + seen[f] * (w + gap)
        seen[f]++
        hue = (f * 47) % 360
        printf "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"6\" fill=\"hsl(%d,55%%,88%%)\" stroke=\"hsl(%d,40%%,45%%)\"/>\n", x, y, w, H, hue, hue
        printf "<text x=\"%d\" y=\"%d\" font-size=\"15\" font-weight=\"bold\" fill=\"#222\">%s</text>\n", x + 8, y + 20, name[k]
        m = mods[k]; gsub(/ +$/, "", m); gsub(/ /, ", ", m)
        if (length(m) > int(w / 6.2)) m = substr(m, 1, int(w / 6.2) - 3) "..."
        printf "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#333\">%s</text>\n", x + 8, y + 40, m
        if (seen[f] == 1)
            printf "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#666\">floor %d</text>\n", pad, y + 31, f
    }
    print "</svg>"
}'
