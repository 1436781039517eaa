#!/usr/bin/env bash
# The shared services of a multi-node deployment, started for real on this machine (CI, or by
# hand): a throwaway PostgreSQL on a loopback port, an MLflow tracking server on it, and a
# two-node Ray cluster (a head and a second node on the same machine).
#
#   .ci/services.sh start DIR   # start all of them; writes DIR/services.env (the tests'
#                               # variables) and DIR/platform.env (settings to use them)
#   .ci/services.sh stop DIR    # stop exactly the processes started into DIR, remove DIR
#
# Every process is stopped by the id recorded in DIR (never by name: other Ray clusters or
# PostgreSQL servers on the machine are left alone). As root, PostgreSQL runs as `postgres`.
set -euo pipefail
# A loopback-only test cluster: no Ray token auth (a stray ~/.ray/auth_token from another Ray
# use on this machine would otherwise turn it on for the head and lock the second node out).
export RAY_AUTH_MODE=disabled

ACTION="${1:?usage: services.sh start|stop DIR}"
DIR="${2:?usage: services.sh start|stop DIR}"
if [ "$ACTION" = start ]; then mkdir -p "$DIR"; fi
DIR="$(cd "$DIR" 2>/dev/null && pwd || echo "$DIR")"  # absolute: the servers run elsewhere
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${VENV_BIN:-$ROOT/.venv/bin}"

free_port() {
    "$BIN/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local limit="$1" what="$2"
    shift 2
    for _ in $(seq "$limit"); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 1
    done
    echo "services.sh: $what did not come up within ${limit}s" >&2
    return 1
}

start_postgres() {
    PG_PORT="$(free_port)"
    mkdir -p "$DIR/pg"
    [ "$(id -u)" = 0 ] && chown postgres "$DIR/pg"
    "$ROOT/tests/initdb.sh" -D "$DIR/pg/data" -U ppo --auth=trust -E UTF8 >"$DIR/pg-init.log"
    as_pg pg_ctl -D "$DIR/pg/data" -l "$DIR/pg/server.log" -w -t 60 \
        -o "-p $PG_PORT -k $DIR/pg -c listen_addresses=127.0.0.1" start >/dev/null
    for db in mlflow optuna jobs; do
        "$BIN/python" -c "import psycopg, sys; psycopg.connect(sys.argv[1], autocommit=True).execute('CREATE DATABASE $db')" \
            "postgresql://ppo@127.0.0.1:$PG_PORT/postgres"
    done
}

start_mlflow() {
    MLFLOW_PORT="$(free_port)"
    mkdir -p "$DIR/mlflow-artifacts"
    setsid "$BIN/mlflow" server --host 127.0.0.1 --port "$MLFLOW_PORT" --workers 1 \
        --backend-store-uri "postgresql+psycopg://ppo@127.0.0.1:$PG_PORT/mlflow" \
        --artifacts-destination "$DIR/mlflow-artifacts" >"$DIR/mlflow.log" 2>&1 &
    echo $! >"$DIR/mlflow.pid"
    wait_for 120 "the MLflow tracking server" \
        "$BIN/python" -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=2)" \
        "http://127.0.0.1:$MLFLOW_PORT/health"
}

start_ray() {
    RAY_PORT="$(free_port)"
    # The tests' env package is importable on every node, as an operator installs env packages
    # on every node of a real cluster (tests/cluster_tests/test_ray_env_packages.py).
    export PYTHONPATH="$PWD/tests/fixtures/env_packages${PYTHONPATH:+:$PYTHONPATH}"
    mkdir -p "$DIR/ray"
    local common=(--block --num-cpus="${RAY_NODE_CPUS:-1}" --disable-usage-stats)
    setsid "$BIN/ray" start --head --port="$RAY_PORT" --temp-dir="$DIR/ray" \
        --include-dashboard=false "${common[@]}" >"$DIR/ray-head.log" 2>&1 &
    echo $! >"$DIR/ray-head.pid"
    wait_for 90 "the Ray head" grep -q "will now block forever" "$DIR/ray-head.log"
    # One logical GPU on the second node: the tests see a task that needs one placed there
    # (Ray reserves it; nothing uses CUDA).
    setsid "$BIN/ray" start --address="127.0.0.1:$RAY_PORT" "${common[@]}" --num-gpus=1 \
        >"$DIR/ray-node.log" 2>&1 &
    echo $! >"$DIR/ray-node.pid"
    wait_for 90 "the second Ray node" grep -q "will now block forever" "$DIR/ray-node.log"
}

stop_group() {  # stop_group PIDFILE: SIGTERM its process group, SIGKILL what is left after 10 s
    local file="$1" pid
    [ -f "$file" ] || return 0
    pid="$(cat "$file")"
    kill -TERM -- "-$pid" 2>/dev/null || return 0
    for _ in $(seq 20); do
        kill -0 -- "-$pid" 2>/dev/null || return 0
        sleep 0.5
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
}

case "$ACTION" in
start)
    mkdir -p "$DIR"
    [ "$(id -u)" = 0 ] && chmod 755 "$DIR"
    start_postgres
    start_mlflow
    start_ray
    cat >"$DIR/services.env" <<EOF
export PPO_TEST_REQUIRE_SERVICES=1
export RAY_AUTH_MODE=disabled
export PPO_TEST_POSTGRES_URL=postgresql://ppo@127.0.0.1:$PG_PORT/postgres
export PPO_TEST_MLFLOW_URI=http://127.0.0.1:$MLFLOW_PORT
export PPO_TEST_RAY_ADDRESS=127.0.0.1:$RAY_PORT
EOF
    # The platform's own settings for using these services (docs/guides/cluster.md).
    cat >"$DIR/platform.env" <<EOF
export PPO_PLATFORM_EXECUTOR=ray
export PPO_PLATFORM_RAY_ADDRESS=127.0.0.1:$RAY_PORT
export MLFLOW_TRACKING_URI=http://127.0.0.1:$MLFLOW_PORT
export PPO_PLATFORM_JOBS_DATABASE_URL=postgresql+psycopg://ppo@127.0.0.1:$PG_PORT/jobs
export PPO_PLATFORM_OPTUNA_STORAGE_URL=postgresql+psycopg://ppo@127.0.0.1:$PG_PORT/optuna
EOF
    echo "services.sh: postgres :$PG_PORT, mlflow :$MLFLOW_PORT, ray 127.0.0.1:$RAY_PORT (2 nodes)"
    ;;
stop)
    stop_group "$DIR/ray-node.pid"
    stop_group "$DIR/ray-head.pid"
    stop_group "$DIR/mlflow.pid"
    if [ -d "$DIR/pg/data" ]; then
        as_pg pg_ctl -D "$DIR/pg/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$DIR"
    ;;
*)
    echo "usage: services.sh start|stop DIR" >&2
    exit 2
    ;;
esac
