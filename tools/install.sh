#!/bin/sh
# `make install`: copies the built programs, the systemd units of deploy/ and
# the example configuration into place.
#
#   tools/install.sh [--build=DIR] [--destdir=DIR] [--prefix=DIR]
#                    [--sysconfdir=DIR] [--unitdir=DIR]
#
#   $DESTDIR$PREFIX/bin/                       kz, kz-coordinator, kz-worker, kz-trainer
#   $DESTDIR$UNITDIR/                          kz-coordinator.service, kz-worker@.service,
#                                              kz-trainer.service (paths filled in)
#   $DESTDIR$PREFIX/share/khreibaga/examples/  coordinator.conf, worker.conf, trainer.conf
#   $DESTDIR$SYSCONFDIR/khreibaga/             the same, only where absent: an
#                                              operator's configuration is never overwritten
#   $DESTDIR$PREFIX/share/doc/khreibaga/       README.md, docs/*.md
#
# The units name the final paths ($PREFIX, $SYSCONFDIR), never $DESTDIR, so a
# staged install (DESTDIR=/tmp/pkg) works as a package would. Programs that are
# not built are skipped with a warning (their unit is still installed).
set -eu

BUILD=build
DESTDIR=
PREFIX=/usr/local
SYSCONFDIR=/etc
UNITDIR=
for arg in "$@"; do
    case $arg in
        --build=*) BUILD=${arg#*=} ;;
        --destdir=*) DESTDIR=${arg#*=} ;;
        --prefix=*) PREFIX=${arg#*=} ;;
        --sysconfdir=*) SYSCONFDIR=${arg#*=} ;;
        --unitdir=*) UNITDIR=${arg#*=} ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
    esac
done
for dir in "$PREFIX" "$SYSCONFDIR"; do
    case $dir in
        /*) ;;
        *) echo "install: '$dir' is not an absolute path" >&2; exit 2 ;;
    esac
done
[ -n "$UNITDIR" ] || UNITDIR=$PREFIX/lib/systemd/system
SRC=$(cd "$(dirname "$0")/.." && pwd)
BINDIR=$PREFIX/bin
DOCDIR=$PREFIX/share/doc/khreibaga
EXAMPLES=$PREFIX/share/khreibaga/examples

[ -x "$BUILD/kz" ] || { echo "install: $BUILD/kz is not built (run make first)" >&2; exit 1; }

echo "install: programs -> $DESTDIR$BINDIR"
install -d -m 755 "$DESTDIR$BINDIR"
for prog in kz kz-coordinator kz-worker kz-trainer; do
    if [ -x "$BUILD/$prog" ]; then
        install -m 755 "$BUILD/$prog" "$DESTDIR$BINDIR/$prog"
    else
        echo "install: warning: $BUILD/$prog is not built; skipped" >&2
    fi
done

echo "install: systemd units -> $DESTDIR$UNITDIR"
install -d -m 755 "$DESTDIR$UNITDIR"
for unit in "$SRC"/deploy/*.service; do
    name=$(basename "$unit")
    sed -e "s|@BINDIR@|$BINDIR|g" -e "s|@SYSCONFDIR@|$SYSCONFDIR|g" -e "s|@DOCDIR@|$DOCDIR|g" \
        "$unit" > "$DESTDIR$UNITDIR/$name.tmp"
    chmod 644 "$DESTDIR$UNITDIR/$name.tmp"
    mv "$DESTDIR$UNITDIR/$name.tmp" "$DESTDIR$UNITDIR/$name"
done

echo "install: example configuration -> $DESTDIR$EXAMPLES"
install -d -m 755 "$DESTDIR$EXAMPLES" "$DESTDIR$SYSCONFDIR/khreibaga"
for conf in "$SRC"/deploy/*.conf; do
    name=$(basename "$conf")
    install -m 644 "$conf" "$DESTDIR$EXAMPLES/$name"
    if [ -e "$DESTDIR$SYSCONFDIR/khreibaga/$name" ]; then
        echo "install: keeping $DESTDIR$SYSCONFDIR/khreibaga/$name (example in $EXAMPLES)"
    else
        install -m 644 "$conf" "$DESTDIR$SYSCONFDIR/khreibaga/$name"
        echo "install: $DESTDIR$SYSCONFDIR/khreibaga/$name (edit it)"
    fi
done

install -d -m 755 "$DESTDIR$DOCDIR"
install -m 644 "$SRC/README.md" "$DESTDIR$DOCDIR/README.md"
for doc in "$SRC"/docs/*.md; do
    [ -e "$doc" ] && install -m 644 "$doc" "$DESTDIR$DOCDIR/$(basename "$doc")"
done

if [ -z "$DESTDIR" ] && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
fi
echo "install: done. Next: edit $SYSCONFDIR/khreibaga/*.conf, then for example"
echo "  systemctl enable --now kz-coordinator kz-trainer      # on the coordinator host"
echo "  systemctl enable --now kz-worker@{1..$(nproc 2>/dev/null || echo N)}              # on every worker host"
