#!/bin/sh
# Install Drover for every user of this machine: a virtual environment made with the system's
# python3 under PREFIX (default /opt/drover), Drover and its runtime dependencies installed into
# it (not editable: the tree does not depend on this checkout), owned by root and writable by
# root only, and its `drover` command linked into BINDIR (default /usr/local/bin).
#
#   sudo make install-system                      # or: sudo scripts/install-system.sh
#   sudo make install-system PREFIX=/opt/drover BINDIR=/usr/local/bin
#
# It also makes the system user drover (with a group of its own, no login), which a shared
# cluster's controller runs as (`drover up --system`, drover-controller.service).
#
# Running it again brings the same tree up to date with this checkout. Exit status 3 means a
# prerequisite is missing (not root, no python3-venv), 4 that pip could not install, 5 that the
# user drover could not be made.
set -eu

PREFIX=${PREFIX:-/opt/drover}
BINDIR=${BINDIR:-/usr/local/bin}
PYTHON=${SYSTEM_PYTHON:-/usr/bin/python3}
SOURCE=$(cd "$(dirname "$0")/.." && pwd)

fail() { code=$1; shift; echo "install-system: $*" >&2; exit "$code"; }

[ "$(id -u)" = 0 ] || fail 3 "run it as root: the installed tree must be root's, so no user can change what root runs"
case $PREFIX in /*) ;; *) fail 3 "PREFIX must be an absolute path, not $PREFIX" ;; esac
case $BINDIR in /*) ;; *) fail 3 "BINDIR must be an absolute path, not $BINDIR" ;; esac
[ -x "$PYTHON" ] || fail 3 "$PYTHON is not there; install python3"
"$PYTHON" -c 'import ensurepip, venv' 2>/dev/null \
    || fail 3 "$PYTHON cannot make virtual environments; on Debian: apt-get install python3-venv"

# Everything the daemons (root) run lives beneath PREFIX: no directory above it may be writable
# by anyone but root, or a user could swap the tree (sticky, root-owned /tmp is fine).
parent=$(dirname "$PREFIX")
while :; do
    if [ -e "$parent" ]; then
        owner=$(stat -c %u "$parent")
        mode=$(stat -c %a "$parent")
        [ "$owner" = 0 ] || fail 3 "$parent is not root's: a user could replace $PREFIX"
        case $mode in
            1???) ;;  # sticky: only root, its owner, removes or renames what is in it
            *) [ $((0$mode & 022)) = 0 ] || fail 3 "$parent is writable by group or others: a user could replace $PREFIX" ;;
        esac
    fi
    [ "$parent" = / ] && break
    parent=$(dirname "$parent")
done

umask 022
mkdir -p "$PREFIX"
[ -x "$PREFIX/bin/python" ] || "$PYTHON" -m venv "$PREFIX"

# Build from a copy of the sources, so root leaves no build files in the checkout; build the
# wheel once and install that.
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
cp -R "$SOURCE/pyproject.toml" "$SOURCE/README.md" "$SOURCE/src" "$build/"
rm -rf "$build"/src/*.egg-info
pip() { "$PREFIX/bin/python" -m pip --quiet --disable-pip-version-check "$@"; }
pip wheel --no-deps --wheel-dir "$build/dist" "$build" \
    || fail 4 "pip could not build Drover (is the package index reachable for setuptools?)"
wheel=$(ls "$build"/dist/drover-*.whl)
# The dependencies at the versions the tests last passed with (constraints.txt).
pip install -c "$SOURCE/constraints.txt" "$wheel" \
    || fail 4 "pip could not install Drover's dependencies (is the package index reachable?)"
# Drover itself is always replaced by this checkout's build, even when its version number did
# not change; its dependencies stay as they are when they are there already.
pip install --no-deps --force-reinstall "$wheel" || fail 4 "pip could not install Drover"

# Root's, and writable by root only: directories and programs 0755, everything else 0644.
# Symbolic links (the venv's python) are left as they are; chown -R does not follow them.
chown -R 0:0 "$PREFIX"
chmod -R u=rwX,go=rX "$PREFIX"
chmod 0755 "$PREFIX"

mkdir -p "$BINDIR"
ln -sfn "$PREFIX/bin/drover" "$BINDIR/drover"
echo "installed $("$PREFIX/bin/drover" --version) in $PREFIX; $BINDIR/drover runs it"

# The unprivileged user a shared cluster's controller runs as (only the execds are root), made
# here so that drover-controller.service can name it; `drover up --system` makes it as well
# where it is missing. Its home is the shared cluster's state directory (not made here).
if ! getent passwd drover >/dev/null; then
    if getent group drover >/dev/null; then group="--gid drover"; else group="--user-group"; fi
    shell=/usr/sbin/nologin; [ -x "$shell" ] || shell=/bin/false
    # shellcheck disable=SC2086  # $group is two words
    useradd --system $group --no-create-home --home-dir /var/lib/drover --shell "$shell" drover \
        || fail 5 "could not make the system user drover that a shared cluster's controller runs as (useradd failed)"
    echo "made the system user drover, which a shared cluster's controller runs as"
fi

# The systemd units that start the daemons at boot (the package's, `drover install-units`), where systemd runs or
# UNITDIR names a directory: the installed `drover` written into them. Enabling them is the
# admin's choice (see each unit's head); `drover join` enables drover-execd on a node.
UNITDIR=${UNITDIR:-}
if [ -z "$UNITDIR" ] && [ -d /run/systemd/system ]; then
    UNITDIR=/etc/systemd/system
fi
if [ -n "$UNITDIR" ]; then
    # Where the units keep their state and logs: root's, every user reaches the socket in it. The
    # controller's unit runs as drover and so does not make it (see its head).
    mkdir -p -m 0711 /var/lib/drover
    "$PREFIX/bin/drover" install-units --prefix "$UNITDIR" --bindir "$BINDIR" >/dev/null
    [ -d /run/systemd/system ] && systemctl daemon-reload 2>/dev/null || true
    echo "installed drover-controller.service and drover-execd.service in $UNITDIR"
fi
