#!/bin/sh
# mk/sid.sh: PostgreSQL 19 from Debian experimental's packages, in a chroot.
#
# experimental's postgresql-19 (19~rc1 or newer) needs sid's libraries (libc6
# >= 2.43), so it lives in a sid root made by debootstrap, once per machine,
# and reused (a stamp names what it holds):
#
#   sh mk/sid.sh setup             make or update the root (root only)
#   sh mk/sid.sh run CMD...        run CMD inside it, in this repository
#
# The root's apt sees sid and experimental; experimental stays at apt's low
# priority (NotAutomatic), and only the PostgreSQL packages are pinned to it
# by name (pkg/experimental): `apt-get -t experimental` would also take
# experimental's perl, which conflicts with sid's perl-base.  The Release
# files carry a Valid-Until that a machine's clock can be past, so the root's
# apt does not check it (signatures still are).
#
# `run` bind-mounts the repository at the same path inside the root, with /proc
# and /dev, in a private mount namespace (nothing stays mounted afterwards, and
# runs side by side do not meet), with the host's DNS resolver and TLS trust
# (pip inside reaches PyPI as the host does) and its pip and proxy settings.
# No server is started by the packages: the tests start their own throwaway
# clusters.  postgresql-server-dev-19 brings clang-21 and llvm-21-dev (about
# 2 GB), which PGXS uses for the LLVM bitcode.
#
# SID_ROOT    where the root lives (default /var/cache/pg_tempbuf/sid)
# SID_MIRROR  the Debian mirror (default: the one in /etc/apt/sources.list*)
set -eu

ROOT=${SID_ROOT:-/var/cache/pg_tempbuf/sid}
PG_PACKAGES="postgresql-19/experimental postgresql-client-19/experimental postgresql-server-dev-19/experimental libpq-dev/experimental libpq5/experimental"
PACKAGES="$PG_PACKAGES gcc make libc6-dev git python3 python3-venv ca-certificates"
STAMP="$ROOT/.pg_tempbuf-packages"
REPO=$(cd "$(dirname "$0")/.." && pwd -P)
NO_VALID_UNTIL="-o Acquire::Check-Valid-Until=false"

die() { echo "mk/sid.sh: $*" >&2; exit 1; }

MIRROR_OVERRIDE=${SID_MIRROR:-}
. "$REPO/mk/debian_root.sh"

setup() {
    [ "$(id -u)" -eq 0 ] || die "making the sid root needs root (debootstrap, chroot)"
    if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$PACKAGES" ]; then
        echo "sid root ready: $ROOT"
        return
    fi
    m=$(mirror)
    if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
        command -v debootstrap >/dev/null || {
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
        }
        echo "debootstrap sid from $m into $ROOT"
        rm -rf "$ROOT.partial"
        mkdir -p "$(dirname "$ROOT")"
        debootstrap --variant=minbase sid "$ROOT.partial" "$m" > "$(dirname "$ROOT")/debootstrap-sid.log" 2>&1 \
            || { tail -n 20 "$(dirname "$ROOT")/debootstrap-sid.log" >&2; die "debootstrap failed"; }
        mv "$ROOT.partial" "$ROOT"
    fi
    # sid and experimental (the latter only for what is pinned to it by name),
    # with no Valid-Until check.
    echo "deb $m sid main" > "$ROOT/etc/apt/sources.list"
    echo "deb $m experimental main" > "$ROOT/etc/apt/sources.list.d/experimental.list"
    echo 'Acquire::Check-Valid-Until "false";' > "$ROOT/etc/apt/apt.conf.d/99pg_tempbuf-valid-until"
    # Packages start no services in the root, and postgresql-common makes no cluster.
    printf '#!/bin/sh\nexit 101\n' > "$ROOT/usr/sbin/policy-rc.d"
    chmod 755 "$ROOT/usr/sbin/policy-rc.d"
    mkdir -p "$ROOT/etc/postgresql-common/createcluster.d"
    echo 'create_main_cluster = false' > "$ROOT/etc/postgresql-common/createcluster.d/pg_tempbuf.conf"
    echo "apt-get install (sid, experimental) $PACKAGES"
    in_root sh -c "apt-get update -qq $NO_VALID_UNTIL && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $NO_VALID_UNTIL $PACKAGES >/dev/null"
    # PGXS builds the LLVM bitcode with the clang the server was configured with.
    clang=$(in_root /usr/lib/postgresql/19/bin/pg_config --configure | grep -oE "CLANG=[^' ]+" | cut -d= -f2 || true)
    in_root sh -c "command -v ${clang:-clang-21}" >/dev/null || die "no ${clang:-clang-21} in the sid root"
    echo "$PACKAGES" > "$STAMP"
    echo "sid root ready: $ROOT ($(in_root /usr/lib/postgresql/19/bin/pg_config --version))"
}

case "${1:-}" in
    setup) setup ;;
    run)
        shift
        [ "$(id -u)" -eq 0 ] || die "running in the sid root needs root (chroot)"
        [ -f "$STAMP" ] || die "no sid root at $ROOT: run sh mk/sid.sh setup"
        in_root sh -c 'cd "$0" && exec "$@"' "$REPO" "$@"
        ;;
    *) die "usage: sh mk/sid.sh setup | run CMD..." ;;
esac
