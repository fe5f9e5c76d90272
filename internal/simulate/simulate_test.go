package simulate

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestSimulateFleet runs the sample fleet. Expectations by hand:
//   - train (8 GPUs, one worker): gpu-a has 2 free per node, so only gpu-b fits; training uses Spread, which a
//     summing estimator would send to gpu-a (16 free GPUs against 8).
//   - frontend (5 replicas, Divide 50/50 over region): 2.5 each, the remainder goes to eu, the first listed:
//     eu 3, us 2. In eu, maint is tainted and gpu-a's GPU nodes are tainted against the web pods, so cpu-eu takes 3;
//     BinPack between gpu-b (tainted nodes) and cpu-us leaves cpu-us.
//   - lonely: no policy selects RayClusters.
func TestSimulateFleet(t *testing.T) {
	in, err := Load("testdata/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	results, err := Run(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 {
		t.Fatalf("got %d results, want 3", len(results))
	}
	train, web, lonely := results[0], results[1], results[2]
	if train.Status != "Placed" || len(train.Clusters) != 1 || train.Clusters[0] != "gpu-b" {
		t.Errorf("train = %+v, want Placed on gpu-b", train)
	}
	if want := "pod worker (nvidia.com/gpu 8) fits no node: largest free 2 on gpu-a-node-0"; train.Reasons["gpu-a"] != want {
		t.Errorf("train reason for gpu-a = %q, want %q", train.Reasons["gpu-a"], want)
	}
	if web.Status != "Placed" || web.Replicas["cpu-eu"] != 3 || web.Replicas["cpu-us"] != 2 {
		t.Errorf("frontend = %+v, want 3 on cpu-eu and 2 on cpu-us", web)
	}
	if lonely.Status != "NoPolicy" || lonely.Policy != nil {
		t.Errorf("lonely = %+v, want NoPolicy without a policy", lonely)
	}

	var buf bytes.Buffer
	if err := WriteJSON(&buf, results); err != nil {
		t.Fatal(err)
	}
	var decoded []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &decoded); err != nil {
		t.Fatalf("%v:\n%s", err, buf.String())
	}
	for _, key := range []string{"workload", "policy", "status", "clusters", "reasons"} {
		if _, ok := decoded[2][key]; !ok {
			t.Errorf("JSON entry lacks %q: %s", key, buf.String())
		}
	}
	if decoded[0]["workload"] != "PyTorchJob/team-a/train" {
		t.Errorf("workload = %v, want PyTorchJob/team-a/train", decoded[0]["workload"])
	}
	buf.Reset()
	if err := WriteTable(&buf, results); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Deployment/team-a/frontend") || !strings.Contains(buf.String(), "cpu-eu(3)") {
		t.Errorf("table misses the frontend row:\n%s", buf.String())
	}
}

