// Package karta is fleetflow's Karta-compatible workload analysis: it loads Run:AI Karta
// ResourceInterfaces (optimization.nvidia.com/v1alpha1), compiles their jq once with gojq, and
// reads from any framework CR how many pods of which shape it will create (Analysis), its gang
// groups and its status phase. It owns the RI types, the engine, the effective pod request rules
// and the registry of RIs by GVK. It is pure: no I/O, no clients; callers hand it bytes and
// unstructured objects.
package karta
