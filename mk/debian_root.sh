# mk/debian_root.sh: what mk/trixie.sh and mk/sid.sh share, sourced by both.
#
# The sourcing script sets ROOT (the root's directory), REPO (this
# repository) and MIRROR_OVERRIDE (a Debian mirror to use, or empty).

# The host's Debian mirror: the first non-security .../debian URI apt uses.
mirror() {
    if [ -n "${MIRROR_OVERRIDE:-}" ]; then echo "$MIRROR_OVERRIDE"; return; fi
    found=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | grep -v '^[[:space:]]*#' | grep -oE 'https?://[^ ]+/debian/?( |$)' | head -n 1 | tr -d ' ')
    echo "${found:-http://deb.debian.org/debian}"
}

# The git directory a linked worktree's .git file points into (its main
# checkout's .git), else nothing: git inside the root needs it too.
worktree_git_dir() {
    [ -f "$REPO/.git" ] || return 0
    git -C "$REPO" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true
}

# CMD... inside the root with /proc, /dev and the repository mounted (and,
# for a linked worktree, its git directory, read-only), in a mount namespace
# of its own.
in_root() {
    unshare --mount --propagation private sh -eu -c '
        root=$1 repo=$2 gitdir=$3; shift 3
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        mkdir -p "$root$repo"
        mount --bind "$repo" "$root$repo"
        if [ -n "$gitdir" ]; then
            mkdir -p "$root$gitdir"
            mount --bind -o ro "$gitdir" "$root$gitdir"
        fi
        cp /etc/resolv.conf "$root/etc/resolv.conf"
        if [ -f /etc/ssl/certs/ca-certificates.crt ] && [ -d "$root/etc/ssl/certs" ]; then
            cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
        fi
        exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
            PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            $(env | grep -E "^(CI|PIP_[A-Z_]+|https?_proxy|HTTPS?_PROXY|no_proxy|NO_PROXY)=" | grep -v "^PIP_FIND_LINKS=") \
            "$@"
    ' in_root "$ROOT" "$REPO" "$(worktree_git_dir)" "$@"
}
