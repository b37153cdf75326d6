#!/bin/sh
# Build a Debian package of Drover: dist/drover_VERSION-1_ARCH.deb.
#
#   make deb                 # or: scripts/build-deb.sh [OUTDIR]
#
# What it holds, after dh-virtualenv's layout (a virtual environment is the package's private
# copy of Drover and its dependencies, so nothing of it mixes with Debian's python3-* packages):
#   /opt/venvs/drover/          a virtual environment made with Debian's python3, Drover and its
#                               runtime dependencies installed from this checkout's wheel
#   /usr/bin/drover             a link to the environment's drover
#   /usr/share/man/man1/        drover(1) and drover-COMMAND(1), compressed
#   /usr/share/bash-completion/completions/drover, /usr/share/zsh/vendor-completions/_drover,
#   /usr/share/fish/vendor_completions.d/drover.fish
#   /lib/systemd/system/drover-controller.service, drover-execd.service (not enabled: the
#                               admin's choice, as docs/shared-machine.md says)
# Its postinst makes the system user drover, which a shared cluster's controller runs as, and
# compiles the environment's modules (root's, so no user's `drover` writes them); its prerm
# removes what that compiled. The front ends stay opt-in (`drover compat install DIR`).
#
# The environment is made in a staging directory and moved into place by dpkg, so every path the
# environment wrote into itself (its scripts' #! lines, activate, pyvenv.cfg) is rewritten from
# the staging directory to /opt/venvs/drover, as dh-virtualenv does. It needs dpkg-deb and the
# package index (for the dependencies). Exit status 3: a prerequisite is missing; 4: pip failed.
set -eu

SOURCE=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=${1:-$SOURCE/dist}
PYTHON=${SYSTEM_PYTHON:-/usr/bin/python3}
VENV=/opt/venvs/drover

fail() { code=$1; shift; echo "build-deb: $*" >&2; exit "$code"; }

command -v dpkg-deb >/dev/null || fail 3 "dpkg-deb is not there (apt-get install dpkg)"
[ -x "$PYTHON" ] || fail 3 "$PYTHON is not there; install python3"
"$PYTHON" -c 'import ensurepip, venv' 2>/dev/null \
    || fail 3 "$PYTHON cannot make virtual environments; on Debian: apt-get install python3-venv"

umask 022
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/root
mkdir -p "$stage$VENV" "$stage/DEBIAN"

# The wheel, built from a copy of the sources (no build files left in the checkout).
cp -R "$SOURCE/pyproject.toml" "$SOURCE/README.md" "$SOURCE/src" "$work/"
rm -rf "$work"/src/*.egg-info
"$PYTHON" -m venv "$stage$VENV"
pip() { "$stage$VENV/bin/python" -m pip --quiet --disable-pip-version-check "$@"; }
pip wheel --no-deps --wheel-dir "$work/dist" "$work" || fail 4 "pip could not build Drover's wheel"
# The dependencies at the versions the tests last passed with (constraints.txt), as a
# dh-virtualenv package pins its requirements.
pip install --no-compile -c "$SOURCE/constraints.txt" "$work"/dist/drover-*.whl || fail 4 "pip could not install Drover and its dependencies"
pip uninstall --yes setuptools >/dev/null 2>&1 || true
pip uninstall --yes pip >/dev/null 2>&1 || true  # the package is updated by dpkg, never by pip

# Where pip installed Drover from (a file of the build's): not Drover's business once packaged.
for url in "$stage$VENV"/lib/python*/site-packages/drover-*.dist-info/direct_url.json; do
    rm -f "$url"
    sed -i '/direct_url\.json/d' "$(dirname "$url")/RECORD"
