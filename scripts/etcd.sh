#!/usr/bin/env bash
# Gets a real etcd (no root install) and runs throwaway etcd servers on 127.0.0.1: single-member
# ones, or the members of a cluster.
#
#   scripts/etcd.sh path  [--version 3.5|3.4]
#       Prints the path of an etcd binary of that version, fetching it first if needed.
#   scripts/etcd.sh start [--version 3.5|3.4] [--data-dir DIR] [--port N] [--unsafe]
#                         [--progress-interval DURATION] [--exit-with PID] [--cleanup-data-dir]
#                         [--name NAME --peer-port P --initial-cluster NAME=URL,...
#                          [--initial-cluster-state new|existing] [--initial-cluster-token T]]
#       Starts etcd in the background and waits until it answers. Prints on stdout exactly:
#           ENDPOINT=http://127.0.0.1:<port>
#           PID=<etcd pid>
#           DATA_DIR=<data dir>
#       The server log goes to DATA_DIR/etcd.log.
#   scripts/etcd.sh stop PID
#       Stops that etcd (SIGTERM, then SIGKILL after 10 s), and removes its data dir if `start`
#       created it (a --data-dir you named is kept).
#
# Versions:
#   3.5 (default) means "3.5 or newer": an `etcd` on PATH that reports >= 3.5, else Debian 13
#       (trixie)'s etcd-server package (3.5.16), which runs fine on Debian 12.
#   3.4 means Debian 12 (bookworm)'s etcd-server 3.4.23 (an `etcd` 3.4.x on PATH is used if present):
#       an old etcd with known watch bugs, used to test feature gates.
#   Packages are downloaded with `apt-get download` against a temporary sources list (the machine's
#   own apt setup is not touched, nothing is installed) and unpacked with `dpkg -x` into
#   ${LISTWATCH_CACHE:-$HOME/.cache/listwatch}/etcd-<upstream version>/, from
#   ${LISTWATCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}.
#
# start options:
#   --data-dir DIR        default: a fresh directory under /dev/shm (or $TMPDIR when /dev/shm is absent)
#   --port N              client port (default: a free one); --client-port N is the same option
#   --unsafe              adds --unsafe-no-fsync (much faster; for tests only)
#   --progress-interval D --experimental-watch-progress-notify-interval (default 5s, as Kubernetes sets it)
#   --exit-with PID       a watchdog kills this etcd when process PID exits (tests pass their own pid,
#                         so a crashed or killed test run leaves no etcd behind)
#   --cleanup-data-dir    with --exit-with: the watchdog also removes the data dir when PID exits
#                         (implied when the data dir is the default fresh one)
#   --name NAME           the member's name (default: listwatch)
#   --peer-port P         the peer (raft) port (default: a free one)
#   --initial-cluster C   every member as NAME=http://127.0.0.1:PEER_PORT, comma-separated, this one
#                         (--name at --peer-port) among them (default: this member alone). A member
#                         of a cluster needs its peers' URLs before any of them runs, so the caller
#                         picks every port: start each member with its own --name, --peer-port and
#                         --port, concurrently (each waits for a quorum to answer; one alone never
#                         does), e.g. for three members:
#                           C=m0=http://127.0.0.1:2380,m1=http://127.0.0.1:2382,m2=http://127.0.0.1:2384
#                           scripts/etcd.sh start --name m0 --peer-port 2380 --port 2379 --initial-cluster $C &
#                           scripts/etcd.sh start --name m1 --peer-port 2382 --port 2381 --initial-cluster $C &
#                           scripts/etcd.sh start --name m2 --peer-port 2384 --port 2383 --initial-cluster $C &
#                           wait
#                         A member restarted on its data dir rejoins whatever the flags say (etcd
#                         reads the cluster from its data); pass `existing` for clarity.
#   --initial-cluster-state new|existing
#                         `new` (default) bootstraps a cluster; `existing` joins a running one
#   --initial-cluster-token T
#                         etcd's cluster token (default etcd's own): members of different clusters
#                         with the same token and overlapping peer URLs could talk to each other
#
# A member waits up to 30 s for /health, which needs a leader: a member whose cluster has no
# quorum (a first start whose peers were not started too, or a restart while most members are
# down) fails to start. Start or restart enough members at once.
set -euo pipefail

readonly CACHE_ROOT="${LISTWATCH_CACHE:-${HOME:?HOME is not set; set LISTWATCH_CACHE}/.cache/listwatch}"
readonly DEBIAN_MIRROR="${LISTWATCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

