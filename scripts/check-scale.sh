#!/bin/sh
# Wall time and peak RSS of `lockjepsen check -q` (reading + checking +
# report) on generated clean histories: 64 clients, 16 keys, 1% unknown
# outcomes, 40-hex tokens; then of `lockjepsen shrink` on the same history
# with one double grant injected. Sizes in events; the histories are kept in
# OUT.
#   scripts/check-scale.sh [OUT]          # 1M and 10M
#   SIZES=1000000 scripts/check-scale.sh  # 1M only
set -eu
cd "$(dirname "$0")/.."
out=${1:-/tmp/lockjepsen-scale}
go build -o bin/lockjepsen ./cmd/lockjepsen
for n in ${SIZES:-1000000 10000000}; do
	dir=$out/$n
	if [ ! -s "$dir/scale/history.jsonl" ] || [ ! -s "$dir/scale-shrink/history.jsonl" ]; then
		LOCKJEPSEN_SAMPLES=$dir LOCKJEPSEN_SAMPLES_EVENTS=$n go test ./checker -run SampleRuns -count=1 -timeout 120m >/dev/null
	fi
	lines=$(wc -l <"$dir/scale/history.jsonl")
	code=0
	/usr/bin/time -v ./bin/lockjepsen check -q -no-html "$dir/scale" 2>"$dir/time.txt" || code=$?
	wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/time.txt")
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
	echo "$lines events: exit $code, wall $wall, peak RSS $((rss / 1024)) MiB"
	lines=$(wc -l <"$dir/scale-shrink/history.jsonl")
	rm -rf "$dir/shrunk"
	code=0
	/usr/bin/time -v ./bin/lockjepsen shrink --out "$dir/shrunk" "$dir/scale-shrink" >"$dir/shrink.txt" 2>"$dir/shrink-time.txt" || code=$?
	wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/shrink-time.txt")
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/shrink-time.txt")
	after=$(wc -l <"$dir/shrunk/history.jsonl" 2>/dev/null || echo none)
	echo "$lines events, one double grant injected: shrink exit $code, wall $wall, peak RSS $((rss / 1024)) MiB, $after events kept"
done
