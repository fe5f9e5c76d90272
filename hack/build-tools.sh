#!/usr/bin/env bash
# Builds the binaries the tests run besides fleetflow (the local fleet's etcd and kube-apiserver; helm, which
# renders deploy/chart; kube-scheduler, kube-controller-manager and kwok, which make a local fleet's workload
# clusters schedule and run pods; training-operator, kuberay-operator, jobset-controller and lws-controller,
# the framework operators a local fleet can run against its workload clusters) from the Go module proxy into
# bin/.
#
# Each binary is built from a module under tools/, pinned by that module's go.mod: from its main.go, or else
# from the package its go.mod names as a tool. The framework operators share tools/operators, so that their
# k8s.io/* and controller-runtime packages compile once; every other binary has its own tools/<name>. A
# binary is skipped when bin/<name> exists and bin/.<name>.stamp holds the hash of its module's go.mod and
# go.sum and of its main.go, if it has one, so changing a pin rebuilds exactly the binaries it concerns.
#
# Usage: hack/build-tools.sh [--force] [etcd|kube-apiserver|helm|kube-scheduler|kube-controller-manager|kwok|
#                                       training-operator|kuberay-operator|jobset-controller|lws-controller ...]
#   With no tool named it builds them all.
#   BIN_DIR   where binaries go (default: <repo>/bin)
#   HEARTBEAT seconds between "still building" lines (default: 30), so CI logs show progress on long builds
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin_dir=${BIN_DIR:-$root/bin}
heartbeat=${HEARTBEAT:-30}
log() { echo "build-tools: $*"; }

ticker=
trap '[ -z "$ticker" ] || kill "$ticker" 2>/dev/null || true' EXIT

# module_of prints the directory under tools/ of the module a binary is built from.
module_of() {
	case $1 in
	training-operator | kuberay-operator | jobset-controller | lws-controller) echo operators ;;
	*) echo "$1" ;;
	esac
}

# package_of prints what to build for a binary, relative to its module: a main package of the module, or a
# tool its go.mod names.
package_of() {
	case $1 in
	training-operator) echo ./training-operator ;;
	kuberay-operator) echo github.com/ray-project/kuberay/ray-operator ;;
	jobset-controller) echo sigs.k8s.io/jobset ;;
	lws-controller) echo sigs.k8s.io/lws/cmd ;;
	*)
		if [ -f "$root/tools/$1/main.go" ]; then
			echo .
		else
			awk '$1 == "tool" { print $2; exit }' "$root/tools/$1/go.mod"
		fi
		;;
	esac
}

