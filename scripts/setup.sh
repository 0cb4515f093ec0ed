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
BUILDS=0
[[ "${1:-}" == "--ci" ]] && CI_EXTRAS=1 && BUILDS=1
[[ "${1:-}" == "--builds" ]] && BUILDS=1
# The etcd backend (--topology etcd) needs Debian's etcd-server (and etcd-client for
# etcdctl). Every setup installs it: two small packages (no build), so that the
# safe alternatives run right after `make setup` like the demo does.
ETCD=1
# The deployments lessons need two more servers: the same Valkey without Lua
# (BUILD_LUA=no, where every EVAL-based lock fails) and Valkey 8.1 (a rolling
# upgrade's node without DELIFEQ). The demo needs neither, so plain setup skips
# them: a newcomer's first `make demo` waits for one build, not three.
NOLUA_PREFIX="$CACHE/valkey-$VALKEY_VERSION-nolua"
OLD_VERSION="${VALKEY_OLD_VERSION:-8.1.1}"
OLD_PREFIX="$CACHE/valkey-$OLD_VERSION"

die() { echo "setup: $*" >&2; exit 2; }
log() { echo "setup: $*" >&2; }

need_root_apt() {
  command -v apt-get >/dev/null || die "apt-get not found: install Valkey >= 9.0 (valkey-server, valkey-sentinel, valkey-cli) and libfaketime by hand and put them on PATH"
  [[ $(id -u) == 0 ]] || die "must run as root to install packages (or install Valkey >= 9.0 and libfaketime yourself)"
}

