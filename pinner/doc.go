// Package pinner binds the pods of a copy whose SchedulePolicy pins pods (pinPods) to the nodes placement
// packed them on. Such a copy's pod templates carry the scheduling gate fleetflow.io/pinned, so its pods wait
// ungated by nothing but the pinner; the copy carries the packed nodes per component (schemas.AnnotationPins).
// For each gated pod the pinner picks a packed node of the pod's component that holds fewer of its pods than
// packed, adds a required node affinity to that node (metadata.name), and lifts the gate in one update; the
// cluster's scheduler then binds it there. A pod with no packed node left (more pods than packed, the copy
// gone or not pinned) is let go unpinned, so nothing waits on the pinner for ever. One pinner per cluster
// decides, elected through a Lease in the cluster.
package pinner