# stamp_of prints the hash that identifies the sources a binary was built from.
stamp_of() {
	local dir pkg
	dir=$root/tools/$(module_of "$1")
	pkg=$(package_of "$1")
	local files=(go.mod go.sum)
	case $pkg in
	.) files+=(main.go) ;;
	./*) files+=("${pkg#./}/main.go") ;;
	esac
	(cd "$dir" && sha256sum "${files[@]}") | sha256sum | cut -d' ' -f1
}

# version_of prints the version line of a built tool.
version_of() {
	case $1 in
	helm) "$2" version --short 2>&1 | head -1 ;;
	kwok) "$2" --version 2>&1 | tail -1 ;;
	lws-controller) "$2" --version 2>&1 | head -1 ;;
	# These have no version flag (and would start on an unknown one); the pin is what was built.
	training-operator) echo "github.com/kubeflow/training-operator $(module_version training-operator github.com/kubeflow/training-operator)" ;;
	kuberay-operator) echo "github.com/ray-project/kuberay/ray-operator $(module_version kuberay-operator github.com/ray-project/kuberay/ray-operator)" ;;
	jobset-controller) echo "sigs.k8s.io/jobset $(module_version jobset-controller sigs.k8s.io/jobset)" ;;
	*) "$2" --version 2>&1 | head -1 ;;
	esac
}

# module_version prints the version the tools module of a binary pins for a module path.
module_version() {
	awk -v mod="$2" '$1 == mod && $2 ~ /^v/ { print $2; exit }' "$root/tools/$(module_of "$1")/go.mod"
}

ldflags_for() {
	case $1 in
	kube-apiserver | kube-scheduler | kube-controller-manager)
		# Without these the component reports v0.0.0-master, which clients and version checks treat as unknown.
		local version major minor
		version=$(module_version "$1" k8s.io/kubernetes)
		if [ -z "$version" ]; then
			echo "build-tools: tools/$1/go.mod does not pin k8s.io/kubernetes" >&2
			return 1
		fi
		major=${version#v}
		major=${major%%.*}
		minor=${version#v*.}
		minor=${minor%%.*}
		local pkg=k8s.io/component-base/version
		echo "-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
		;;
	kwok)
		# kwok's own default is the source's constant; set it from the pin, as kwok's release script does.
		local version
		version=$(module_version kwok sigs.k8s.io/kwok)
		if [ -z "$version" ]; then
			echo "build-tools: tools/kwok/go.mod does not pin sigs.k8s.io/kwok" >&2
			return 1
		fi
		echo "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${version#v}"
		;;
	jobset-controller | lws-controller)
		# Both log their version at start and report v0.0.0-main without it, as their release Makefiles set it.
		local mod=sigs.k8s.io/jobset
		[ "$1" = jobset-controller ] || mod=sigs.k8s.io/lws
		local version
		version=$(module_version "$1" "$mod")
		if [ -z "$version" ]; then
			echo "build-tools: tools/$(module_of "$1")/go.mod does not pin $mod" >&2
			return 1
		fi
		echo "-s -w -X $mod/pkg/version.GitVersion=$version"
		;;
	*) echo "-s -w" ;;
	esac
}

expected_minutes() {
	case $1 in
	kube-apiserver) echo "about 11-14 minutes on 2 cores from an empty module cache, a few with a warm build cache" ;;
	helm) echo "about 1 minute on 2 cores" ;;
	kube-scheduler | kube-controller-manager | kwok)
		echo "a few minutes on 2 cores after kube-apiserver, whose packages it shares; see docs/local-fleet.md"
		;;
	training-operator | kuberay-operator | jobset-controller | lws-controller)
		echo "about 3 minutes on 2 cores for the operators' shared k8s.io/* v0.35 packages, seconds once cached; see docs/local-fleet.md"
		;;
	*) echo "about 2 minutes on 2 cores from an empty module cache" ;;
	esac
}

build_one() {
	local name=$1
	local target=$bin_dir/$name
	local stamp_file=$bin_dir/.$name.stamp
	local stamp
	stamp=$(stamp_of "$name")
	if ! $force && [ -x "$target" ] && [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ]; then
		log "$name is up to date ($target)"
		return 0
	fi
	local ldflags
	ldflags=$(ldflags_for "$name")
	log "building $name into $target ($(expected_minutes "$name"))"
	mkdir -p "$bin_dir"
	local tmp=$target.tmp.$$
	local start=$SECONDS
	# sleep gets /dev/null so that, once the loop is killed, no leftover sleep keeps our stdout pipe open.
	(
		while sleep "$heartbeat" </dev/null >/dev/null 2>&1; do
			log "still building $name ($(((SECONDS - start) / 60))m$(((SECONDS - start) % 60))s)"
		done
	) &
	ticker=$!
	local status=0
	(cd "$root/tools/$(module_of "$name")" && GOWORK=off GOFLAGS=-mod=readonly go build -trimpath -ldflags "$ldflags" -o "$tmp" "$(package_of "$name")") || status=$?
	kill "$ticker" 2>/dev/null || true
	wait "$ticker" 2>/dev/null || true
	if [ $status -ne 0 ]; then
		rm -f "$tmp"
		log "building $name failed (exit $status)"
		return $status
	fi
	mv -f "$tmp" "$target"
	echo "$stamp" >"$stamp_file"
	log "built $name in $(((SECONDS - start) / 60))m$(((SECONDS - start) % 60))s: $(version_of "$name" "$target")"
}

# main is called on the last line, so bash has parsed the whole file before running any of it: editing the
# script while a long build runs cannot derail it.
main() {
	force=false
	tools=()
	for arg in "$@"; do
		case $arg in
		--force) force=true ;;
		etcd | kube-apiserver | helm | kube-scheduler | kube-controller-manager | kwok | training-operator | \
			kuberay-operator | jobset-controller | lws-controller) tools+=("$arg") ;;
		*)
			echo "build-tools: unknown argument $arg (want --force, etcd, kube-apiserver, helm, kube-scheduler," \
				"kube-controller-manager, kwok, training-operator, kuberay-operator, jobset-controller or" \
				"lws-controller)" >&2
			exit 2
			;;
		esac
	done
	if [ ${#tools[@]} -eq 0 ]; then
		tools=(etcd kube-apiserver helm kube-scheduler kube-controller-manager kwok training-operator kuberay-operator
			jobset-controller lws-controller)
	fi

	if ! command -v go >/dev/null; then
		echo "build-tools: go is not on PATH" >&2
		exit 1
	fi
	for tool in "${tools[@]}"; do
		build_one "$tool"
	done
}

main "$@"
exit
