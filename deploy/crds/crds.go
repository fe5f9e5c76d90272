package crds

import "embed"

// FS holds every CRD YAML of this directory.
//
//go:embed *.yaml
var FS embed.FS
