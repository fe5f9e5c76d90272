// Package resourceinterfaces ships fleetflow's built-in Karta ResourceInterfaces: one YAML file
// per framework kind, written from each framework's API docs and CRD so that they give the true pod
// count (the fields they read are cited in comments). placement/karta compiles them as built-ins.
package resourceinterfaces

import "embed"

// FS holds the built-in RI files.
//
//go:embed *.yaml
var FS embed.FS
