#!/bin/sh
# Build lockjepsen with a driven library pinned to another version, for a
# finding's before and after (results/findings/): the repository's go.mod is
# left alone; a copy with the pins is handed to go build (-modfile).
#   scripts/pinned-build.sh PINS OUT [BUILD-TAGS]
#   scripts/pinned-build.sh github.com/go-redsync/redsync/v4@v4.12.0 bin/lockjepsen-redsync-v4.12.0 redsync_goredis
# PINS is MODULE@VERSION, or several joined by commas; -MODULE drops a
# requirement whose own go.mod would raise the pinned module back up (Go
# takes the highest version any requirement asks for):
#   scripts/pinned-build.sh github.com/valkey-io/valkey-go@v1.0.69,github.com/go-redsync/redsync/v4@v4.15.0,-github.com/valkey-io/valkey-go/valkeycompat OUT redsync_goredis
# Then run OUT as lockjepsen; `OUT version` names the versions built in.
set -eu
if [ $# -lt 2 ]; then
	echo "usage: $0 MODULE@VERSION[,MODULE@VERSION|,-MODULE]... OUT [BUILD-TAGS]" >&2
	exit 254
fi
pins=$1 out=$2 tags=${3:-}
edits=
for pin in $(echo "$pins" | tr ',' ' '); do
	case $pin in
	-*) edits="$edits -droprequire=${pin#-}" ;;
	*@v*) edits="$edits -require=$pin" ;;
	*)
		echo "$0: $pin: want MODULE@VERSION (or -MODULE to drop one), e.g. github.com/go-redsync/redsync/v4@v4.12.0" >&2
		exit 254
		;;
	esac
done
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp go.mod "$tmp/pinned.mod"
cp go.sum "$tmp/pinned.sum"
# shellcheck disable=SC2086 # one word per edit
go mod edit -modfile="$tmp/pinned.mod" $edits
CGO_ENABLED=0 go build -modfile="$tmp/pinned.mod" -mod=mod -tags "$tags" -o "$out" ./cmd/lockjepsen
"$out" version | grep -v '^valkey '
