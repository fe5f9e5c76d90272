package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestSimulateOutputs runs simulate on the sample fleet in both formats: the JSON is the array `check` reads
// (workload, status, clusters) with the reasons grouped by reason text, and the table names each reason once.
func TestSimulateOutputs(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, out string)
	}{
		{"json", []string{"-o", "json"}, func(t *testing.T, out string) {
			var entries []struct {
				Workload string              `json:"workload"`
				Status   string              `json:"status"`
				Clusters []string            `json:"clusters"`
				Reasons  map[string][]string `json:"reasons"`
			}
			if err := json.Unmarshal([]byte(out), &entries); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			if len(entries) != 3 || entries[0].Workload != "PyTorchJob/team-a/train" || entries[0].Status != "Placed" ||
				len(entries[0].Clusters) != 1 || entries[0].Clusters[0] != "gpu-b" {
				t.Fatalf("entries = %+v, want train placed on gpu-b first", entries)
			}
			const reason = "pod worker (nvidia.com/gpu 8) fits no node: largest free 2 on gpu-a-node-0"
			if got := entries[0].Reasons[reason]; len(got) != 1 || got[0] != "gpu-a" {
				t.Errorf("train reasons = %v, want %q for [gpu-a]", entries[0].Reasons, reason)
			}
		}},
		{"table", nil, func(t *testing.T, out string) {
			for _, want := range []string{"PyTorchJob/team-a/train", "gpu-a: pod worker (nvidia.com/gpu 8) fits no node"} {
				if !strings.Contains(out, want) {
					t.Errorf("table lacks %q:\n%s", want, out)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newRootCommand()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetArgs(append([]string{"simulate", "../../internal/simulate/testdata/fleet.yaml"}, tt.args...))
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			tt.check(t, out.String())
		})
	}
}

// TestSimulateFailsOnUnschedulableWhenAsked: with --fail-on-unschedulable a workload no cluster fits fails the run
// (exit 1), after every decision is printed, naming it; without the flag the same run succeeds.
func TestSimulateFailsOnUnschedulableWhenAsked(t *testing.T) {
	fleet := writeFile(t, "fleet.yaml", `clusters:
- name: small
  nodes:
  - name: node-a
    allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
policies:
- metadata: {name: all}
  spec: {resourceSelectors: {kinds: [{group: apps, kind: Deployment}]}}
workloads:
- object: {apiVersion: apps/v1, kind: Deployment, metadata: {name: fits, namespace: a}, spec: {replicas: 1,
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}}}
- object: {apiVersion: apps/v1, kind: Deployment, metadata: {name: huge, namespace: a}, spec: {replicas: 1,
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "64"}}}]}}}}
`)
	for _, tt := range []struct {
		args    []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"--fail-on-unschedulable"}, "1 workloads Unschedulable: Deployment/a/huge"},
	} {
		root := newRootCommand()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append([]string{"simulate", fleet}, tt.args...))
		err := root.Execute()
		if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.wantErr)
		}
		if !strings.Contains(out.String(), "Deployment/a/fits") || !strings.Contains(out.String(), "Deployment/a/huge") {
			t.Errorf("%v: output lacks a decision:\n%s", tt.args, out.String())
		}
	}
}
