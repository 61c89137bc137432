#!/usr/bin/env bash
# `make run`: the main job. Starts a whole cluster on this machine: a
# coordinator, two workers and a trainer, with their data under ./var/, and
# prints a progress line every few seconds until Ctrl-C, which stops them all
# cleanly (workers and trainer first, so that their last games and steps
# reach the coordinator, then the coordinator). Run it again and it carries on
# where it stopped: the replay store, the model registry and the trainer's
# checkpoint are all in var/.
#
#   tools/run.sh [BUILD_DIR]          (make run passes build/)
#
# Environment (all optional):
#   KZ_GAME=NAME        the game (make run GAME=NAME; default the programs' own,
#                       Khreibaga); another game's data go to ./var-NAME
#   KZ_VAR=DIR          data directory (default ./var, ./var-NAME with KZ_GAME=NAME)
#   KZ_PORT=N           coordinator requests on 127.0.0.1:N, announcements on N+1
#                       (default 5555)
#   KZ_HTTP_PORT=N      status endpoint (default 8080)
#   KZ_WORKERS=N        worker processes (default 2)
#   KZ_PROGRESS_S=S     seconds between progress lines (default 5)
#   KZ_START_S=S        how long the coordinator may take to answer at the start
#                       (default 30; a big store's check, or a sanitizer build)
#   KZ_BLOCKS, KZ_FILTERS, KZ_VALUE_HIDDEN
#                       shape of the first network of a new var/ (default 4, 32, 32;
#                       the specification's is 6, 64, 64)
#   KZ_OPP_POLICY_FILTERS, KZ_MATERIAL_FILTERS
#                       the first network's auxiliary heads (default 0, 0: none; 2
#                       and 1 turn both on); with them the coordinator stores their
#                       targets (aux_targets) and the trainer trains them
#   KZ_VALUE_WDL=0|1    the first network's value head: 1 = win/draw/loss logits
#                       (softmax, cross-entropy), 0 = one tanh output (default 0)
#   KZ_DERIVED_PLANES=0|1|auto
#                       1 = the first network also sees the game's derived input
#                       planes (Khreibaga: the pieces each side's captures take, the
#                       longest capture of each side); auto = when the game has them;
#                       default 0
#   KZ_MODEL_KIND=net|gbdt
#                       the kind of the first model of a new var/, and so of the
#                       models the trainer trains: net (a network) or gbdt
#                       (gradient-boosted trees, nn/gbdt.h); default the game's
#                       measured better one (docs/learning.md): gbdt for yinsh and
#                       yinsh-blitz, net for the others
#   KZ_COORDINATOR_OPTS, KZ_WORKER_OPTS, KZ_TRAINER_OPTS
#                       extra flags for each program ("--key=value ..."), after the
#                       .conf files, so they win (make learn's A/B runs use them)
#
# Settings: var/etc/{coordinator,worker,trainer}.conf, written with the
# defaults below on the first run; edit them and run again. The cluster runs
# authenticated (CurveZMQ, docs/security.md): var/keys/ holds a key pair per
# program (made on the first run, and for each new worker), var/etc/allow_keys
# the clients' public keys (rewritten at every start). var/log/*.log hold
# each program's log. No child outlives this script: each runs in its own
# session (Ctrl-C reaches only this script, which stops them in order) with
# a parent-death signal (SIGTERM if this script is killed outright).
set -euo pipefail

BUILD=${1:-build}
GAME=${KZ_GAME:-}
VAR=${KZ_VAR:-var${GAME:+-$GAME}}
PORT=${KZ_PORT:-5555}
HTTP_PORT=${KZ_HTTP_PORT:-8080}
N_WORKERS=${KZ_WORKERS:-2}
PROGRESS_S=${KZ_PROGRESS_S:-5}

