// Package jsondec decodes JSON into the generic values encoding/json produces for an `any` target
// (map[string]any, []any, string, float64, bool, nil), with the same results and the same inputs rejected,
// without reflection. The placer decodes every workload object it receives this way: with encoding/json,
// decoding a CR cost about half as much as analysing it, on a goroutine the whole pipeline shares CPU with.
package jsondec
