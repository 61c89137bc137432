#!/bin/sh
# Installs the Debian packages the build needs, only when pkg-config (or the
# tool itself) cannot find them. Called by `make deps` and before every build.
# Through sudo when not root. Prints nothing when all is present.
set -eu
missing=""
need_pkg() { pkg-config --exists "$1" 2>/dev/null || missing="$missing $2"; }
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
need_cmd pkg-config pkg-config
need_cmd gcc gcc
need_cmd protoc-c protobuf-c-compiler
# GNU Backgammon: the backgammon tests' referee and the gnubg:LEVEL player
# (Debian installs it in /usr/games, not always on the PATH).
[ -x /usr/games/gnubg ] || command -v gnubg >/dev/null 2>&1 || missing="$missing gnubg"
if command -v pkg-config >/dev/null 2>&1; then
    need_pkg libzmq libzmq3-dev
    need_pkg libprotobuf-c libprotobuf-c-dev
    need_pkg lmdb liblmdb-dev
    need_pkg openblas libopenblas-dev
    need_pkg criterion libcriterion-dev
    need_pkg libmicrohttpd libmicrohttpd-dev
    need_pkg xgboost libxgboost-dev
else
    missing="$missing libzmq3-dev libprotobuf-c-dev liblmdb-dev libopenblas-dev libcriterion-dev"
    missing="$missing libmicrohttpd-dev libxgboost-dev"
fi
[ -z "$missing" ] && exit 0
echo "deps: installing missing Debian packages:$missing" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
        echo "deps: not root and no sudo; install as root:$missing" >&2
        exit 1
    }
    SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >&2
