#!/usr/bin/env bash
# Runs the module's Go fuzz targets one after another, each for FUZZTIME: go test -fuzz takes one target of one
# package per run. Every target runs even when one fails; go test saves a failing input under the package's
# testdata/fuzz/<FuzzName>/, where plain go test then runs it as a regression test.
#
# Usage: hack/fuzz.sh [NAME_REGEXP ...]
#   NAME_REGEXP  run only the targets whose whole name matches one of these extended regexps (FuzzDecode.*)
#   FUZZTIME     how long each target runs, as go test -fuzztime takes it (default: 1m)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
fuzztime=${FUZZTIME:-1m}
match='Fuzz.*'
if [ $# -gt 0 ]; then
	match=$(IFS='|'; echo "$*")
fi

# One "package-dir target" line per target, from the test files (tools/ holds other modules).
targets=$(grep -rE --include='*_test.go' --exclude-dir=tools --exclude-dir=.git --exclude-dir=bin \
	-o '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . |
	sed -E 's|^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*).*|\1 \2|' | sort -u | grep -E " ($match)\$" || true)
if [ -z "$targets" ]; then
	echo "fuzz: no target matches $match" >&2
	exit 1
fi

failed=()
while read -r dir name; do
	echo "fuzz: $name in $dir for $fuzztime"
	if ! go test -run='^$' -fuzz="^$name\$" -fuzztime="$fuzztime" "$dir"; then
		failed+=("$name in $dir")
	fi
done <<<"$targets"

if [ ${#failed[@]} -gt 0 ]; then
	printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
	exit 1
fi
