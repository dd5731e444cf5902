#!/bin/sh
# mk/dist.sh EXTENSION OUT_DIR: the PGXN archive of one extension, built from
# what HEAD has committed: EXTENSION-VERSION.tar.gz (VERSION from its
# META.json) holding the extension's folder, the shared mk/pgxs.mk its
# Makefile includes, and the LICENSE, so that it builds with plain PGXS
# from a clean directory.
set -eu
ext=$1
out=$2
version=$(sed -n 's/^   "version": "\(.*\)",$/\1/p' "$ext/META.json")
[ -n "$version" ] || { echo "dist: no version in $ext/META.json" >&2; exit 1; }
prefix="$ext-$version/"
mkdir -p "$out"
tarball="$out/$ext-$version.tar"
git archive --format=tar --prefix="$prefix" "HEAD:$ext" > "$tarball"
tar -rf "$tarball" --transform "s,^,$prefix," mk/pgxs.mk LICENSE
gzip -f "$tarball"
echo "$tarball.gz"
