#!/usr/bin/env bash
# Installs, idempotently, the codec libraries the C build links when it finds them
# (csrc/build_native.py): libzstd, liblz4, zlib and libbrotlidec, with their headers.
# Without them the package still builds and reads every file: pages of those codecs are
# then decompressed by pyarrow in Python instead of in C (slower). Run as root (CI is);
# without root, or without apt-get, this is only a note.
set -euo pipefail

have() { [ -e "/usr/include/$1" ]; }
need=()
have zstd.h || need+=(libzstd-dev)
have lz4.h || need+=(liblz4-dev)
have zlib.h || need+=(zlib1g-dev)
have brotli/decode.h || need+=(libbrotli-dev)
[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "note: not installing ${need[*]} (needs root and apt-get); their codecs are" \
    "decompressed by pyarrow instead" >&2
  exit 0
fi
echo "installing Debian packages: ${need[*]}"
{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "${need[@]}" >/dev/null; } \
  || echo "note: ${need[*]} not installed; their codecs are decompressed by pyarrow" >&2
