// Package chart holds fleetflow's Helm charts (fleetflow, fleetflow-workload-cluster) and tests of what they
// ship beside their templates: the alerts and the Grafana dashboard under fleetflow/files.
package chart