die() { echo "run: $*" >&2; exit 1; }       # a failure at run time
bad() { echo "run: $*" >&2; exit 2; }       # bad settings
[[ -z $GAME || $GAME =~ ^[a-z0-9_-]+$ ]] || bad "KZ_GAME must be a game's name (got '$GAME')"
for v in KZ_PORT KZ_HTTP_PORT KZ_WORKERS KZ_PROGRESS_S KZ_BLOCKS KZ_FILTERS KZ_VALUE_HIDDEN \
    KZ_OPP_POLICY_FILTERS KZ_MATERIAL_FILTERS KZ_VALUE_WDL; do
    [[ -z ${!v:-} || ${!v} =~ ^[0-9]+$ ]] || bad "$v must be a number (got '${!v}')"
done
((PORT >= 1 && PORT < 65535)) || bad "KZ_PORT must be in 1..65534"
((HTTP_PORT >= 1 && HTTP_PORT <= 65535)) || bad "KZ_HTTP_PORT must be in 1..65535"
((N_WORKERS >= 1 && N_WORKERS <= 64)) || bad "KZ_WORKERS must be in 1..64"
((PROGRESS_S >= 1)) || bad "KZ_PROGRESS_S must be at least 1"

KZ=$BUILD/kz
for prog in kz kz-coordinator kz-worker kz-trainer; do
    [[ -x $BUILD/$prog ]] || die "$BUILD/$prog is not built (make)"
done
# Every program plays the game (its --game; none: their default).
GAME_OPTS=()
if [[ -n $GAME ]]; then
    GAME_OPTS=(--game="$GAME")
    why=$("$BUILD/kz" perft --game="$GAME" 1 2>&1 > /dev/null) || bad "KZ_GAME: ${why#kz: perft: }"
fi

mkdir -p "$VAR/etc" "$VAR/log" "$VAR/coordinator" "$VAR/trainer" "$VAR/keys"
VAR=$(cd "$VAR" && pwd)
BUILD=$(cd "$BUILD" && pwd)
KZ=$BUILD/kz

# One `make run` per data directory.
exec 9>"$VAR/run.lock"
flock -n 9 || die "another make run is using $VAR (see $VAR/run.lock)"

# --- the built-in configuration ----------------------------------------------------
# A network of 4 residual blocks of 32 filters (value head 32): on this
# 2-core machine it learned as fast per CPU-minute as the specification's
# 6x64 or faster in every comparison (docs/learning.md); KZ_BLOCKS=6
# KZ_FILTERS=64 KZ_VALUE_HIDDEN=64 give the specification's for a new var/.
# 200 simulations per move, self-play from the book's openings and a
# candidate every 50 training steps; every candidate becomes the generator
# at once (gate = none, AlphaZero's choice; the rating games' guard reverts
# a best rated below its predecessor): the specification's 50-game gate at
# 55% froze learning here (docs/learning.md has the measurements; gate =
# spec brings it back); var/etc/*.conf hold the rest.
BLOCKS=${KZ_BLOCKS:-4}
FILTERS=${KZ_FILTERS:-32}
VALUE_HIDDEN=${KZ_VALUE_HIDDEN:-32}
OPP_POLICY_FILTERS=${KZ_OPP_POLICY_FILTERS:-0}
MATERIAL_FILTERS=${KZ_MATERIAL_FILTERS:-0}
VALUE_WDL=${KZ_VALUE_WDL:-0}
((VALUE_WDL <= 1)) || bad "KZ_VALUE_WDL must be 0 or 1 (got '$VALUE_WDL')"
WDL_OPTS=() # the value head's and the input's options of kz model init
((VALUE_WDL == 0)) || WDL_OPTS=(--value-wdl)
# The kind of the first model: trees where they measured better at equal CPU
# (Yinsh: docs/learning.md, "Yinsh: the first learning curves").
case ${KZ_MODEL_KIND:-} in
net | gbdt) MODEL_KIND=$KZ_MODEL_KIND ;;
"") case $GAME in yinsh | yinsh-blitz) MODEL_KIND=gbdt ;; *) MODEL_KIND=net ;; esac ;;
*) bad "KZ_MODEL_KIND must be net or gbdt (got '$KZ_MODEL_KIND')" ;;
esac
DERIVED=${KZ_DERIVED_PLANES:-0}
case $DERIVED in
0) ;;
1) WDL_OPTS+=(--derived-planes) ;;
auto) WDL_OPTS+=(--derived-planes-if-any) ;;
*) bad "KZ_DERIVED_PLANES must be 0, 1 or auto (got '$DERIVED')" ;;
esac