done
# Every path the environment knows itself by: from the staging directory to where dpkg puts it.
grep -rlI --null "$stage$VENV" "$stage$VENV" | xargs -0 -r sed -i "s|$stage$VENV|$VENV|g"
find "$stage$VENV" -name __pycache__ -type d -prune -exec rm -rf {} +
# The wheel's own copies of the man pages and completion: the package puts them under /usr/share.
rm -rf "$stage$VENV/share" "$stage$VENV/include"

version=$("$stage$VENV/bin/python" -c 'import drover; print(drover.__version__)')
arch=$(dpkg --print-architecture)  # the dependencies' wheels are compiled (msgspec, uvloop, ...)
python_version=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
next_minor=$("$PYTHON" -c 'import sys; print("%d.%d" % (sys.version_info[0], sys.version_info[1] + 1))')

mkdir -p "$stage/usr/bin" "$stage/usr/share/man/man1" "$stage/lib/systemd/system" \
    "$stage/usr/share/bash-completion/completions" "$stage/usr/share/zsh/vendor-completions" \
    "$stage/usr/share/fish/vendor_completions.d" "$stage/usr/share/doc/drover"
ln -s "$VENV/bin/drover" "$stage/usr/bin/drover"
data=$SOURCE/src/drover/data
for page in "$data"/man/man1/drover*.1; do
    gzip -9n < "$page" > "$stage/usr/share/man/man1/$(basename "$page").gz"
done
cp "$data/completion/drover" "$stage/usr/share/bash-completion/completions/drover"
cp "$data/completion/_drover" "$stage/usr/share/zsh/vendor-completions/_drover"
cp "$data/completion/drover.fish" "$stage/usr/share/fish/vendor_completions.d/drover.fish"
for unit in drover-controller.service drover-execd.service; do
    sed "s|@BINDIR@|/usr/bin|g" "$data/systemd/$unit" > "$stage/lib/systemd/system/$unit"
done
printf 'Drover %s, built from its sources with scripts/build-deb.sh.\nDocumentation: the docs/ directory of its sources.\n' \
    "$version" > "$stage/usr/share/doc/drover/README"

size=$(du -sk "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<EOF
Package: drover
Version: $version-1
Architecture: $arch
Maintainer: Drover developers <drover@localhost>
Installed-Size: $size
Depends: python3 (>= $python_version), python3 (<< $next_minor)
Section: admin
Priority: optional
Description: batch job scheduler: a personal cluster on one machine, the same code on many
 Drover queues shell jobs, finds a machine with room, and runs each under a shepherd that
 sets it up, runs prolog, job and epilog, forwards signals, enforces limits, measures what
 it used and records the outcome durably. Slurm's, Grid Engine's and PBS's commands are
 available as opt-in front ends (drover compat install DIR).
EOF

cat > "$stage/DEBIAN/postinst" <<EOF
#!/bin/sh
set -e
if [ "\$1" = configure ]; then
    # The unprivileged user a shared cluster's controller runs as (scripts/install-system.sh too).
    if ! getent passwd drover >/dev/null; then
        if getent group drover >/dev/null; then group="--gid drover"; else group="--user-group"; fi
        # shellcheck disable=SC2086
        useradd --system \$group --no-create-home --home-dir /var/lib/drover --shell /usr/sbin/nologin drover
    fi
    # Root's compiled modules: no user's drover writes them, and each starts without compiling.
    $VENV/bin/python -m compileall -q -j 0 $VENV/lib >/dev/null || true
    if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
fi
EOF
cat > "$stage/DEBIAN/prerm" <<EOF
#!/bin/sh
set -e
find $VENV -name __pycache__ -type d -prune -exec rm -rf {} + 2>/dev/null || true
EOF
cat > "$stage/DEBIAN/postrm" <<EOF
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
# The user drover and /var/lib/drover (a shared cluster's state) are kept, as Debian keeps a
# package's system user and data on purge.
EOF
chmod 0755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/prerm" "$stage/DEBIAN/postrm"

mkdir -p "$OUTDIR"
deb="$OUTDIR/drover_${version}-1_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
