#!/bin/sh
# check_layers: holds common/ to the layer rules of docs/architecture.md
# ("## Layers"). Its ```layers block lists the modules row by row, the bottom
# row first: a module may include the headers of its own row and of the rows
# above, never of a row below. Its ```owners block says which modules alone
# may include a header (a library's, generated protobuf code) or write a
# string literal ("MODULE ...: WORD ...").
#
# Reads the #include lines and the string literals (comments left out) of
# common/*.c and common/*.h; prints one line per violation and exits 1 if
# there is any, 2 if the tables cannot be read. Run by `make check`.
# Plain sh and awk (a fresh Debian has nothing more).
#
# Usage: tools/check_layers.sh [DOC [DIR]]   (defaults docs/architecture.md, common)
set -eu
cd "$(dirname "$0")/.."
doc=${1:-docs/architecture.md}
dir=${2:-common}
[ -r "$doc" ] || { echo "check_layers: cannot read $doc" >&2; exit 2; }

awk -v doc="$doc" '
# Step 1. The tables, from the document (the first file).
FNR == NR {
    if ($0 ~ /^```layers/) { block = "layers"; next }
    if ($0 ~ /^```owners/) { block = "owners"; next }
    if ($0 ~ /^```/) { block = ""; next }
    if (block == "layers" && NF > 0) {
        rows++
        row_text[rows] = $0
        for (i = 1; i <= NF; i++) rank[$i] = rows
    } else if (block == "owners" && NF > 0) {
        split($0, half, ":")
        n_mods = split(half[1], mods, " ")
        n_words = split(substr($0, length(half[1]) + 2), words, " ")
        for (w = 1; w <= n_words; w++) {
            owned[words[w]] = 1
            for (m = 1; m <= n_mods; m++) owner[words[w] "|" mods[m]] = 1
            owners_of[words[w]] = half[1]
        }
    }
    next
}
FNR == 1 {
    if (rows == 0) {
        print "check_layers: no ```layers block in " doc > "/dev/stderr"
        bad_tables = 1
        exit 2
    }
    mod = FILENAME
    sub(/.*\//, "", mod)
    sub(/\.[ch]$/, "", mod)
    in_comment = 0
    if (!(mod in rank)) {
        print FILENAME ": module " mod " is in no row of the layers table of " doc
        errors++
    }
}
# Step 2. Comments out of the way (string literals are looked for in code only).
{
    line = $0
    if (in_comment) {
        if (index(line, "*/") == 0) next
        line = substr(line, index(line, "*/") + 2)
        in_comment = 0
    }
    while ((p = index(line, "/*")) > 0) {
        rest = substr(line, p + 2)
        q = index(rest, "*/")
        if (q == 0) { line = substr(line, 1, p - 1); in_comment = 1; break }
        line = substr(line, 1, p - 1) " " substr(rest, q + 2)
    }
    sub(/\/\/.*/, "", line)
}
# Step 3. Includes: the row of the included module, the owner of a header.
line ~ /^[ \t]*#[ \t]*include/ {
    target = line
    sub(/^[ \t]*#[ \t]*include[ \t]*/, "", target)
    sub(/[ \t].*$/, "", target)
    word = target
    if (word ~ /^"/) { gsub(/"/, "", word) }
    if (word in owned || target in owned) {
        key = (word in owned) ? word : target
        if (!((key "|" mod) in owner)) {
            print FILENAME ":" FNR ": " mod " includes " target ", which only " owners_of[key] \
                  " may include (owners table of " doc ")"
            errors++
        }
        next
    }
    if (target !~ /^"/) next
    inc = word
    sub(/\.h$/, "", inc)
    if (!(inc in rank) || !(mod in rank)) {
        if (!(inc in rank)) {
            print FILENAME ":" FNR ": " mod " includes " word ", a module in no row of the layers table of " doc
            errors++
        }
        next
    }
    if (rank[inc] > rank[mod]) {
        print FILENAME ":" FNR ": " mod " (row " rank[mod] ": " row_text[rank[mod]] ") includes " \
              word " (row " rank[inc] ": " row_text[rank[inc]] "), a row below it; see the layers table of " doc
        errors++
    }
    next
}
# Step 4. Owned string literals.
{
    for (w in owned) {
        if (w !~ /^"/) continue
        if (index(line, w) > 0 && !((w "|" mod) in owner)) {
            print FILENAME ":" FNR ": " mod " writes " w ", which only " owners_of[w] \
                  " may (owners table of " doc ")"
            errors++
        }
    }
}
END {
    if (bad_tables) exit 2
    if (errors) {
        print "check_layers: " errors " violation(s) of the layer rules" > "/dev/stderr"
        exit 1
    }
}
' "$doc" "$dir"/*.c "$dir"/*.h