write_default() { # file: write stdin there unless it exists
    if [[ -e $1 ]]; then cat > /dev/null; else cat > "$1"; fi
}
# Khreibaga: the sharper yardstick on the best every 10 minutes, in the
# background (docs/learning.md, "The yardstick on the dashboard").
YARDSTICK_CONF=""
POSITIONS=$(cd "$(dirname "$0")" && pwd)/bench/books/khreibaga-positions.txt
if [[ (-z $GAME || $GAME == khreibaga) && -r $POSITIONS ]]; then
    YARDSTICK_CONF="# The best's perfect-play accuracy on the book's first 100 openings and its
# value head's error by phase on labelled positions (200 of them searched at
# 200 and 1600 simulations), in the background at most every 10 minutes:
# about 10 CPU-seconds a best, 5 with tb_dir's tables (0 and \"\" turn them off).
perfect_positions = 100
value_positions = $POSITIONS
value_compare = 200
yardstick_minutes = 10"
fi

write_default "$VAR/etc/coordinator.conf" <<EOF
# kz-coordinator settings for make run (kz-coordinator --help lists them all).
# Endpoints and data_dir come from tools/run.sh (KZ_PORT, KZ_HTTP_PORT, KZ_VAR).
simulations = 200
selfplay_games = 64
# Every self-play game starts from a random opening of the book (a few
# random turns from the start, level material): against the colour bias,
# the best measured setting (docs/learning.md); 0 = the initial position.
selfplay_openings = 1
# gate: none (every candidate becomes the best; the rating guard reverts a
# regression), sprt (pentanomial SPRT on paired book openings) or spec (the
# specification's 50 games above 55%). docs/ratings.md.
gate = none
arena_games = 50
arena_threshold = 0.55
arena_per_worker = 8
# Rating games against fixed anchors: at most this share of the game time.
eval_share = 0.1
window = 500000
map_mb = 256
heartbeat_ms = 1000
expiry_ms = 10000
log_s = 60
$YARDSTICK_CONF
EOF
write_default "$VAR/etc/worker.conf" <<EOF
# kz-worker settings for make run (kz-worker --help lists them all).
# endpoint, sub_endpoint, worker_id and model_cache_dir come from tools/run.sh.
parallel = 32
threads = 1
log_s = 60
EOF
write_default "$VAR/etc/trainer.conf" <<EOF
# kz-trainer settings for make run (kz-trainer --help lists them all).
# endpoint and checkpoint_dir come from tools/run.sh.
batch_size = 256
min_positions = 4096
max_reuse = 4
steps_per_candidate = 50
checkpoint_every = 50
threads = 1
log_s = 60
EOF

# --- keys (CurveZMQ) ----------------------------------------------------------------
# A key pair per program, made once (kz keygen never overwrites one); the
# allow-list names each client's key after the id the client uses, so that
# /status shows the same ids as without keys. observer: for tools that only
# read (make learn's model downloads).
KEYS=$VAR/keys
chmod 700 "$KEYS"
HOST=$(uname -n)
keygen() { # name
    [[ -e $KEYS/$1.key ]] || "$KZ" keygen "$1" --dir "$KEYS" > /dev/null ||
        die "cannot make the key pair $KEYS/$1.key"
}
keygen coordinator
keygen trainer
keygen observer
{
    echo "# written by tools/run.sh at every start: NAME ROLE PUBLICKEY (docs/security.md)"
    echo "$HOST-trainer trainer $(cat "$KEYS/trainer.pub")"
    echo "observer observer $(cat "$KEYS/observer.pub")"
    for ((i = 1; i <= N_WORKERS; i++)); do
        keygen "worker-$i"
        echo "$HOST-run-$i worker $(cat "$KEYS/worker-$i.pub")"
    done
} > "$VAR/etc/allow_keys.tmp"
mv -f "$VAR/etc/allow_keys.tmp" "$VAR/etc/allow_keys"

