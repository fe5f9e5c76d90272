// Package frameworks is the end-to-end test of fleetflow with every framework it schedules, on a real
// local fleet (a control plane and two workload clusters). For each kind it installs the framework's CRD
// by level 1 (a Duplicate SchedulePolicy copies the CRD from the control plane to every workload
// cluster), submits a sample CR, checks that it lands where the placement core predicts for the same
// fleet, policy and CR (internal/simulate), and plays the framework's controller in the workload cluster
// to check that its status flows back to the control plane. The package holds only tests and testdata.
package frameworks
