// Package crds holds the CustomResourceDefinitions the control plane needs: fleetflow's own Cluster and
// SchedulePolicy (generated from api/v1alpha1) and fleetflow's open-schema CRD for Karta's
// ResourceInterface. They are embedded so the binary can install them.
package crds
