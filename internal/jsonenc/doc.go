// Package jsonenc writes JSON without reflection for the few shapes fleetflow encodes once per workload
// decision: unstructured Kubernetes objects and the placer's own payloads. Its output is byte for byte
// what encoding/json writes for the same values, so either may produce a message or a content hash. The
// Karta engine quotes strings with AppendString too.
package jsonenc