# Put in data dirs that start created itself; `stop` removes such a dir.
readonly EPHEMERAL_MARKER=.listwatch-ephemeral

# A download in progress; removed on any exit (including `die`).
FETCH_WORK=""
trap '[[ -z $FETCH_WORK ]] || rm -rf "$FETCH_WORK"' EXIT

die() {
    echo "etcd.sh: error: $*" >&2
    exit 1
}

note() {
    echo "etcd.sh: $*" >&2
}

# The header comment above, as help; exits with $1.
usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit "$1"
}

# --- obtaining etcd ------------------------------------------------------------------------------

# "etcd Version: 3.5.16" -> "3.5.16"
etcd_version_of() {
    "$1" --version 2>/dev/null | sed -n 's/^etcd Version: *//p' | head -n1
}

# Whether version $1 satisfies the wanted series $2 (3.5 = ">= 3.5", 3.4 = "3.4.x").
version_fits() {
    local version=$1 wanted=$2 major minor
    IFS=. read -r major minor _ <<<"$version"
    [[ $major =~ ^[0-9]+$ && $minor =~ ^[0-9]+$ ]] || return 1
    case $wanted in
        3.4) ((major == 3 && minor == 4)) ;;
        3.5) ((major > 3 || (major == 3 && minor >= 5))) ;;
        *) return 1 ;;
    esac
}

# The newest already-unpacked etcd of the wanted series in the cache, if any.
cached_etcd() {
    local wanted=$1 dir
    [[ -d $CACHE_ROOT ]] || return 1
    while read -r dir; do
        [[ -x $dir/usr/bin/etcd ]] || continue
        if version_fits "${dir##*/etcd-}" "$wanted"; then
            echo "$dir/usr/bin/etcd"
            return 0
        fi
    done < <(find "$CACHE_ROOT" -maxdepth 1 -type d -name 'etcd-*' | sort -rV)
    return 1
}

# Downloads etcd-server from the given Debian suite and unpacks it into the cache.
fetch_etcd() {
    local suite=$1 wanted=$2 work
    command -v apt-get >/dev/null || die "apt-get not found: cannot download etcd $wanted (install etcd >= 3.5 on PATH instead)"
    command -v dpkg >/dev/null || die "dpkg not found: cannot unpack etcd $wanted"
    mkdir -p "$CACHE_ROOT"
    work=$(mktemp -d "$CACHE_ROOT/.fetch.XXXXXX")
    FETCH_WORK=$work
    mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/deb"
    echo "deb $DEBIAN_MIRROR $suite main" >"$work/sources.list"
    local apt_opts=(
        -o "Dir::Etc::SourceList=$work/sources.list"
        -o "Dir::Etc::SourceParts=/dev/null"
        -o "Dir::State::Lists=$work/lists"
        -o "Dir::Cache=$work/cache"
        # Only the package index is needed, not translations or AppStream metadata.
        -o "Acquire::Languages=none"
        -o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false"
        -o "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false"
        -o "Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false"
        # A frozen snapshot or an old mirror may serve a Release file past its Valid-Until.
        -o "Acquire::Check-Valid-Until=false"
        # Our own temporary dirs: no need for apt's `_apt` download sandbox (which cannot write
        # into a private mktemp dir anyway), and it lets this run without root.
        -o "APT::Sandbox::User=$(id -un)"
    )
    note "downloading Debian $suite's etcd-server (etcd $wanted) from $DEBIAN_MIRROR"
    local signature_problem='NO_PUBKEY|EXPKEYSIG|KEYEXPIRED|is not signed|signatures? (were|was|couldn)'
    if apt-get "${apt_opts[@]}" update >"$work/update.log" 2>&1 &&
        ! grep -qE "$signature_problem" "$work/update.log"; then
        :
    elif grep -qE "$signature_problem" "$work/update.log"; then
        # Debian 12's debian-archive-keyring (2023.3+deb12u2) knows trixie's keys, so this does
        # not happen on an up-to-date Debian 12; an older keyring cannot verify trixie. Retry
        # unauthenticated ([trusted=yes]) from the same official mirror, and say so loudly.
        cat "$work/update.log" >&2
        note "WARNING: the archive keyring cannot verify Debian $suite's Release file; retrying WITHOUT signature checks ([trusted=yes])"
        echo "deb [trusted=yes] $DEBIAN_MIRROR $suite main" >"$work/sources.list"
        apt_opts+=(-o "Acquire::AllowInsecureRepositories=true")
        apt-get "${apt_opts[@]}" update >"$work/update.log" 2>&1 ||
            { cat "$work/update.log" >&2; die "apt-get update for Debian $suite failed (see above)"; }
    else
        cat "$work/update.log" >&2
        die "apt-get update for Debian $suite failed (see above); is $DEBIAN_MIRROR reachable?"
    fi
    # apt-get update exits 0 even when it could fetch nothing.
    if grep -qE '^(W|E): (Failed to fetch|Some index files failed)' "$work/update.log"; then
        cat "$work/update.log" >&2
        die "apt-get update could not fetch Debian $suite's package index from $DEBIAN_MIRROR (see above)"
    fi
    (cd "$work/deb" && apt-get "${apt_opts[@]}" download etcd-server) >"$work/download.log" 2>&1 ||
        { cat "$work/download.log" >&2; die "apt-get download etcd-server (Debian $suite) failed (see above)"; }
    local deb
    deb=$(find "$work/deb" -name 'etcd-server_*.deb' | head -n1)
    [[ -n $deb ]] || die "apt-get download etcd-server (Debian $suite) produced no .deb"
    dpkg -x "$deb" "$work/root" || die "dpkg -x $deb failed"
    local etcd_version
    etcd_version=$(etcd_version_of "$work/root/usr/bin/etcd")
    [[ -n $etcd_version ]] || die "the etcd in $deb does not run (etcd --version failed)"
    version_fits "$etcd_version" "$wanted" ||
        die "Debian $suite's etcd-server is etcd $etcd_version, not $wanted"
    local dest="$CACHE_ROOT/etcd-$etcd_version"
    rm -rf "$dest"
    mv "$work/root" "$dest"
    rm -rf "$work"
    FETCH_WORK=""
    note "etcd $etcd_version unpacked into $dest"
}

