#!/usr/bin/env bash
# Makes Valkey 9, libfaketime (and, with --ci, the test-only extras) available on a
# Debian machine. Idempotent: a second run only checks what is there.
#
# Valkey: used from PATH when it is 9.0 or newer; otherwise built from Debian sid's
# source package into a cache outside the clone ($LOCKJEPSEN_CACHE, default
# /var/cache/lockjepsen), so that a second run, or a fresh clone, is instant.
set -euo pipefail

CACHE="${LOCKJEPSEN_CACHE:-/var/cache/lockjepsen}"
VALKEY_VERSION="${VALKEY_VERSION:-9.1.2}"
PREFIX="$CACHE/valkey-$VALKEY_VERSION"
CI_EXTRAS=0
[[ "${1:-}" == "--ci" ]] && CI_EXTRAS=1

die() { echo "setup: $*" >&2; exit 2; }
log() { echo "setup: $*" >&2; }

need_root_apt() {
  command -v apt-get >/dev/null || die "apt-get not found: install Valkey >= 9.0 (valkey-server, valkey-sentinel, valkey-cli) and libfaketime by hand and put them on PATH"
  [[ $(id -u) == 0 ]] || die "must run as root to install packages (or install Valkey >= 9.0 and libfaketime yourself)"
}

apt_updated=0
apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  ((${#missing[@]})) || return 0
  need_root_apt
  if ((apt_updated == 0)); then apt-get update -qq >&2; apt_updated=1; fi
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

valkey_major() { "$1" --version 2>/dev/null | sed -n 's/.*v=\([0-9]*\)\..*/\1/p'; }

path_valkey_ok() {
  local s; s=$(command -v valkey-server) || return 1
  command -v valkey-sentinel >/dev/null && command -v valkey-cli >/dev/null || return 1
  local m; m=$(valkey_major "$s"); [[ -n "$m" && "$m" -ge 9 ]]
}

build_valkey() {
  [[ -x "$PREFIX/bin/valkey-server" ]] && return 0
  command -v cc >/dev/null && command -v make >/dev/null || apt_install build-essential
  apt_install dpkg-dev pkg-config
  need_root_apt
  local list=/etc/apt/sources.list.d/lockjepsen-sid-src.list
  if [[ ! -f $list ]]; then
    # deb-src only: a binary deb line for sid would upgrade this machine's libc.
    echo "deb-src http://deb.debian.org/debian sid main" > "$list"
    apt_updated=0
  fi
  if ((apt_updated == 0)); then apt-get update -qq >&2; apt_updated=1; fi
  local src="$CACHE/src"
  rm -rf "$src"; mkdir -p "$src"
  log "fetching valkey source package from Debian sid"
  (cd "$src" && apt-get source -qq --download-only "valkey=$VALKEY_VERSION*" >&2 2>/dev/null || apt-get source -qq --download-only valkey >&2)
  (cd "$src" && dpkg-source -x --no-check ./*.dsc build >/dev/null)
  log "building valkey (about two minutes on 2 cores)"
  make -C "$src/build" -j"$(nproc)" BUILD_TLS=no USE_SYSTEMD=no >"$CACHE/build.log" 2>&1 || die "valkey build failed, see $CACHE/build.log"
  mkdir -p "$PREFIX/bin.tmp"
  for b in valkey-server valkey-sentinel valkey-cli valkey-benchmark; do
    cp -L "$src/build/src/$b" "$PREFIX/bin.tmp/$b" 2>/dev/null || ln -sf valkey-server "$PREFIX/bin.tmp/$b"
  done
  # valkey-sentinel is the server binary under another name.
  [[ -x "$PREFIX/bin.tmp/valkey-sentinel" ]] || cp "$PREFIX/bin.tmp/valkey-server" "$PREFIX/bin.tmp/valkey-sentinel"
  rm -rf "$PREFIX/bin"; mv "$PREFIX/bin.tmp" "$PREFIX/bin"
  rm -rf "$src"
}

mkdir -p "$CACHE"
if path_valkey_ok; then
  VALKEY_BIN=$(dirname "$(command -v valkey-server)")
else
  build_valkey
  VALKEY_BIN="$PREFIX/bin"
fi
m=$(valkey_major "$VALKEY_BIN/valkey-server")
[[ -n "$m" && "$m" -ge 9 ]] || die "valkey in $VALKEY_BIN is not 9.x"

apt_install libfaketime
if ((CI_EXTRAS)); then
  # Tests: PostgreSQL for the resource backend, bookworm's redis-server 7.0 as the
  # "older server" a recipe must refuse, Chromium for the report's browser check,
  # python3-redis for the redis-py exec adapter (examples/redis-py).
  apt_install postgresql redis-server chromium python3-redis
fi

FAKETIME_LIB=$(dpkg -L libfaketime 2>/dev/null | grep -m1 '/libfaketime.so.1$' || true)
[[ -n "$FAKETIME_LIB" ]] || die "libfaketime.so.1 not found after install"

# Written for the Makefile and the tests; lockjepsen finds the binaries the same way.
cat > "$CACHE/env" <<ENV
LOCKJEPSEN_VALKEY_BIN=$VALKEY_BIN
LOCKJEPSEN_FAKETIME_LIB=$FAKETIME_LIB
ENV
log "valkey $("$VALKEY_BIN/valkey-server" --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') in $VALKEY_BIN; libfaketime $FAKETIME_LIB"
echo "$CACHE/env"
