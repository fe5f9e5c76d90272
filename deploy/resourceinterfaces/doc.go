// Package resourceinterfaces ships fleetflow's built-in Karta ResourceInterfaces: one YAML file
// per framework kind, written from each framework's API docs and CRD so that they give the true pod
// count and the controllers' defaults (the fields they read are cited in each file's comments).
// placement/karta compiles them as built-ins; a user RI for the same GVK overrides them.
//
// The files are Karta ResourceInterfaces with one documented extension, understood by our engine
// only: fragmentedPodSpecDefinition.nodeSelectorPath and .tolerationsPath, because placement must
// honour node constraints that a framework such as NIMService keeps outside any pod template. Dynamo's
// and Milvus's component specs carry enough of a PodSpec that jq assembles one (podSpecPath), with their
// init and sidecar containers. Everything else, including Dynamo's "gpu" resource key (rewritten to
// nvidia.com/gpu) and the multi-host pod multipliers, is plain jq.
package resourceinterfaces

import "embed"

// FS holds the built-in RI files.
//
//go:embed *.yaml
var FS embed.FS
