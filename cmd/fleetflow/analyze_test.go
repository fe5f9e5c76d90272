package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetflow/fleetflow/internal/evalguard"
	"github.com/fleetflow/fleetflow/placement/karta"
)

const testRayCluster = `apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: demo
  namespace: ml
spec:
  headGroupSpec:
    template:
      spec:
        containers:
        - name: head
          resources: {requests: {cpu: 500m, memory: 1Gi}}
  workerGroupSpecs:
  - groupName: gpu
    replicas: 2
    numOfHosts: 2
    template:
      spec:
        nodeSelector: {accelerator: h100}
        tolerations: [{key: nvidia.com/gpu, operator: Exists}]
        containers:
        - name: worker
          resources: {limits: {nvidia.com/gpu: "1"}, requests: {cpu: "4", memory: 0}}
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAnalyzeJSONShape checks the exact key order and values of -o json. Expected values by hand:
// head 1 pod of 500m/1Gi; gpu group replicas 2 x numOfHosts 2 = 4 pods of 4 CPU + 1 GPU (memory 0 is
// omitted); totals: cpu 0.5 + 4 x 4 = 16500m, memory 1Gi, GPUs 4.
func TestAnalyzeJSONShape(t *testing.T) {
	cr := writeFile(t, "rc.yaml", testRayCluster)
	var out bytes.Buffer
	if err := runAnalyze(nil, &out, io.Discard, nil, cr, "json"); err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, out.Bytes()); err != nil {
		t.Fatal(err)
	}
	want := `[{"apiVersion":"ray.io/v1","kind":"RayCluster","namespace":"ml","name":"demo",` +
		`"resourceInterface":"fleetflow-ray-io-raycluster-v1","components":[` +
		`{"name":"head","instance":"","replicas":1,"minReplicas":null,"maxReplicas":null,"pods":1,` +
		`"podRequests":{"cpu":"500m","memory":"1Gi"},"nodeSelector":{},"tolerations":[]},` +
		`{"name":"worker","instance":"gpu","replicas":4,"minReplicas":0,"maxReplicas":null,"pods":4,` +
		`"podRequests":{"cpu":"4","nvidia.com/gpu":"1"},"nodeSelector":{"accelerator":"h100"},` +
		`"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists"}]}],` +
		`"totalPods":5,"totalRequests":{"cpu":"16500m","memory":"1Gi","nvidia.com/gpu":"4"},` +
		`"gangGroups":[{"name":"cluster","members":[` +
		`{"componentName":"head","groupByKeyPaths":[".metadata.labels[\"ray.io/cluster\"]"],"filters":[]},` +
		`{"componentName":"worker","groupByKeyPaths":[".metadata.labels[\"ray.io/cluster\"]"],"filters":[]}]}],` +
		`"status":"Undefined"}]`
	if compact.String() != want {
		t.Errorf("json output\n got: %s\nwant: %s", compact.String(), want)
	}
}

// TestAnalyzeWarnsOfUnknownRIFields: a misspelt field of an RI (specDefinitoin) would drop the component's
// pods without a word; analyze names it on stderr, and still reads the CR through the rest of the RI.
func TestAnalyzeWarnsOfUnknownRIFields(t *testing.T) {
	ri := writeFile(t, "typo-ri.yaml", `apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
metadata: {name: typo}
spec:
  structureDefinition:
    rootComponent: {name: rc, kind: {group: ray.io, version: v1, kind: RayCluster}}
    childComponents:
    - name: head
      ownerRef: rc
      specDefinitoin: {podTemplateSpecPath: .spec.headGroupSpec.template}
`)
	cr := writeFile(t, "rc.yaml", testRayCluster)
	var warnings bytes.Buffer
	if err := runAnalyze(nil, io.Discard, &warnings, []string{ri}, cr, "json"); err != nil {
		t.Fatal(err)
	}
	want := `ResourceInterface typo: spec: unknown field "structureDefinition.childComponents[0].specDefinitoin" (ignored)`
	if !strings.Contains(warnings.String(), want) {
		t.Errorf("warnings %q, want %q", warnings.String(), want)
	}
}

func TestAnalyzeWithRIFileShowsFile(t *testing.T) {
	ri := writeFile(t, "my-ri.yaml", `apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
