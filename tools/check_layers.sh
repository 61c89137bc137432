#!/bin/sh
# check_layers: holds the tree to the layer rules of docs/architecture.md
# ("## Layers"). Its ```layers block lists folders (and, where a folder has an
# order inside it, single modules as FOLDER/MODULE) row by row, the bottom row
# first. A file may include:
#   - any header of its own folder, unless a module row says otherwise;
#   - the headers of the rows below its own (listed earlier);
# and never a header of a row above it, nor of another folder in its own row
# (wings side by side stay apart). A module named in a row of its own takes
# that row instead of its folder's: `games/game` below `games` means the
# interface may not include the games that implement it.
# Includes carry the folder ("games/game.h"); a bare "name.h" means a file of
# the includer's own folder. Its ```owners block says which modules alone may
# include a header (a library's, generated protobuf code, a game's engine) or
# write a string literal ("FOLDER/MODULE ...: WORD ..."; a folder named there
# owns the word for every file in it).
#
# Reads the #include lines and the string literals (comments left out) of the
# .c and .h files of every folder of the table; prints one line per violation
# and exits 1 if there is any, 2 if the tables cannot be read. Run by
# `make check`. Plain sh and awk (a fresh Debian has nothing more).
#
# Usage: tools/check_layers.sh [DOC [ROOT]]   (defaults docs/architecture.md, .)
set -eu
cd "$(dirname "$0")/.."
doc=${1:-docs/architecture.md}
root=${2:-.}
[ -r "$doc" ] || { echo "check_layers: cannot read $doc" >&2; exit 2; }
folders=$(awk '/^```layers/ { b = 1; next } /^```/ { b = 0 }
    b { for (i = 1; i <= NF; i++) print $i }' "$doc")
[ -n "$folders" ] || { echo "check_layers: no \`\`\`layers block in $doc" >&2; exit 2; }
files=""
for f in $folders; do
    [ -d "$root/$f" ] || continue
    for x in "$root/$f"/*.c "$root/$f"/*.h; do
        [ -f "$x" ] && files="$files $x"
    done
done

# shellcheck disable=SC2086
awk -v doc="$doc" -v root="$root/" '
function rank_of(path,   m, f) {
    m = path; sub(/\.[ch]$/, "", m)
    if (m in rank) return rank[m]
    f = m; sub(/\/[^\/]*$/, "", f)
    if (f in rank) return rank[f]
    return 0
}
function folder_of(path,   f) { f = path; sub(/\/[^\/]*$/, "", f); return f }
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
    file = FILENAME
    if (index(file, root) == 1) file = substr(file, length(root) + 1)
    sub(/^\.\//, "", file)
    mod = file; sub(/\.[ch]$/, "", mod)
    fold = folder_of(file)
    myrank = rank_of(file)
    in_comment = 0
}
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
line ~ /^[ \t]*#[ \t]*include/ {
    target = line
    sub(/^[ \t]*#[ \t]*include[ \t]*/, "", target)
    sub(/[ \t].*$/, "", target)
    word = target
    if (word ~ /^"/) { gsub(/"/, "", word) }
    if (word in owned || target in owned) {
        key = (word in owned) ? word : target
        if (!((key "|" mod) in owner) && !((key "|" fold) in owner)) {
            print file ":" FNR ": " mod " includes " target ", which only " owners_of[key] \
                  " may include (owners table of " doc ")"
            errors++
        }
        next
    }
    if (target !~ /^"/) next
    if (word !~ /\//) word = fold "/" word
    r = rank_of(word)
    if (r == 0) {
        print file ":" FNR ": " mod " includes " word \
            ", which is in no row of the layers table of " doc
        errors++
        next
    }
    if (r > myrank) {
        print file ":" FNR ": " mod " (row " myrank ": " row_text[myrank] ") includes " word \
              " (row " r ": " row_text[r] "), a row above it; see the layers table of " doc
        errors++
    } else if (r == myrank && folder_of(word) != fold) {
        print file ":" FNR ": " mod " includes " word ", a folder beside its own in row " r \
              " (" row_text[r] "): wings of one row stay apart; see the layers table of " doc
        errors++
    }
    next
}
{
    for (w in owned) {
        if (w !~ /^"/) continue
        if (index(line, w) > 0 && !((w "|" mod) in owner) && !((w "|" fold) in owner)) {
            print file ":" FNR ": " mod " writes " w ", which only " owners_of[w] \
                  " may (owners table of " doc ")"
            errors++
        }
    }
}
END {
    if (errors) {
        print "check_layers: " errors " violation(s) of the layer rules" > "/dev/stderr"
        exit 1
    }
}
' "$doc" $files