# Prints the path of an etcd binary of the wanted series, fetching it if needed.
etcd_path() {
    local wanted=$1 found
    if found=$(command -v etcd 2>/dev/null) && version_fits "$(etcd_version_of "$found")" "$wanted"; then
        echo "$found"
        return
    fi
    if found=$(cached_etcd "$wanted"); then
        echo "$found"
        return
    fi
    local suite
    case $wanted in
        3.5) suite=trixie ;;
        3.4) suite=bookworm ;;
        *) die "unsupported --version '$wanted' (use 3.5 or 3.4)" ;;
    esac
    mkdir -p "$CACHE_ROOT"
    command -v flock >/dev/null || die "flock (util-linux) not found"
    # Serialize concurrent fetches (parallel test processes) on one lock; the loser finds the cache.
    exec {lock_fd}>"$CACHE_ROOT/.fetch-$wanted.lock"
    flock "$lock_fd"
    if ! found=$(cached_etcd "$wanted"); then
        fetch_etcd "$suite" "$wanted"
        found=$(cached_etcd "$wanted") || die "etcd $wanted was fetched but is not in $CACHE_ROOT"
    fi
    exec {lock_fd}>&-
    echo "$found"
}

# --- running etcd --------------------------------------------------------------------------------

# Whether 127.0.0.1:$1 accepts connections.
port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Prints a port nobody listens on. python3 asks the kernel for one (bind to port 0); the fallback
# probes random ports. Either way another process may take it before etcd does: start retries.
free_port() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null && return
    fi
    local port
    for _ in $(seq 100); do
        port=$((20000 + RANDOM % 30000))
        port_in_use "$port" || { echo "$port"; return; }
    done
    die "found no free port on 127.0.0.1"
}

# Whether $1 is a live (not zombie) process.
alive() {
    local state
    [[ -r /proc/$1/stat ]] || return 1
    state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
    [[ -n $state && $state != Z && $state != X ]]
}

# Whether $1 is still the etcd we started on data dir $2 (guards against pid reuse).
is_our_etcd() {
    alive "$1" && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "--data-dir $2 "
}

# Background loop: when process $1 exits, kill etcd $2 (if still ours) and maybe remove data dir $3.
watchdog() {
    local parent=$1 etcd_pid=$2 data_dir=$3 cleanup=$4
    while alive "$parent"; do
        # Nothing left to guard: etcd is gone and there is no data dir to remove (or it is
        # already removed).
        if ! is_our_etcd "$etcd_pid" "$data_dir" && [[ $cleanup != 1 || ! -d $data_dir ]]; then
            return 0
        fi
        sleep 1
    done
    if is_our_etcd "$etcd_pid" "$data_dir"; then
        kill -KILL "$etcd_pid" 2>/dev/null || true
        for _ in $(seq 50); do alive "$etcd_pid" || break; sleep 0.1; done
    fi
    if [[ $cleanup == 1 ]]; then
        rm -rf "$data_dir"
    fi
}