spec:
  structureDefinition:
    rootComponent: {name: rc, kind: {group: ray.io, version: v1, kind: RayCluster}}
    childComponents:
    - name: head
      ownerRef: rc
      specDefinition: {podTemplateSpecPath: .spec.headGroupSpec.template}
`)
	cr := writeFile(t, "rc.yaml", testRayCluster)
	var out bytes.Buffer
	if err := runAnalyze(nil, &out, io.Discard, []string{ri}, cr, "json"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		ResourceInterface string `json:"resourceInterface"`
		TotalPods         int    `json:"totalPods"`
	}
	oneReport(t, out.Bytes(), &got)
	// Only the head is modelled by this RI: 1 pod.
	if got.ResourceInterface != ri || got.TotalPods != 1 {
		t.Errorf("got %+v, want resourceInterface %s and 1 pod", got, ri)
	}
	// With --ri the built-ins are not consulted: a Deployment is unknown.
	dep := writeFile(t, "dep.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n")
	err := runAnalyze(nil, &out, io.Discard, []string{ri}, dep, "json")
	if err == nil || !strings.Contains(err.Error(), "no ResourceInterface for apps/v1, Kind=Deployment") {
		t.Errorf("got %v, want unknown-kind error", err)
	}
}

func TestAnalyzeErrors(t *testing.T) {
	unknown := writeFile(t, "x.yaml", "apiVersion: example.com/v1\nkind: Nothing\nmetadata: {name: x}\n")
	if err := runAnalyze(nil, &bytes.Buffer{}, io.Discard, nil, unknown, "json"); err == nil || !strings.Contains(err.Error(), "Kind=Nothing") {
		t.Errorf("unknown kind: got %v", err)
	}
	bad := writeFile(t, "bad.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1.5}\n")
	if err := runAnalyze(nil, &bytes.Buffer{}, io.Discard, nil, bad, "json"); err == nil || !strings.Contains(err.Error(), "replica count") {
		t.Errorf("failed analysis: got %v", err)
	}
}

// TestAnalyzeNamesAMissingOrMalformedTypeMeta: a CR without a usable apiVersion or kind is refused with the
// field and the reason, not as "no ResourceInterface for /, Kind=".
func TestAnalyzeNamesAMissingOrMalformedTypeMeta(t *testing.T) {
	tests := []struct {
		name, cr, want string
	}{
		{"neither", "metadata: {name: x}\nspec: {}\n", "x.yaml: apiVersion: required; kind: required"},
		{"no apiVersion", "kind: PyTorchJob\nmetadata: {name: x}\n", "x.yaml: apiVersion: required"},
		{"no kind", "apiVersion: kubeflow.org/v1\nmetadata: {name: x}\n", "x.yaml: kind: required"},
		{"not strings", "apiVersion: 5\nkind: [PyTorchJob]\n",
			"x.yaml: apiVersion: want a string, got float64 5; kind: want a string, got []interface {} [PyTorchJob]"},
		{"no version", "apiVersion: kubeflow.org/\nkind: PyTorchJob\n", `x.yaml: apiVersion "kubeflow.org/": want VERSION or GROUP/VERSION`},
		{"one of several documents", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\nkind: PyTorchJob\nmetadata: {name: x}\n",
			"x.yaml:5: apiVersion: required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, "x.yaml", tt.cr)
			err := runAnalyze(nil, &bytes.Buffer{}, io.Discard, nil, file, "table")
			if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
				t.Errorf("got %v, want an error ending in %q", err, tt.want)
			}
		})
	}
}

// TestAnalyzeReadsAnOlderVersionThroughTheRIOfAnother: a CR in a version no RI names (ray.io/v1alpha1, which
// KubeRay's CRD still serves) is read through the RI of the one version that has one, with a warning saying so;
// a kind no version of which has an RI is still refused.
func TestAnalyzeReadsAnOlderVersionThroughTheRIOfAnother(t *testing.T) {
	cr := writeFile(t, "rc.yaml", strings.Replace(testRayCluster, "apiVersion: ray.io/v1", "apiVersion: ray.io/v1alpha1", 1))
	var out, warnings bytes.Buffer
	if err := runAnalyze(nil, &out, &warnings, nil, cr, "json"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(warnings.String(), "no ResourceInterface for ray.io/v1alpha1; read as ray.io/v1") {
		t.Errorf("warnings %q, want one saying the CR was read as ray.io/v1", warnings.String())
	}
	var analysis struct {
		TotalPods int64 `json:"totalPods"`
	}
	if oneReport(t, out.Bytes(), &analysis); analysis.TotalPods != 5 {
		t.Errorf("analysis %s, want the head and 4 workers", out.String())
	}
}

func TestAnalyzeTable(t *testing.T) {
	cr := writeFile(t, "rc.yaml", testRayCluster)
	var out bytes.Buffer
	if err := runAnalyze(nil, &out, io.Discard, nil, cr, "table"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "RayCluster ml/demo") ||
		!strings.Contains(lines[3], "gpu") || !strings.HasPrefix(lines[4], "TOTAL") || !strings.Contains(lines[4], "16500m") {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestAnalyzeTableNamesAGeneratedNameAndRoundsMixedMemory: a CR written for `kubectl create` has only a
// generateName, which the table shows with a placeholder for the suffix (and -o json beside the empty name).
// A head of 1G and 4 workers of 1536Mi make 1,000,000,000 + 6,442,450,944 = 7,442,450,944 bytes, which no
// suffix divides: 7,442,450,944 / 2^30 = 6.93Gi, shown as "~6.93Gi" rather than ten digits.
func TestAnalyzeTableNamesAGeneratedNameAndRoundsMixedMemory(t *testing.T) {
	manifest := strings.Replace(testRayCluster, "  name: demo\n", "  generateName: demo-\n", 1)
	manifest = strings.Replace(manifest, "memory: 1Gi", "memory: 1G", 1)
	manifest = strings.Replace(manifest, "memory: 0", "memory: 1536Mi", 1)
	cr := writeFile(t, "rc.yaml", manifest)
	var table, asJSON bytes.Buffer
	if err := runAnalyze(nil, &table, io.Discard, nil, cr, "table"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "RayCluster ml/demo-<generated> via ") ||
		!strings.HasSuffix(lines[4], " ~6.93Gi") || !strings.HasSuffix(lines[3], " 1536Mi") {
		t.Errorf("table:\n%s", table.String())
	}
	if err := runAnalyze(nil, &asJSON, io.Discard, nil, cr, "json"); err != nil {
		t.Fatal(err)
	}
	var report struct {
		Name          string            `json:"name"`
		GenerateName  string            `json:"generateName"`
		TotalRequests map[string]string `json:"totalRequests"`
	}
	oneReport(t, asJSON.Bytes(), &report)
	if report.Name != "" || report.GenerateName != "demo-" || report.TotalRequests["memory"] != "7442450944" {
		t.Errorf("json report %+v, want no name, generateName demo- and the exact memory total", report)
	}
}

// TestAnalyzeReadsEveryObjectOfAStream: a file of several documents is analyzed CR by CR (-o json prints an array
// of reports then), objects of a kind no RI describes skipped with a warning naming their line; a List is read
// item by item, a typed one (DeploymentList) giving its items their kind; "-" reads standard input; and a stream
// with no CR at all is an error.
func TestAnalyzeReadsEveryObjectOfAStream(t *testing.T) {
	const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: ml}\ndata: {a: b}\n"
	list := `{"apiVersion": "v1", "kind": "List", "items": [` +
		`{"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "first", "namespace": "ml"}, "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "head"}]}}}}},` +
		`{"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "second", "namespace": "ml"}, "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "head"}]}}}}}]}`
	tests := []struct {
		name, file, stdin string
		wantNames         []string
		wantWarning       string
		wantErr           string
	}{
		{name: "documents", file: writeFile(t, "docs.yaml", configMap+"---\n"+testRayCluster+"---\n"+strings.Replace(testRayCluster, "name: demo", "name: other", 1)),
			wantNames: []string{"demo", "other"}, wantWarning: "docs.yaml:1: no ResourceInterface for /v1, Kind=ConfigMap in the built-in ResourceInterfaces; skipped"},
		{name: "a List", file: writeFile(t, "list.json", list), wantNames: []string{"first", "second"}},
		{name: "standard input", file: "-", stdin: testRayCluster, wantNames: []string{"demo"}},
		{name: "a typed list from the API, whose items leave their kind out", file: writeFile(t, "deployments.json",
			`{"apiVersion": "apps/v1", "kind": "DeploymentList", "items": [{"metadata": {"name": "web", "namespace": "ml"},
  "spec": {"template": {"spec": {"containers": [{"name": "web"}]}}}}]}`), wantNames: []string{"web"}},
		{name: "no CR", file: writeFile(t, "cm.yaml", configMap+"---\n"+configMap), wantErr: "none of its 2 objects is a kind a ResourceInterface describes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, warnings bytes.Buffer
			err := runAnalyze(strings.NewReader(tt.stdin), &out, &warnings, nil, tt.file, "json")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			type report struct {
				Name string `json:"name"`
				Kind string `json:"kind"`
			}
			var reports []report
			if err := json.Unmarshal(out.Bytes(), &reports); err != nil {
				t.Fatalf("output is no array of reports: %v\n%s", err, out.String())
			}
			var names []string
			for _, r := range reports {
				names = append(names, r.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.wantNames, ",") {
				t.Errorf("reports for %v, want %v", names, tt.wantNames)
			}
			if !strings.Contains(warnings.String(), tt.wantWarning) {
				t.Errorf("warnings %q, want %q", warnings.String(), tt.wantWarning)
			}
		})
	}
}

// TestAnalyzeGoesOnPastACRThatFails: in a file of several CRs, one whose analysis fails is reported, naming its
// line and why, after the others are analyzed and printed; the command still fails.
func TestAnalyzeGoesOnPastACRThatFails(t *testing.T) {
	const badDeployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1.5}\n"
	other := strings.Replace(testRayCluster, "name: demo", "name: other", 1)
	file := writeFile(t, "docs.yaml", testRayCluster+"---\n"+badDeployment+"---\n"+other)
	for _, output := range []outputFormat{outputJSON, outputTable} {
		t.Run(string(output), func(t *testing.T) {
			var out bytes.Buffer
			err := runAnalyze(nil, &out, io.Discard, nil, file, output)
			if err == nil || !strings.Contains(err.Error(), "docs.yaml:") || !strings.Contains(err.Error(), "replica count") {
				t.Errorf("error %v, want one naming the Deployment's line and its replica count", err)
			}
			for _, name := range []string{"demo", "other"} {
				if !strings.Contains(out.String(), name) {
					t.Errorf("output lacks RayCluster %s:\n%s", name, out.String())
				}
			}
			if output == "json" {
				var reports []map[string]any
				if err := json.Unmarshal(out.Bytes(), &reports); err != nil || len(reports) != 2 {
					t.Errorf("output %s (%v), want an array of the 2 RayClusters' reports", out.String(), err)
				}
			}
		})
	}
}

// TestAProcessRefusesTheRIItsPredecessorDiedEvaluating: a process that stopped while evaluating a user RI (out of
// memory) leaves that version in its record of evaluations, and the next one refuses it, with a reason, rather
// than stop again when its rebuild analyzes the workloads of that kind.
func TestAProcessRefusesTheRIItsPredecessorDiedEvaluating(t *testing.T) {
	ris, err := karta.ParseResourceInterfaces([]byte(`apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
