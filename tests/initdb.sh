#!/usr/bin/env bash
# initdb for a throwaway test server, as the user the server will run as: PostgreSQL refuses
# root, so as root it runs as `postgres`. Used by .ci/services.sh and tests/postgres_server.py.
#
#   tests/initdb.sh -D DATA -U USER ...   # the arguments are initdb's
#
# initdb's steps write to /dev/null through sh. On a machine whose /dev/null is not writable by
# that user (mode 0644), initdb runs in a private mount namespace with a writable null device
# bound over /dev/null; the machine's own /dev/null is left as it is.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then exec initdb "$@"; fi
if runuser -u postgres -- test -w /dev/null; then exec runuser -u postgres -- initdb "$@"; fi

sink="$(mktemp -d)"
trap 'rm -rf "$sink"' EXIT
# A null device of its own; where the folder's file system forbids devices, an empty file
# (initdb only writes its steps' chatter there).
{ mknod -m 666 "$sink/null" c 1 3 && : >"$sink/null"; } 2>/dev/null \
    || { rm -f "$sink/null" && : >"$sink/null" && chmod 666 "$sink/null"; }
# shellcheck disable=SC2016  # $1 and $@ are the inner shell's
unshare --mount --propagation private \
    sh -c 'mount --bind "$1" /dev/null && shift && exec runuser -u postgres -- initdb "$@"' \
    initdb-sh "$sink/null" "$@"
