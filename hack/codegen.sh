#!/usr/bin/env bash
# Regenerates the DeepCopy methods of api/ and the CRD YAML under deploy/crds with controller-gen,
# which is pinned in its own module (tools/codegen/go.mod) so it never enters the main go.mod.
set -euo pipefail
cd "$(dirname "$0")/.."

controller_gen() { go tool -modfile=tools/codegen/go.mod controller-gen "$@"; }

controller_gen object paths=./api/...
controller_gen crd paths=./api/... output:crd:artifacts:config=deploy/crds

# The Helm chart installs the same CRDs (Helm reads them from the chart's crds/ directory only).
rm -f deploy/chart/fleetflow/crds/*.yaml
cp deploy/crds/*.yaml deploy/chart/fleetflow/crds/