func TestSimulateRejectsBadFleetWithPaths(t *testing.T) {
	good, err := os.ReadFile("testdata/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		edit    func(string) string
		wantErr string
	}{
		{"percentages that do not sum to 100",
			func(s string) string {
				return strings.Replace(s, "{topologyValue: us, percentage: 50}", "{topologyValue: us, percentage: 40}", 1)
			},
			"policies[1].spec.spreadConstraints.percentageSplit: percentages sum to 90, want 100"},
		{"Divide on a non-divisible kind",
			func(s string) string {
				return strings.Replace(s, "kinds: [{group: apps, kind: Deployment}]", "kinds: [{group: kubeflow.org, kind: PyTorchJob}]", 1)
			},
			"policies[1].spec.resourceSelectors.kinds[0]: PyTorchJob.kubeflow.org is not divisible"},
		{"a workload with both file and object",
			func(s string) string {
				return strings.Replace(s, "- file: train.yaml", "- file: train.yaml\n  object: {kind: X}", 1)
			},
			"workloads[0]: set either file or object, not both"},
		{"a misspelled field", func(s string) string { return strings.Replace(s, "workloads:", "workload:", 1) }, "unknown field"},
		{"a second YAML document", func(s string) string { return s + "---\nworkloads: [{file: train.yaml}]\n" },
			"holds 2 YAML documents; a fleet file is one document"},
		{"two policies of a name", func(s string) string {
			return strings.Replace(s, "metadata: {name: web}", "metadata: {name: training}", 1)
		},
			`policies[1].metadata.name: "training" is also the name of policies[0]`},
		{"a quantity that does not parse", func(s string) string { return strings.Replace(s, `cpu: "64"`, `cpu: lots`, 1) },
			"clusters[0].nodes[0].allocatable[cpu]: lots is no quantity"},
		{"a label YAML reads as a boolean", func(s string) string {
			return strings.Replace(s, "metadata: {name: frontend, namespace: team-a}", "metadata: {name: frontend, namespace: team-a, labels: {canary: y}}", 1)
		}, "workloads[1].metadata.labels[canary]: want a string, got bool true (quote it"},
		{"a cluster label YAML reads as a boolean", func(s string) string {
			return strings.Replace(s, "labels: {provider: onprem, region: eu}", "labels: {provider: onprem, region: eu, gpu: on}", 1)
		},
			"clusters[0].labels[gpu]: want a string, got on, which YAML reads as a boolean (quote it"},
		{"a policy's selector value YAML reads as a boolean", func(s string) string {
			return strings.Replace(s, "metadata: {name: web}", "metadata: {name: web, labels: {tier: off}}", 1)
		}, "policies[1].metadata.labels[tier]: want a string, got off, which YAML reads as a boolean (quote it"},
		{"labels that are a list", func(s string) string {
			return strings.Replace(s, "metadata: {name: frontend, namespace: team-a}", "metadata: {name: frontend, namespace: team-a, labels: [canary]}", 1)
		}, "workloads[1].metadata.labels: want a map of strings, got []interface {} [canary]"},
		{"metadata that is no object", func(s string) string {
			return strings.Replace(s, "metadata: {name: frontend, namespace: team-a}", "metadata: 5", 1)
		}, "workloads[1].metadata: want an object, got float64 5"},
		{"a workload without apiVersion and kind", func(s string) string {
			return strings.Replace(s, "    apiVersion: apps/v1\n    kind: Deployment\n", "", 1)
		}, "workloads[1]: apiVersion: required; kind: required"},
		{"a workload whose apiVersion is no group/version", func(s string) string {
			return strings.Replace(s, "apiVersion: apps/v1", "apiVersion: apps/v1/beta", 1)
		}, `workloads[1]: apiVersion "apps/v1/beta": want VERSION or GROUP/VERSION`},
		{"a workload without a name", func(s string) string {
			return strings.Replace(s, "metadata: {name: frontend, namespace: team-a}", "metadata: {namespace: team-a}", 1)
		}, "workloads[1].metadata.name: required"},
		{"a workload without metadata", func(s string) string {
			return strings.Replace(s, "    metadata: {name: frontend, namespace: team-a}\n", "", 1)
		}, "workloads[1].metadata.name: required"},
		{"no workloads", func(s string) string { before, _, _ := strings.Cut(s, "workloads:"); return before },
			"workloads: required: nothing to place; list the CRs as - file: CR.yaml (relative to the fleet file) or - object: {apiVersion"},
		{"a workload's namespace unlike the object's", func(s string) string {
			return strings.Replace(s, "- object:", "- namespace: team-b\n  object:", 1)
		}, `workloads[1].namespace: "team-b", but the object names namespace "team-a"`},
		{"a workload namespace that is no DNS label", func(s string) string {
			return strings.Replace(s, "- file: train.yaml", "- file: train.yaml\n  namespace: Team_A", 1)
		}, `workloads[0].namespace: invalid namespace "Team_A"`},
		{"one workload twice", func(s string) string {
			return strings.Replace(s, "- file: train.yaml", "- file: train.yaml\n- file: train.yaml", 1)
		},
			"workloads[1]: kubeflow.org/PyTorchJob/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, err := Parse([]byte(tc.edit(string(good))), "fleet.yaml", "testdata")
			if err == nil {
				_, err = Run(in, nil)
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// TestSimulateDefaultsTheNamespace: a workload without a namespace goes to "default", as kubectl apply puts
// it, so a policy selecting namespaces by label takes it when the fleet file labels "default".
func TestSimulateDefaultsTheNamespace(t *testing.T) {
	fleet := `
namespaces:
  default: {labels: {tier: gold}}
clusters:
- name: c1
  apis: [apps/v1/Deployment]
  nodes: [{name: "n", allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}] # quoted: YAML 1.1 reads n as false
policies:
- metadata: {name: gold}
  spec:
    namespaceSelector: {matchLabels: {tier: gold}}
workloads:
- object:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      replicas: 1
      template:
        spec:
          containers: [{name: web, image: nginx, resources: {requests: {cpu: "1"}}}]
`
	in, err := Parse([]byte(fleet), "fleet.yaml", "testdata")
	if err != nil {
		t.Fatal(err)
	}
	results, err := Run(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Workload != "Deployment/default/web" || results[0].Status != "Placed" || results[0].Policy == nil || *results[0].Policy != "gold" {
		t.Errorf("results = %+v, want Deployment/default/web placed by policy gold", results)
	}
}

// TestSimulateWorkloadNamespace: a workload entry's namespace puts a CR that names none there, as kubectl apply -n
// does, so an upstream sample is taken by a policy that selects that namespace; without it the CR goes to default.
func TestSimulateWorkloadNamespace(t *testing.T) {
	const fleet = `
namespaces:
  ml: {labels: {tier: gold}}
clusters:
- name: c1
  apis: [apps/v1/Deployment]
  nodes: [{name: "n", allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}]
policies:
- metadata: {name: gold}
  spec:
    namespaceSelector: {matchLabels: {tier: gold}}
workloads:
- NAMESPACE
  object:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      replicas: 1
      template: {spec: {containers: [{name: web, image: nginx, resources: {requests: {cpu: "1"}}}]}}
`
	tests := []struct {
		name, entry, wantWorkload, wantStatus string
	}{
		{"namespace given", "namespace: ml", "Deployment/ml/web", "Placed"},
		{"none given", "namespace: ''", "Deployment/default/web", "NoPolicy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := Parse([]byte(strings.Replace(fleet, "NAMESPACE", tt.entry, 1)), "fleet.yaml", "testdata")
			if err != nil {
				t.Fatal(err)
			}
			results, err := Run(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != 1 || results[0].Workload != tt.wantWorkload || results[0].Status != tt.wantStatus {
				t.Errorf("results = %+v, want %s %s", results, tt.wantWorkload, tt.wantStatus)
			}
		})
	}
}

// TestSimulateUserRIOverridesBuiltin: a resourceInterfaces entry for apps/v1 Deployment replaces the built-in RI.
// This one computes the replica count (a constant) instead of reading a plain field, which makes Deployments
// non-divisible; the web policy's Divide must then be rejected, which shows the user RI is the one in force.
func TestSimulateUserRIOverridesBuiltin(t *testing.T) {
	data, err := os.ReadFile("../../deploy/resourceinterfaces/deployment.yaml")
	if err != nil {
		t.Skipf("built-in Deployment RI not found: %v", err)
	}
	riYAML := strings.Replace(string(data), "replicasPath: .spec.replicas // 1", `replicasPath: "2"`, 1)
	riYAML = strings.Replace(riYAML, "name: fleetflow-apps-deployment-v1", "name: my-deployment", 1)
	if riYAML == string(data) {
		t.Fatal("could not rewrite the replicas path of the built-in RI")
	}
	var ri map[string]any
	if err := yaml.Unmarshal([]byte(riYAML), &ri); err != nil {
		t.Fatal(err)
	}
	in, err := Load("testdata/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in.File.ResourceInterfaces = []map[string]any{ri}
	_, err = Run(in, nil)
	if err == nil || !strings.Contains(err.Error(), "policies[1].spec.resourceSelectors.kinds[0]: Deployment.apps is not divisible") {
		t.Errorf("err = %v, want Divide rejected because the user RI makes Deployment non-divisible", err)
	}
}

// TestSimulateLabelsNamespacesWithTheirName: the API server labels every namespace kubernetes.io/metadata.name
// with its name, and the placer reads namespace labels from the objects, so a policy selecting a namespace by
// name takes its workloads there. simulate must agree, for namespaces the file lists (with labels of their own
// or none) and for those only a workload names.
func TestSimulateLabelsNamespacesWithTheirName(t *testing.T) {
	cases := []struct {
		name, namespaces, namespace string
	}{
		{"a listed namespace with labels", "namespaces: {team-a: {labels: {tier: gold}}}", "team-a"},
		{"a listed namespace without labels", "namespaces: {team-a: {}}", "team-a"},
		{"a namespace only the workload names", "", "team-a"},
		{"default", "", "default"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fleet := tc.namespaces + `
clusters:
- name: c1
  nodes: [{name: node, allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}]
policies:
- metadata: {name: by-name}
  spec:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ` + tc.namespace + `}}
workloads:
- object:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: ` + tc.namespace + `}
    spec: {replicas: 1, template: {spec: {containers: [{name: web, resources: {requests: {cpu: "1"}}}]}}}
`
			in, err := Parse([]byte(fleet), "fleet.yaml", "testdata")
			if err != nil {
				t.Fatal(err)
			}
			results, err := Run(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != 1 || results[0].Status != "Placed" || results[0].Policy == nil || *results[0].Policy != "by-name" {
				t.Errorf("results = %+v, want the workload placed by policy by-name", results)
			}
		})
	}
}

// TestSimulateSkipsTheControlPlanesNamespaces: the control-plane producer publishes no workload of a skipped
// namespace (kube-system, fleetflow-system by default), so the placer never places it; simulate shows it
// Skipped, and it takes no room from the workloads after it.
func TestSimulateSkipsTheControlPlanesNamespaces(t *testing.T) {
	fleet := `
clusters:
- name: c1
  nodes: [{name: node, allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}]
policies:
- metadata: {name: all}
  spec: {}
workloads:
- object: {apiVersion: apps/v1, kind: Deployment, metadata: {name: coredns, namespace: kube-system}, spec: {replicas: 1, template: {spec: {containers: [{name: c, resources: {requests: {cpu: "4"}}}]}}}}
- object: {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: team}, spec: {replicas: 1, template: {spec: {containers: [{name: c, resources: {requests: {cpu: "4"}}}]}}}}
`
	cases := []struct {
		name       string
		skip       *regexp.Regexp
		wantStatus []string
	}{
		{"skipped", regexp.MustCompile(`^(?:kube-.*|fleetflow-system)$`), []string{StatusSkipped, "Placed"}},
		{"none skipped", nil, []string{"Placed", "Unschedulable"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, err := Parse([]byte(fleet), "fleet.yaml", "testdata")
			if err != nil {
				t.Fatal(err)
			}
			in.SkippedNamespaces = tc.skip
			results, err := Run(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.wantStatus {
				if results[i].Status != want {
					t.Errorf("%s: status %s, want %s (%s)", results[i].Workload, results[i].Status, want, results[i].Message)
				}
			}
			if tc.skip != nil && (results[0].Workload != "Deployment/kube-system/coredns" || results[0].Policy != nil ||
				!strings.Contains(results[0].Message, "namespace kube-system is the control plane's own (--skip-namespaces)")) {
				t.Errorf("skipped result = %+v", results[0])
			}
		})
	}
}

// TestSimulatePlacesKindsWithoutRI: a kind no RI describes (a CRD, a ConfigMap) asks nothing of capacity, and
// the placer places it by its policy alone: a Duplicate policy copies it onto every Ready cluster the policy
// selects, whatever their room; a cluster-scoped kind has no namespace, so a namespace selector never takes it.
func TestSimulatePlacesKindsWithoutRI(t *testing.T) {
	const fleet = `
clusters:
- {name: a, labels: {level1: "yes"}, nodes: [{name: node, allocatable: {cpu: "1", memory: 1Gi, pods: "1"}, requested: {cpu: "1", pods: "1"}}]}
- {name: b, labels: {level1: "yes"}, nodes: [{name: node, allocatable: {cpu: "8", memory: 8Gi, pods: "110"}}]}
- {name: c, labels: {level1: "yes"}, ready: false, nodes: [{name: node, allocatable: {cpu: "8", memory: 8Gi, pods: "110"}}]}
- {name: d, nodes: [{name: node, allocatable: {cpu: "8", memory: 8Gi, pods: "110"}}]}
policies:
- metadata: {name: level1}
  spec:
    resourceSelectors: {kinds: [{group: apiextensions.k8s.io, kind: CustomResourceDefinition}, {kind: ConfigMap}]}
    clusterSelector: {matchLabels: {level1: "yes"}}
    spreadConstraints: {spreadMode: Duplicate}
- metadata: {name: team-only}
  spec:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: team}}
    resourceSelectors: {kinds: [{kind: Secret}, {group: apiextensions.k8s.io, kind: CustomResourceDefinition}]}
    spreadConstraints: {spreadMode: Duplicate}
workloads:
- object: OBJECT
`
	tests := []struct {
		name         string
		object       string
		wantWorkload string
		wantStatus   string
		wantPolicy   string
		wantClusters []string
	}{
		{"a CRD on every selected Ready cluster, full or not",
			`{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: pytorchjobs.kubeflow.org}}`,
			"CustomResourceDefinition//pytorchjobs.kubeflow.org", "Placed", "level1", []string{"a", "b"}},
		{"a ConfigMap, put in default",
			`{apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {k: v}}`,
			"ConfigMap/default/settings", "Placed", "level1", []string{"a", "b"}},
		{"a namespaced kind without RI, taken by its namespace",
			`{apiVersion: v1, kind: Secret, metadata: {name: token, namespace: team}}`,
			"Secret/team/token", "Placed", "team-only", []string{"a", "b", "d"}},
		{"a namespaced kind without RI, in a namespace no policy takes",
			`{apiVersion: v1, kind: Secret, metadata: {name: token}}`,
			"Secret/default/token", "NoPolicy", "", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := Parse([]byte(strings.Replace(fleet, "OBJECT", tt.object, 1)), "fleet.yaml", "testdata")
			if err != nil {
				t.Fatal(err)
			}
			results, err := Run(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != 1 {
				t.Fatalf("got %d results, want 1", len(results))
			}
			r := results[0]
			policy := ""
			if r.Policy != nil {
				policy = *r.Policy
			}
			if r.Workload != tt.wantWorkload || r.Status != tt.wantStatus || policy != tt.wantPolicy ||
				!slices.Equal(r.Clusters, tt.wantClusters) {
				t.Errorf("result = %s %s policy %q on %v (%s, %v), want %s %s policy %q on %v", r.Workload, r.Status, policy,
					r.Clusters, r.Message, r.Reasons, tt.wantWorkload, tt.wantStatus, tt.wantPolicy, tt.wantClusters)
			}
			if len(r.Pods) != 0 {
				t.Errorf("pods = %v, want none: the kind asks nothing of capacity", r.Pods)
			}
		})
	}
}
