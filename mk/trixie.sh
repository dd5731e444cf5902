#!/bin/sh
# mk/trixie.sh: PostgreSQL 17 from Debian trixie's packages, in a chroot.
#
# trixie's postgresql-17 needs trixie's libraries, so it lives in a trixie root
# made by debootstrap, once per machine, and reused (a stamp names what it holds):
#
#   sh mk/trixie.sh setup          make or update the root (root only)
#   sh mk/trixie.sh run CMD...     run CMD inside it, in this repository
#
# `run` bind-mounts the repository at the same path inside the root, with /proc
# and /dev, in a private mount namespace (nothing stays mounted afterwards, and
# runs side by side do not meet), with the host's DNS resolver and TLS trust
# (pip inside reaches PyPI as the host does) and its pip and proxy settings.
# No server is started by the packages: the tests start their own throwaway
# clusters.
#
# TRIXIE_ROOT    where the root lives (default /var/cache/pg_tempbuf/trixie)
# TRIXIE_MIRROR  the Debian mirror (default: the one in /etc/apt/sources.list*)
set -eu

ROOT=${TRIXIE_ROOT:-/var/cache/pg_tempbuf/trixie}
PACKAGES="postgresql-17 postgresql-server-dev-17 postgresql-17-hypopg postgresql-17-pg-hint-plan gcc make libc6-dev git python3 python3-venv ca-certificates"
STAMP="$ROOT/.pg_tempbuf-packages"
REPO=$(cd "$(dirname "$0")/.." && pwd -P)

die() { echo "mk/trixie.sh: $*" >&2; exit 1; }

MIRROR_OVERRIDE=${TRIXIE_MIRROR:-}
. "$REPO/mk/debian_root.sh"

setup() {
    [ "$(id -u)" -eq 0 ] || die "making the trixie root needs root (debootstrap, chroot)"
    if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$PACKAGES" ]; then
        echo "trixie root ready: $ROOT"
        return
    fi
    if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
        command -v debootstrap >/dev/null || {
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
        }
        m=$(mirror)
        echo "debootstrap trixie from $m into $ROOT"
        rm -rf "$ROOT.partial"
        mkdir -p "$(dirname "$ROOT")"
        debootstrap --variant=minbase trixie "$ROOT.partial" "$m" > "$(dirname "$ROOT")/debootstrap.log" 2>&1 \
            || { tail -n 20 "$(dirname "$ROOT")/debootstrap.log" >&2; die "debootstrap failed"; }
        mv "$ROOT.partial" "$ROOT"
    fi
    # Packages start no services in the root, and postgresql-common makes no cluster.
    printf '#!/bin/sh\nexit 101\n' > "$ROOT/usr/sbin/policy-rc.d"
    chmod 755 "$ROOT/usr/sbin/policy-rc.d"
    mkdir -p "$ROOT/etc/postgresql-common/createcluster.d"
    echo 'create_main_cluster = false' > "$ROOT/etc/postgresql-common/createcluster.d/pg_tempbuf.conf"
    echo "apt-get install (trixie) $PACKAGES"
    in_root sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $PACKAGES >/dev/null"
    echo "$PACKAGES" > "$STAMP"
    echo "trixie root ready: $ROOT ($(in_root /usr/lib/postgresql/17/bin/pg_config --version))"
}

case "${1:-}" in
    setup) setup ;;
    run)
        shift
        [ "$(id -u)" -eq 0 ] || die "running in the trixie root needs root (chroot)"
        [ -f "$STAMP" ] || die "no trixie root at $ROOT: run sh mk/trixie.sh setup"
        in_root sh -c 'cd "$0" && exec "$@"' "$REPO" "$@"
        ;;
    *) die "usage: sh mk/trixie.sh setup | run CMD..." ;;
esac
