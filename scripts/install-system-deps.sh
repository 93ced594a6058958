#!/usr/bin/env bash
# Installs what the test suite needs outside Python, idempotently:
#   nginx     (Debian)  serves files with HTTP range requests to the object-store tests
#   Java 17   (Debian)  runs PySpark and the parquet-java oracle, if no JDK is present
#   azurite   (npm)     the Azure Blob emulator, into .cache/npm (pinned version)
#   clang     (Debian)  optional: builds the C fuzz targets (libFuzzer + ASan/UBSan);
#                       without it `make fuzz-smoke` skips them with a note
# moto_server comes from the Python test dependencies. Run as root (CI is);
# without root, the Debian steps are skipped with a note and the tests that
# need them skip with a reason.
set -euo pipefail
cd "$(dirname "$0")/.."

AZURITE_VERSION=3.35.0
need_apt=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need_apt+=(nginx-light)
command -v javac >/dev/null 2>&1 || need_apt+=(openjdk-17-jdk-headless)
command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)

if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "installing Debian packages: ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  else
    echo "note: not root, so not installing ${need_apt[*]}; tests needing them will skip" >&2
  fi
fi

# Optional, so its failure is only a note. libclang-rt-dev holds libFuzzer's runtime,
# which the clang package alone lacks on Debian.
if ! command -v clang >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "installing Debian packages (optional): clang libclang-rt-dev"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends clang libclang-rt-dev >/dev/null; } \
    || echo "note: clang not installed; the C fuzz targets will be skipped" >&2
fi

if [ ! -x .cache/npm/node_modules/.bin/azurite ] && command -v npm >/dev/null 2>&1; then
  echo "installing azurite@${AZURITE_VERSION} into .cache/npm"
  mkdir -p .cache/npm
  npm install --prefix .cache/npm --no-audit --no-fund --loglevel=error "azurite@${AZURITE_VERSION}" >/dev/null
fi
