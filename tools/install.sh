#!/bin/sh
# `make install`: copies the built programs, the systemd units of deploy/ and
# the example configuration into place.
#
#   tools/install.sh [--build=DIR] [--destdir=DIR] [--prefix=DIR]
#                    [--sysconfdir=DIR] [--unitdir=DIR] [--uninstall]
#
#   $DESTDIR$PREFIX/bin/                       kz, kz-coordinator, kz-worker, kz-trainer
#   $DESTDIR$UNITDIR/                          kz-coordinator.service, kz-worker@.service,
#                                              kz-workers.target, kz-trainer.service
#                                              (paths filled in)
#   $DESTDIR$PREFIX/share/khreibaga/examples/  coordinator.conf, worker.conf, trainer.conf
#   $DESTDIR$SYSCONFDIR/khreibaga/             the same, only where absent: an
#                                              operator's configuration is never overwritten
#   $DESTDIR$PREFIX/share/doc/khreibaga/       README.md, docs/*.md
#
# The units name the final paths ($PREFIX, $SYSCONFDIR), never $DESTDIR, so a
# staged install (DESTDIR=/tmp/pkg) works as a package would. Programs that are
# not built are skipped with a warning (their unit is still installed).
# --uninstall (`make uninstall`, same options) removes what an install put
# there, except the configuration in $SYSCONFDIR/khreibaga (an operator's
# edits) and the data of the services (/var/lib/khreibaga, the caches): it
# says how to remove those. Stop and disable the services first.
set -eu

BUILD=build
DESTDIR=
PREFIX=/usr/local
SYSCONFDIR=/etc
UNITDIR=
UNINSTALL=0
for arg in "$@"; do
    case $arg in
        --build=*) BUILD=${arg#*=} ;;
        --destdir=*) DESTDIR=${arg#*=} ;;
        --prefix=*) PREFIX=${arg#*=} ;;
        --sysconfdir=*) SYSCONFDIR=${arg#*=} ;;
        --unitdir=*) UNITDIR=${arg#*=} ;;
        --uninstall) UNINSTALL=1 ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

if [ "$UNINSTALL" = 1 ]; then
    echo "uninstall: programs, units, examples and documentation under $DESTDIR$PREFIX"
    for prog in kz kz-coordinator kz-worker kz-trainer; do
        rm -f "$DESTDIR$BINDIR/$prog"
    done
    for unit in "$SRC"/deploy/*.service "$SRC"/deploy/*.target; do
        rm -f "$DESTDIR$UNITDIR/$(basename "$unit")"
    done
    rm -rf "$DESTDIR$EXAMPLES" "$DESTDIR$DOCDIR"
    rmdir "$DESTDIR$PREFIX/share/khreibaga" 2>/dev/null || true
    if [ -z "$DESTDIR" ] && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
        systemctl daemon-reload || true
    fi
    echo "uninstall: done. Kept: the configuration in $DESTDIR$SYSCONFDIR/khreibaga/ and the"
    echo "  services' data (/var/lib/khreibaga, /var/cache/khreibaga; with DynamicUser= under"
    echo "  /var/lib/private and /var/cache/private). Remove them by hand if they must go."
    exit 0
fi

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
for unit in "$SRC"/deploy/*.service "$SRC"/deploy/*.target; do
    name=$(basename "$unit")
    sed -e "s|@BINDIR@|$BINDIR|g" -e "s|@SYSCONFDIR@|$SYSCONFDIR|g" -e "s|@DOCDIR@|$DOCDIR|g" \
        "$unit" > "$DESTDIR$UNITDIR/$name.tmp"
    chmod 644 "$DESTDIR$UNITDIR/$name.tmp"
    mv "$DESTDIR$UNITDIR/$name.tmp" "$DESTDIR$UNITDIR/$name"
done

echo "install: example configuration -> $DESTDIR$EXAMPLES"
install -d -m 755 "$DESTDIR$EXAMPLES" "$DESTDIR$SYSCONFDIR/khreibaga"
# The CurveZMQ key pairs go here (kz keygen NAME --dir ...; docs/security.md).
install -d -m 755 "$DESTDIR$SYSCONFDIR/khreibaga/keys"
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
echo "install: done. Next: the keys (README, \"Running it across machines\"; docs/security.md):"
echo "  kz keygen coordinator --dir $SYSCONFDIR/khreibaga/keys     # on the coordinator host, and"
echo "  kz keygen trainer --dir ... / kz keygen worker --dir ...   # the .pub files into allow_keys"
echo "then edit $SYSCONFDIR/khreibaga/*.conf and start, for example"
echo "  systemctl enable --now kz-coordinator kz-trainer      # on the coordinator host"
echo "  systemctl enable \$(seq -f kz-worker@%g \"\$(nproc)\")    # on every worker host: one per core"
echo "  systemctl enable --now kz-workers.target                # ... and all of them as one"