metadata: {name: bomb}
spec:
  structureDefinition:
    rootComponent:
      name: widget
      kind: {group: example.com, version: v1, kind: Gadget}
      specDefinition: {podTemplateSpecPath: .spec.template}
      scaleDefinition: {replicasPath: 'error("evaluated, though its predecessor died evaluating it")'}
`), "bomb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bomb, err := karta.Compile(ris[0], "bomb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ri-evaluations-fleetflow-run")
	died, _, err := evalguard.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	died.Enter(bomb.Identity()) // the process ran out of memory here

	guard := guardEvaluations(path)
	if guard == nil {
		t.Fatal("no guard on a writable path")
	}
	defer func() {
		karta.SetEvaluationGuard(nil)
		_ = guard.Close()
	}()
	gadget := map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g", "namespace": "ml"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c"}}}}}}
	_, err = bomb.Analyze(gadget)
	if err == nil || !strings.Contains(err.Error(), `resource interface "bomb"`) || !strings.Contains(err.Error(), "stopped while evaluating it") {
		t.Errorf("analysis of a Gadget: %v, want the RI refused, saying why", err)
	}
}

// TestAnalyzeShowsConstraintsBetweenPods: the table and -o json say which of a component's required constraints
// between pods placement applies (a spread over its own pods, a host port) and which it ignores (an
// anti-affinity to pods it does not see); a component without any shows none.
func TestAnalyzeShowsConstraintsBetweenPods(t *testing.T) {
	cr := writeFile(t, "job.yaml", `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: spread, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master:
      template:
        spec:
          containers: [{name: pytorch}]
    Worker:
      replicas: 4
      template:
        metadata: {labels: {app: train}}
        spec:
          topologySpreadConstraints:
          - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: train}}}
          affinity:
            podAntiAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
              - {topologyKey: topology.kubernetes.io/zone, labelSelector: {matchLabels: {app: db}}}
          containers:
          - {name: pytorch, ports: [{containerPort: 29500, hostPort: 29500}]}