apt_updated=0
apt_install() {
  local missing=()
  # Installed, not merely known: a removed package keeps its conffiles and dpkg -s still succeeds.
  for p in "$@"; do
    [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || missing+=("$p")
  done
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

# start_build VERSION SUITE PREFIX [MAKE ARGS...] builds Debian SUITE's valkey
# source package at VERSION into PREFIX/bin, once: the fetch (apt) here, the
# compile in the background, so that the builds run beside each other and
# beside the package installs below (on a fresh 2-core machine the three
# builds one after another, then the installs, took 12.5 min of setup-ci);
# wait_builds collects them. The Lua-less build unpacks the same fetched
# source as the default one.
BUILD_PIDS=()
BUILD_NAMES=()
declare -A FETCHED
start_build() {
  local version=$1 suite=$2 prefix=$3; shift 3
  [[ -x "$prefix/bin/valkey-server" ]] && return 0
  fetch_valkey "$version" "$suite"
  local src="$CACHE/build-$(basename "$prefix")"
  rm -rf "$src" && cp -a "$FETCH_DIR" "$src"
  log "building valkey $version $* in the background (about two minutes on 2 cores alone)"
  compile_valkey "$src" "$prefix" "$@" &
  BUILD_PIDS+=($!)
  BUILD_NAMES+=("$(basename "$prefix")")
}

# use_src_suite SUITE makes Debian SUITE's source packages known to apt
# (apt-get update once per run after a new list).
use_src_suite() {
  local suite=$1
  need_root_apt
  local list=/etc/apt/sources.list.d/lockjepsen-$suite-src.list
  if [[ ! -f $list ]]; then
    # deb-src only: a binary deb line for a newer suite would upgrade this machine's libc.
    echo "deb-src http://deb.debian.org/debian $suite main" > "$list"
    apt_updated=0
  fi
  if ((apt_updated == 0)); then apt-get update -qq >&2; apt_updated=1; fi
}

# fetch_valkey VERSION SUITE sets FETCH_DIR to the unpacked source tree,
# fetched once per run (not in a $(...) subshell: apt_updated and FETCHED
# must outlive the call, and die must end setup).
fetch_valkey() {
  local version=$1 suite=$2 key="$1-$2"
  if [[ -n ${FETCHED[$key]:-} ]]; then FETCH_DIR=${FETCHED[$key]}; return 0; fi
  command -v cc >/dev/null && command -v make >/dev/null || apt_install build-essential
  apt_install dpkg-dev pkg-config
  use_src_suite "$suite"
  local src="$CACHE/src-$version-$suite"
  rm -rf "$src"; mkdir -p "$src"
  log "fetching valkey $version source package from Debian $suite"
  local full
  full=$(apt-cache showsrc valkey 2>/dev/null | sed -n 's/^Version: //p' | grep -m1 "^$version[-+]") ||
    die "Debian $suite has no valkey $version source package (apt-cache showsrc valkey lists what there is)"
  if (cd "$src" && apt-get source -qq --download-only "valkey=$full" >&2); then
    (cd "$src" && dpkg-source -x --no-check ./*.dsc build >/dev/null)
  else
    # A stable point release can leave the index naming a .dsc and Debian
    # diff the mirror no longer serves while the upstream tarball is still
    # there (seen for trixie's 8.1.1+dfsg1-3+deb13u3): that tarball builds.
    local orig
    orig=$(ls "$src"/*.orig.tar.* 2>/dev/null | head -1)
    [[ -n $orig ]] || die "could not fetch valkey $full from Debian $suite"
    log "the Debian diff is not on the mirror; building the upstream tarball $(basename "$orig")"
    mkdir -p "$src/build" && tar -xf "$orig" -C "$src/build" --strip-components=1
  fi
  FETCHED[$key]="$src/build"
  FETCH_DIR="$src/build"
}

# fetch_redis_py unpacks Debian sid's redis-py source (pure Python, run from
# its tree with PYTHONPATH) into $CACHE/redis-py-VERSION: the "after" of the
# findings that bookworm's python3-redis 4.3.4 predates
# (results/findings/006-*, 007-*). Once per cache. The mirror serves sid's
# orig tarball but not always its .dsc, so apt-get source may fail after
# downloading the tarball, which is all this needs.
fetch_redis_py() {
  ls -d "$CACHE"/redis-py-*/redis >/dev/null 2>&1 && return 0
  use_src_suite sid
  local tmp orig
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get source -qq --download-only python-redis >/dev/null 2>&1) || true
  orig=$(ls "$tmp"/python-redis_*.orig.tar.* 2>/dev/null | head -1)
  [[ -n $orig ]] || die "could not fetch python-redis's source from Debian sid (apt-cache showsrc python-redis lists what there is)"
  tar -xf "$orig" -C "$tmp"
  local tree
  tree=$(ls -d "$tmp"/redis-py-*/ | head -1)
  [[ -d $tree/redis ]] || die "no redis/ package in $(basename "$orig")"
  rm -rf "$CACHE/$(basename "$tree")"
  mv "$tree" "$CACHE/"
  rm -rf "$tmp"
  log "redis-py $(basename "$tree") from Debian sid in $CACHE"
}

# compile_valkey SRC PREFIX [MAKE ARGS...]: no apt, so that it can run in
# the background; the binaries appear in PREFIX/bin only when all are there.
compile_valkey() {
  local src=$1 prefix=$2; shift 2
  local blog="$CACHE/build-$(basename "$prefix").log"
  make -C "$src" -j"$(nproc)" BUILD_TLS=no USE_SYSTEMD=no "$@" >"$blog" 2>&1 || { echo "see $blog" >&2; exit 1; }
  mkdir -p "$prefix/bin.tmp"
  for b in valkey-server valkey-sentinel valkey-cli valkey-benchmark; do
    cp -L "$src/src/$b" "$prefix/bin.tmp/$b" 2>/dev/null || ln -sf valkey-server "$prefix/bin.tmp/$b"
  done
  # valkey-sentinel is the server binary under another name.
  [[ -x "$prefix/bin.tmp/valkey-sentinel" ]] || cp "$prefix/bin.tmp/valkey-server" "$prefix/bin.tmp/valkey-sentinel"
  rm -rf "$prefix/bin"; mv "$prefix/bin.tmp" "$prefix/bin"
  rm -rf "$src"
}

# wait_builds waits for every background build; a failed one stops setup.
wait_builds() {
  local i
  for i in "${!BUILD_PIDS[@]}"; do
    wait "${BUILD_PIDS[$i]}" || die "valkey build ${BUILD_NAMES[$i]} failed, see $CACHE/build-${BUILD_NAMES[$i]}.log"
  done
  local f
  for f in "${FETCHED[@]}"; do rm -rf "$(dirname "$f")"; done
  BUILD_PIDS=()
}

mkdir -p "$CACHE"
if path_valkey_ok; then
  VALKEY_BIN=$(dirname "$(command -v valkey-server)")
else
  start_build "$VALKEY_VERSION" sid "$PREFIX"
  VALKEY_BIN="$PREFIX/bin"
fi
if ((BUILDS)); then
  start_build "$VALKEY_VERSION" sid "$NOLUA_PREFIX" BUILD_LUA=no
  start_build "$OLD_VERSION" trixie "$OLD_PREFIX"
fi

apt_install libfaketime
if ((CI_EXTRAS)); then
  # Tests: (PostgreSQL, for the resource backend too, is installed below for every setup) bookworm's redis-server 7.0 as the
  # "older server" a recipe must refuse, Chromium for the report's browser check,
  # python3-redis for the redis-py exec adapters (examples/redis-py,
  # examples/redlock-py), node-redis for the Node one (examples/node-redis; the
  # machine's Node.js runs it, and apt leaves that Node.js as it is: the package
  # needs only its own modules), python3-etcd3 for examples/etcd-py,
  # python3-psycopg2 for examples/pg-py.
  apt_install redis-server chromium python3-redis node-redis python3-etcd3 python3-psycopg2
  fetch_redis_py
fi

# install_quiet installs packages without leaving their services running:
# lockjepsen starts its own etcd members, PostgreSQL servers and PgBouncers on
# free ports, and a daemon on 2379, 5432 or 6432 would be one more process
# competing for the 2 cores. On a machine with systemd the packages enable and
# start their services: they are stopped and disabled here (once, at install);
# with no init (a container) a policy-rc.d refusing service starts covers the
# install itself. Usage: install_quiet "pkg..." "service..."
install_quiet() {
  local pkgs=$1 services=$2 missing=0 p
  for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing=1; done
  ((missing)) || return 0
  local policy=/usr/sbin/policy-rc.d own_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && own_policy=1
  fi
  # shellcheck disable=SC2086
  apt_install $pkgs
  ((own_policy)) && rm -f "$policy"
  if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
    for p in $services; do systemctl disable --now "$p" >/dev/null 2>&1 || true; done
  fi
}
install_etcd() {
  command -v etcd >/dev/null && command -v etcdctl >/dev/null && return 0
  install_quiet "etcd-server etcd-client" "etcd"
}
if ((ETCD)); then
  install_etcd
  command -v etcd >/dev/null || die "etcd not on PATH after installing etcd-server"
fi

# The ZooKeeper backend (--topology zookeeper) needs Debian's zookeeper package (the
# server's jars; the zookeeperd package, which would run a daemon on 2181, is not
# installed: lockjepsen starts its own members on free ports) and a headless JRE;
# python3-kazoo for the kazoo exec adapter (examples/kazoo).
apt_install zookeeper default-jre-headless python3-kazoo

# The PostgreSQL deployment (--topology postgres): PostgreSQL 15 for the
# primary and its streaming replica, PgBouncer 1.18 for --pooler; lockjepsen
# runs both as the postgres user, which the postgresql package creates.
install_quiet "postgresql pgbouncer" "postgresql pgbouncer"
command -v pgbouncer >/dev/null || die "pgbouncer not on PATH after installing pgbouncer"
[[ -f /usr/share/java/zookeeper.jar ]] || die "/usr/share/java/zookeeper.jar not found after installing zookeeper"

FAKETIME_LIB=$(dpkg -L libfaketime 2>/dev/null | grep -m1 '/libfaketime.so.1$' || true)
[[ -n "$FAKETIME_LIB" ]] || die "libfaketime.so.1 not found after install"

wait_builds
m=$(valkey_major "$VALKEY_BIN/valkey-server")
[[ -n "$m" && "$m" -ge 9 ]] || die "valkey in $VALKEY_BIN is not 9.x"

EXTRA_ENV=""
if ((BUILDS)); then
  EXTRA_ENV="LOCKJEPSEN_VALKEY_NOLUA_BIN=$NOLUA_PREFIX/bin
LOCKJEPSEN_VALKEY_OLD_BIN=$OLD_PREFIX/bin"
elif [[ -x "$NOLUA_PREFIX/bin/valkey-server" && -x "$OLD_PREFIX/bin/valkey-server" ]]; then
  EXTRA_ENV="LOCKJEPSEN_VALKEY_NOLUA_BIN=$NOLUA_PREFIX/bin
LOCKJEPSEN_VALKEY_OLD_BIN=$OLD_PREFIX/bin"
fi

# Written for the Makefile and the tests; lockjepsen finds the binaries the same way.
cat > "$CACHE/env" <<ENV
LOCKJEPSEN_VALKEY_BIN=$VALKEY_BIN
LOCKJEPSEN_FAKETIME_LIB=$FAKETIME_LIB
$EXTRA_ENV
ENV
log "valkey $("$VALKEY_BIN/valkey-server" --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') in $VALKEY_BIN; libfaketime $FAKETIME_LIB"
echo "$CACHE/env"
