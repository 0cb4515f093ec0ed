#!/bin/sh
# Build lockjepsen with one driven library pinned to another version, for a
# finding's before and after (results/findings/): the repository's go.mod is
# left alone; a copy with the pin is handed to go build (-modfile).
#   scripts/pinned-build.sh MODULE@VERSION OUT [BUILD-TAGS]
#   scripts/pinned-build.sh github.com/go-redsync/redsync/v4@v4.12.0 bin/lockjepsen-redsync-v4.12.0 redsync_goredis
# Then run OUT as lockjepsen; `OUT version` names the versions built in.
set -eu
if [ $# -lt 2 ]; then
	echo "usage: $0 MODULE@VERSION OUT [BUILD-TAGS]" >&2
	exit 254
fi
pin=$1 out=$2 tags=${3:-}
case $pin in
*@v*) ;;
*)
	echo "$0: $pin: want MODULE@VERSION, e.g. github.com/go-redsync/redsync/v4@v4.12.0" >&2
	exit 254
	;;
esac
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp go.mod "$tmp/pinned.mod"
cp go.sum "$tmp/pinned.sum"
go mod edit -modfile="$tmp/pinned.mod" -require="$pin"
CGO_ENABLED=0 go build -modfile="$tmp/pinned.mod" -mod=mod -tags "$tags" -o "$out" ./cmd/lockjepsen
"$out" version | grep -v '^valkey '