cmd_start() {
    local version=3.5 data_dir="" port="" unsafe=0 progress_interval=5s exit_with="" cleanup=0
    local name=listwatch peer_port="" initial_cluster="" cluster_state=new cluster_token=""
    while (($#)); do
        case $1 in
            --version) version=${2:?--version needs a value}; shift 2 ;;
            --data-dir) data_dir=${2:?--data-dir needs a value}; shift 2 ;;
            --port | --client-port) port=${2:?$1 needs a value}; shift 2 ;;
            --unsafe) unsafe=1; shift ;;
            --progress-interval) progress_interval=${2:?--progress-interval needs a value}; shift 2 ;;
            --exit-with) exit_with=${2:?--exit-with needs a pid}; shift 2 ;;
            --cleanup-data-dir) cleanup=1; shift ;;
            --name) name=${2:?--name needs a value}; shift 2 ;;
            --peer-port) peer_port=${2:?--peer-port needs a value}; shift 2 ;;
            --initial-cluster) initial_cluster=${2:?--initial-cluster needs a value}; shift 2 ;;
            --initial-cluster-state) cluster_state=${2:?--initial-cluster-state needs a value}; shift 2 ;;
            --initial-cluster-token) cluster_token=${2:?--initial-cluster-token needs a value}; shift 2 ;;
            *) die "start: unknown option '$1'" ;;
        esac
    done
    [[ -z $port || $port =~ ^[0-9]+$ ]] || die "--port must be a number, got '$port'"
    [[ -z $peer_port || $peer_port =~ ^[0-9]+$ ]] || die "--peer-port must be a number, got '$peer_port'"
    [[ -z $exit_with || $exit_with =~ ^[0-9]+$ ]] || die "--exit-with must be a pid, got '$exit_with'"
    [[ $name =~ ^[A-Za-z0-9_.-]+$ ]] || die "--name must be letters, digits, '_', '.' or '-', got '$name'"
    [[ $cluster_state == new || $cluster_state == existing ]] ||
        die "--initial-cluster-state must be new or existing, got '$cluster_state'"
    if [[ -n $initial_cluster ]]; then
        # Every peer URL is fixed up front, so this member's cannot be picked here.
        [[ -n $peer_port ]] || die "--initial-cluster needs --peer-port (this member's port in it)"
        [[ ,$initial_cluster, == *",$name=http://127.0.0.1:$peer_port,"* ]] ||
            die "--initial-cluster '$initial_cluster' does not list this member as $name=http://127.0.0.1:$peer_port"
    fi

    local etcd
    etcd=$(etcd_path "$version")
    local etcd_version
    etcd_version=$(etcd_version_of "$etcd")

    if [[ -z $data_dir ]]; then
        local base=/dev/shm
        [[ -d $base && -w $base ]] || base=${TMPDIR:-/tmp}
        data_dir=$(mktemp -d "$base/listwatch-etcd.XXXXXX")
        # Marks the dir as ours to delete: by `stop`, and by the watchdog.
        touch "$data_dir/$EPHEMERAL_MARKER"
        cleanup=1
    fi
    mkdir -p "$data_dir"
    data_dir=$(cd "$data_dir" && pwd -P)
    # etcd refuses a data dir that others can read.
    chmod 700 "$data_dir"
    local log="$data_dir/etcd.log"

    local extra=()
    # The flag lost its "experimental-" prefix in 3.6 (the old name is deprecated there).
    local etcd_help
    etcd_help=$("$etcd" --help 2>&1 || true)
    if grep -qE -- '^ *--watch-progress-notify-interval' <<<"$etcd_help"; then
        extra+=(--watch-progress-notify-interval "$progress_interval")
    else
        extra+=(--experimental-watch-progress-notify-interval "$progress_interval")
    fi
    if ((unsafe)); then
        # Debian's 3.4.23 accepts the flag but does not list it in --help: ask the flag parser.
        if "$etcd" --unsafe-no-fsync --version >/dev/null 2>&1; then
            extra+=(--unsafe-no-fsync)
        else
            note "etcd $etcd_version has no --unsafe-no-fsync; running with fsync"
        fi
    fi
    if [[ -n $cluster_token ]]; then
        extra+=(--initial-cluster-token "$cluster_token")
    fi

    local attempt client_port member_peer_port members pid=""
    for attempt in 1 2 3 4 5; do
        client_port=${port:-$(free_port)}
        member_peer_port=${peer_port:-$(free_port)}
        [[ $member_peer_port != "$client_port" ]] || continue
        members=${initial_cluster:-$name=http://127.0.0.1:$member_peer_port}
        {
            echo "=== $(date -Is) etcd $etcd_version $name ($cluster_state): client port $client_port, peer port $member_peer_port, cluster $members"
        } >>"$log"
        # etcd runs in its own session, with no terminal and none of our pipes open (whoever
        # reads our stdout, e.g. a test harness, sees EOF as soon as this script exits).
        setsid "$etcd" \
            --name "$name" \
            --data-dir "$data_dir" \
            --listen-client-urls "http://127.0.0.1:$client_port" \
            --advertise-client-urls "http://127.0.0.1:$client_port" \
            --listen-peer-urls "http://127.0.0.1:$member_peer_port" \
            --initial-advertise-peer-urls "http://127.0.0.1:$member_peer_port" \
            --initial-cluster "$members" \
            --initial-cluster-state "$cluster_state" \
            "${extra[@]}" \
            </dev/null >>"$log" 2>&1 &
        pid=$!

        # Up to 30 s: a first start on a slow disk, a restart replaying a large WAL, or a cluster
        # whose members are still starting takes time.
        local ready=0
        for _ in $(seq 300); do
            if ! alive "$pid"; then
                break
            fi
            if curl -fsS -m 1 "http://127.0.0.1:$client_port/health" 2>/dev/null | grep -q '"health":"true"'; then
                ready=1
                break
            fi
            sleep 0.1
        done
        if ((ready)); then
            break
        fi
        if alive "$pid"; then
            kill -KILL "$pid" 2>/dev/null || true
            tail -n 20 "$log" >&2
            die "etcd (pid $pid) did not become healthy on 127.0.0.1:$client_port within 30 s; log: $log"
        fi
        pid=""
        # It exited: a port taken in the meantime is worth another try with new ports (only if
        # we picked both: a cluster member's ports are in its peers' flags).
        if [[ -z $port && -z $peer_port ]] && grep -q 'address already in use' "$log"; then
            note "port clash on attempt $attempt, retrying with other ports"
            continue
        fi
        tail -n 20 "$log" >&2
        die "etcd exited during startup; log: $log"
    done
    [[ -n $pid ]] || die "could not start etcd: no free port pair after 5 attempts; log: $log"

    if [[ -n $exit_with ]]; then
        watchdog "$exit_with" "$pid" "$data_dir" "$cleanup" </dev/null >/dev/null 2>&1 &
        disown
    fi

    echo "ENDPOINT=http://127.0.0.1:$client_port"
    echo "PID=$pid"
    echo "DATA_DIR=$data_dir"
}

