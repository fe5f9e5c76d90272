package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// TestChartsDefaultToTheBuiltinKindsGroups: each chart's default workloadAPIGroups are what `fleetflow rbac`
// generates for the built-in ResourceInterfaces, so a new built-in RI cannot ship without its rights, and no
// default grants the core group.
func TestChartsDefaultToTheBuiltinKindsGroups(t *testing.T) {
	for _, tt := range []struct {
		chart           string
		workloadCluster bool
		groups          func(v chartValues) []string
	}{
		{"fleetflow", false, func(v chartValues) []string { return v.RBAC.WorkloadAPIGroups }},
		{"fleetflow-workload-cluster", true, func(v chartValues) []string { return v.OwnRole.WorkloadAPIGroups }},
	} {
		t.Run(tt.chart, func(t *testing.T) {
			var out bytes.Buffer
			if err := runRBAC(&out, io.Discard, nil, nil, tt.workloadCluster); err != nil {
				t.Fatal(err)
			}
			generated := tt.groups(parseValues(t, out.Bytes()))
			data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "chart", tt.chart, "values.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if inChart := tt.groups(parseValues(t, data)); !slices.Equal(inChart, generated) {
				t.Errorf("the chart's workloadAPIGroups %v, want what fleetflow rbac generates: %v", inChart, generated)
			}
			if slices.Contains(generated, "") {
				t.Error("the core group is granted whole")
			}
		})
	}
}

// TestRBACGrantsThePoliciesKinds: a policy's kinds add their groups, and a core kind a rule of its own; what is
// not a SchedulePolicy is refused by file and name.
func TestRBACGrantsThePoliciesKinds(t *testing.T) {
	policies := writeFile(t, "policies.yaml", `apiVersion: fleetflow.io/v1alpha1
kind: SchedulePolicy
metadata: {name: copy-config}
spec:
  resourceSelectors:
    kinds: [{kind: ConfigMap}, {kind: Service}, {group: example.com, kind: Widget}]
`)
	var out bytes.Buffer
	if err := runRBAC(&out, io.Discard, nil, []string{policies}, false); err != nil {
		t.Fatal(err)
	}
	v := parseValues(t, out.Bytes())
	if !slices.Contains(v.RBAC.WorkloadAPIGroups, "example.com") || !slices.Contains(v.RBAC.WorkloadAPIGroups, "kubeflow.org") {
		t.Errorf("groups %v, want the policy's example.com beside the built-in ones", v.RBAC.WorkloadAPIGroups)
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "services"},
		Verbs: []string{"get", "list", "watch", "patch", "update"}}}
	if !slices.EqualFunc(v.RBAC.ExtraReadRules, want, func(a, b rbacv1.PolicyRule) bool {
		return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) && slices.Equal(a.Verbs, b.Verbs)
	}) {
		t.Errorf("extra rules %+v, want %+v", v.RBAC.ExtraReadRules, want)
	}

	notPolicy := writeFile(t, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n")
	err := runRBAC(io.Discard, io.Discard, nil, []string{notPolicy}, false)
	if err == nil || !strings.Contains(err.Error(), "ConfigMap settings is not a SchedulePolicy") {
		t.Errorf("error %v, want the object named", err)
	}
}

// chartValues are the RBAC values of the two charts.
type chartValues struct {
	RBAC struct {
		WorkloadAPIGroups []string            `json:"workloadAPIGroups"`
		ExtraReadRules    []rbacv1.PolicyRule `json:"extraReadRules"`
	} `json:"rbac"`
	OwnRole struct {
		WorkloadAPIGroups []string `json:"workloadAPIGroups"`
	} `json:"ownRole"`
}

func parseValues(t *testing.T, data []byte) chartValues {
	t.Helper()
	var v chartValues
	if err := sigsyaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("values: %v\n%s", err, data)
	}
	return v
}