ENDPOINT=tcp://127.0.0.1:$PORT
SUB_ENDPOINT=tcp://127.0.0.1:$((PORT + 1))
STATUS_URL=http://127.0.0.1:$HTTP_PORT/status
INITIAL_MODEL=$VAR/initial.model
if [[ ! -e $INITIAL_MODEL && $MODEL_KIND == gbdt ]]; then
    "$KZ" model init ${GAME_OPTS[@]+"${GAME_OPTS[@]}"} --kind gbdt "$INITIAL_MODEL" > /dev/null ||
        die "cannot create $INITIAL_MODEL"
elif [[ ! -e $INITIAL_MODEL ]]; then
    "$KZ" model init ${GAME_OPTS[@]+"${GAME_OPTS[@]}"} --blocks "$BLOCKS" --filters "$FILTERS" \
        --value-hidden "$VALUE_HIDDEN" \
        --opp-policy-filters "$OPP_POLICY_FILTERS" --material-filters "$MATERIAL_FILTERS" \
        ${WDL_OPTS[@]+"${WDL_OPTS[@]}"} \
        --seed "$(date +%s)" "$INITIAL_MODEL" > /dev/null || die "cannot create $INITIAL_MODEL"
fi
# A first network with auxiliary heads (this run's or an earlier one's): the
# coordinator stores their targets with the positions.
AUX_OPTS=()
INITIAL_INFO=$("$KZ" model info "$INITIAL_MODEL" 2> /dev/null || true)
if [[ $INITIAL_INFO == *"aux heads:     opponent policy"* ]]; then
    AUX_OPTS=(--aux_targets=true)
fi

# --- children -------------------------------------------------------------------------
declare -A PID=()     # name -> pid
declare -A CMD=()     # name -> command line (for restarts)
declare -A LAST_START=() # name -> $SECONDS at its last start
declare -A FAILS=()   # name -> exits in a row within 10 s of starting
ORDER=()              # names in start order

# (The whole help is read first: `setpriv --help | grep -q` under pipefail fails
# when grep quits at the match before setpriv has written the rest.)
if [[ $(setpriv --help 2> /dev/null) == *--pdeathsig* ]]; then
    DEATHSIG=(setpriv --pdeathsig TERM --)
else
    DEATHSIG=() # old util-linux: the watchdog below does the job
fi

# setsid gives each program its own session, and where the kernel shares CPU
# time by session (autogroups: /proc/PID/autogroup), a group's nice, not its
# processes', decides its share: `nice -n 10 make run` would still compete at
# full weight. Each program's group takes this script's nice.
AUTOGROUP=""
NICE=$(nice)
if ((NICE != 0)) && [[ -e /proc/self/autogroup ]]; then
    AUTOGROUP=$(printf '%q ' sh -c 'echo "$0" > /proc/self/autogroup 2> /dev/null; exec "$@"' \
        "$NICE")
fi

spawn() { # name: (re)start CMD[name], output appended to var/log/name.log
    local name=$1 log=$VAR/log/$1.log
    # Keep a log from growing without end: past 64 MiB it becomes name.log.1.
    if [[ -f $log ]] && (($(stat -c %s "$log") > 64 << 20)); then mv -f "$log" "$log.1"; fi
    # The subshell execs setsid, so $! is the program's pid and this script its
    # parent (what the parent-death signal watches).
    (
        exec 9>&-
        eval "exec setsid ${DEATHSIG[*]} $AUTOGROUP${CMD[$name]}"
    ) >> "$log" 2>&1 < /dev/null &
    PID[$name]=$!
    LAST_START[$name]=$SECONDS
    echo "${PID[@]}" > "$VAR/run.pids"
}

start() { # name command...
    local name=$1
    shift
    CMD[$name]=$(printf '%q ' "$@")
    ORDER+=("$name")
    spawn "$name"
}

alive() { [[ -n ${PID[$1]:-} ]] && kill -0 "${PID[$1]}" 2> /dev/null; }