`)
	var table bytes.Buffer
	if err := runAnalyze(nil, &table, io.Discard, nil, cr, "table"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nworker: placement applies spread by kubernetes.io/hostname (maxSkew 1); one per node (host port TCP/29500)\n",
		"\nworker: placement ignores pod anti-affinity by topology.kubernetes.io/zone to other pods (app=db)\n",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table:\n%s\nwant the line %q", table.String(), strings.TrimSpace(want))
		}
	}
	if strings.Contains(table.String(), "master:") {
		t.Errorf("table:\n%s\nshows constraints for the master, which has none", table.String())
	}
	var out bytes.Buffer
	if err := runAnalyze(nil, &out, io.Discard, nil, cr, "json"); err != nil {
		t.Fatal(err)
	}
	var report karta.Report
	oneReport(t, out.Bytes(), &report)
	byName := map[string]*karta.PodConstraints{}
	for _, c := range report.Components {
		byName[c.Name] = c.PodConstraints
	}
	if byName["master"] != nil {
		t.Errorf("master's podConstraints = %+v, want none", byName["master"])
	}
	if w := byName["worker"]; w == nil || len(w.Applied) != 2 || len(w.Ignored) != 1 {
		t.Errorf("worker's podConstraints = %+v, want 2 applied and 1 ignored", w)
	}
}

// oneReport decodes the one report of an analyze -o json, which prints an array of one CR too.
func oneReport(t *testing.T, data []byte, v any) {
	t.Helper()
	var reports []json.RawMessage
	if err := json.Unmarshal(data, &reports); err != nil || len(reports) != 1 {
		t.Fatalf("output %s (%v): want an array of one report", data, err)
	}
	if err := json.Unmarshal(reports[0], v); err != nil {
		t.Fatal(err)
	}
}

// TestAnalyzeSpeaksOfTheUsersCR: a failed analysis names the file's line and the CR's field, not the RI's jq
// (unless debug logs are on); a replica type no component reads is a warning at its line; a CR with no name is
// refused, the other CRs of the file analyzed all the same.
func TestAnalyzeSpeaksOfTheUsersCR(t *testing.T) {
	file := writeFile(t, "jobs.yaml", `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: bad, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: pytorch}]}}
    Worker:
      replicas: -4
      template: {spec: {containers: [{name: pytorch}]}}
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: typo, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: pytorch}]}}
    Workr:
      replicas: 2
      template: {spec: {containers: [{name: pytorch}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {namespace: ml}
spec: {template: {spec: {containers: [{name: web}]}}}
`)
	var out, warnings bytes.Buffer
	err := runAnalyze(nil, &out, &warnings, nil, file, "table")
	if err == nil {
		t.Fatal("analyze succeeded, want the bad and the nameless CRs refused")
	}
	for _, want := range []string{
		file + ":10: PyTorchJob ml/bad: spec.pytorchReplicaSpecs.Worker.replicas: -4 is not a valid replica count",
		file + ":25: Deployment: metadata.name: required",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "to_entries") {
		t.Errorf("error %q shows the RI's jq", err)
	}
	if want := file + ":21: warning: spec.pytorchReplicaSpecs.Workr: no component"; !strings.Contains(warnings.String(), want) {
		t.Errorf("warnings %q lack %q", warnings.String(), want)
	}
	if !strings.Contains(out.String(), "PyTorchJob ml/typo") {
		t.Errorf("output %q lacks the CR that could be analyzed", out.String())
	}
}