cmd_stop() {
    local pid=${1:-}
    [[ $pid =~ ^[0-9]+$ ]] || die "stop: expected a pid, got '${pid}'"
    if ! alive "$pid"; then
        note "process $pid is not running"
        return 0
    fi
    local cmdline data_dir
    cmdline=$(tr '\0' '\n' <"/proc/$pid/cmdline")
    grep -q 'etcd$' <<<"$(head -n1 <<<"$cmdline")" || die "process $pid is not an etcd"
    data_dir=$(grep -A1 -x -- '--data-dir' <<<"$cmdline" | tail -n1)
    kill -TERM "$pid"
    local stopped=0
    for _ in $(seq 100); do
        alive "$pid" || { stopped=1; break; }
        sleep 0.1
    done
    if ((!stopped)); then
        note "etcd $pid ignored SIGTERM for 10 s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        for _ in $(seq 50); do
            alive "$pid" || { stopped=1; break; }
            sleep 0.1
        done
        ((stopped)) || die "etcd $pid did not exit"
    fi
    # A data dir that `start` made up is removed; one the caller named is left alone.
    if [[ -n $data_dir && -f $data_dir/$EPHEMERAL_MARKER ]]; then
        rm -rf "$data_dir"
    fi
}

main() {
    local command=${1:-}
    (($#)) && shift
    case $command in
        path)
            local version=3.5
            while (($#)); do
                case $1 in
                    --version) version=${2:?--version needs a value}; shift 2 ;;
                    *) die "path: unknown option '$1'" ;;
                esac
            done
            etcd_path "$version"
            ;;
        start) cmd_start "$@" ;;
        stop) cmd_stop "$@" ;;
        -h | --help | help) usage 0 ;;
        "") usage 2 ;;
        *) die "unknown command '$command' (use path, start or stop)" ;;
    esac
}

main "$@"