stop_group() { # seconds name...: SIGTERM, wait up to the limit, then SIGKILL
    local limit=$1 name end
    shift
    for name in "$@"; do
        if alive "$name"; then kill -TERM "${PID[$name]}" 2> /dev/null || true; fi
    done
    end=$((SECONDS + limit))
    for name in "$@"; do
        while alive "$name" && ((SECONDS < end)); do sleep 0.1; done
        if alive "$name"; then
            echo "run: $name did not stop within ${limit}s; killing it"
            kill -KILL "${PID[$name]}" 2> /dev/null || true
        fi
        if [[ -n ${PID[$name]:-} ]]; then wait "${PID[$name]}" 2> /dev/null || true; fi
        PID[$name]=
    done
}

STOPPING=0
shutdown() {
    ((STOPPING)) && return
    STOPPING=1
    # Nothing may interrupt the stop: not a second Ctrl-C, not a closed
    # terminal or pipe (then the messages are lost, the order is kept).
    trap '' INT TERM HUP PIPE
    set +e
    ((${#ORDER[@]})) || return 0
    echo
    echo "run: stopping (workers and trainer first, then the coordinator) ..."
    local clients=()
    for name in "${ORDER[@]}"; do [[ $name != coordinator ]] && clients+=("$name"); done
    stop_group 30 "${clients[@]}"
    stop_group 30 coordinator
    if [[ -n ${WATCHDOG:-} ]]; then kill "$WATCHDOG" 2> /dev/null || true; fi
    rm -f "$VAR/run.pids"
    echo "run: stopped. Data in $VAR; make run continues from it."
}
trap 'shutdown; exit 130' INT
trap 'shutdown; exit 143' TERM
trap 'shutdown; exit 129' HUP
trap 'shutdown; exit 141' PIPE
trap 'shutdown' EXIT

# The children below close the lock's descriptor (9>&-): one that outlived a
# kill -9 of this script must not keep the next make run out (issue 28, #8).
status_line() { "$KZ" status "$STATUS_URL" --line 2> /dev/null 9>&-; }
# True when the coordinator answering on the status port is the one we started
# (another program may hold the port: then ours exits and must not be mistaken).
# The whole answer is read first: `kz status | grep -q` under pipefail failed
# whenever grep quit at the match before kz had written the rest (SIGPIPE),
# every time with the sanitizer build (CI's make asan).
ours() {
    local json
    json=$("$KZ" status "$STATUS_URL" --json 2> /dev/null 9>&-) || return 1
    [[ $json =~ \"name\":\ \"[^\"]*:${PID[coordinator]}\" ]]
}

# --- start ------------------------------------------------------------------------------
read -ra COORDINATOR_OPTS <<< "${KZ_COORDINATOR_OPTS:-}"
read -ra WORKER_OPTS <<< "${KZ_WORKER_OPTS:-}"
read -ra TRAINER_OPTS <<< "${KZ_TRAINER_OPTS:-}"
start coordinator "$BUILD/kz-coordinator" --config="$VAR/etc/coordinator.conf" \
    --data_dir="$VAR/coordinator" --bind="$ENDPOINT" --pub_bind="$SUB_ENDPOINT" \
    --http_bind=127.0.0.1 --http_port="$HTTP_PORT" --initial_model="$INITIAL_MODEL" \
    --curve_secret_key="$KEYS/coordinator.key" --allow_keys="$VAR/etc/allow_keys" \
    ${GAME_OPTS[@]+"${GAME_OPTS[@]}"} ${AUX_OPTS[@]+"${AUX_OPTS[@]}"} \
    ${COORDINATOR_OPTS[@]+"${COORDINATOR_OPTS[@]}"}
if ((${#DEATHSIG[@]} == 0)); then
    # Without setpriv --pdeathsig: a watchdog stops the children if this script dies.
    (
        trap '' INT
        while kill -0 $$ 2> /dev/null; do sleep 1; done
        # shellcheck disable=SC2046
        kill -TERM $(cat "$VAR/run.pids") 2> /dev/null
    ) 9>&- > /dev/null 2>&1 &
    WATCHDOG=$!
fi

# Wait until the coordinator answers (or gives up: a port in use, a bad setting).
START_S=${KZ_START_S:-30}
[[ $START_S =~ ^[0-9]+$ ]] || bad "KZ_START_S must be a number of seconds (got '$START_S')"
end=$((SECONDS + START_S))
until ours; do
    if ! alive coordinator; then
        echo "run: the coordinator did not start; the end of $VAR/log/coordinator.log:" >&2
        grep -v " config " "$VAR/log/coordinator.log" | tail -n 8 >&2
        echo "run: (another coordinator on port $PORT or $HTTP_PORT? set KZ_PORT / KZ_HTTP_PORT)" >&2
        exit 1
    fi
    ((SECONDS < end)) ||
        die "the coordinator does not answer on $STATUS_URL (see $VAR/log/coordinator.log)"
    sleep 0.2
done

for ((i = 1; i <= N_WORKERS; i++)); do
    mkdir -p "$VAR/worker-$i"
    start "worker-$i" "$BUILD/kz-worker" --config="$VAR/etc/worker.conf" \
        --endpoint="$ENDPOINT" --sub_endpoint="$SUB_ENDPOINT" \
        --worker_id="$HOST-run-$i" --model_cache_dir="$VAR/worker-$i" \
        --curve_server_key="$KEYS/coordinator.pub" --curve_secret_key="$KEYS/worker-$i.key" \
        ${GAME_OPTS[@]+"${GAME_OPTS[@]}"} ${WORKER_OPTS[@]+"${WORKER_OPTS[@]}"}
done
start trainer "$BUILD/kz-trainer" --config="$VAR/etc/trainer.conf" \
    --endpoint="$ENDPOINT" --checkpoint_dir="$VAR/trainer" --client_id="$HOST-trainer" \
    --curve_server_key="$KEYS/coordinator.pub" --curve_secret_key="$KEYS/trainer.key" \
    ${GAME_OPTS[@]+"${GAME_OPTS[@]}"} \
    ${TRAINER_OPTS[@]+"${TRAINER_OPTS[@]}"}

# The first model, as the banner shows it: the network's architecture, or the trees.
first_model() {
    "$KZ" model info "$INITIAL_MODEL" 2> /dev/null 9>&- |
        sed -n 's/^architecture: *//p; s/^describe: *gbdt/trees: gbdt/p'
}
cat << EOF
Khreibaga Zero: a coordinator, $N_WORKERS worker$( ((N_WORKERS == 1)) || echo s) and a trainer on this machine${GAME:+, playing $GAME}.
  start    $(status_line || echo "(no status)")
  model    $(first_model)
  settings $VAR/etc/{coordinator,worker,trainer}.conf
  dashboard http://127.0.0.1:$HTTP_PORT/   play http://127.0.0.1:$HTTP_PORT/play   games http://127.0.0.1:$HTTP_PORT/viewer
  status   $STATUS_URL   (or: $KZ status http://127.0.0.1:$HTTP_PORT)
  data     $VAR   logs $VAR/log/*.log
Ctrl-C stops everything; make run again continues where it stopped.
EOF

# --- progress -----------------------------------------------------------------------------
while :; do
    sleep "$PROGRESS_S" 9>&- &
    wait $! || true
    line=$(status_line) || line="coordinator not answering on $STATUS_URL"
    echo "$line"
    for name in "${ORDER[@]}"; do
        alive "$name" && continue
        if [[ -n ${PID[$name]} ]]; then
            if wait "${PID[$name]}" 2> /dev/null; then status=0; else status=$?; fi
            PID[$name]=
            lived=$((SECONDS - LAST_START[$name]))
            if ((lived < 10)); then
                FAILS[$name]=$((${FAILS[$name]:-0} + 1))
            else
                FAILS[$name]=0
            fi
            echo "run: $name exited (status $status) after ${lived}s; see $VAR/log/$name.log"
            if ((FAILS[$name] >= 3)); then
                echo "run: $name keeps failing; giving up. The end of its log:" >&2
                grep -v " config " "$VAR/log/$name.log" | tail -n 8 >&2
                exit 1
            fi
        fi
        # Restart it, not sooner than 5 seconds after its last start.
        if ((SECONDS - LAST_START[$name] >= 5)); then
            echo "run: restarting $name"
            spawn "$name"
        fi
    done
done
