#!/bin/sh
# `make run`: the main job. Until the cluster lands this plays a short demo:
# a random game, drawn in the terminal after every turn.
set -eu
BUILD=${1:-build}
echo "Khreibaga Zero demo: a random game (the cluster replaces this demo)."
exec "$BUILD/kz" random-game --seed "$(date +%s)" --show
