package kubescheduler

import _ "embed"

// BinPacking is binpacking.yaml: a KubeSchedulerConfiguration whose default profile scores nodes
// MostAllocated over cpu, memory and nvidia.com/gpu.
//
//go:embed binpacking.yaml
var BinPacking []byte
