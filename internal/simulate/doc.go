// Package simulate is the dry run behind `fleetflow simulate`: it loads a fleet file (the fleetspec clusters and
// namespaces plus policies, extra ResourceInterfaces and workloads), builds the fleet view in memory, and places
// the workloads one after another through the placement core, each decision's reservations counting against the
// next. No cluster, NATS or apiserver is involved.
package simulate
