package simulate

import (
	"errors"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/fleetflow/fleetflow/internal/fleetspec"
)

// fuzzFleet is a fleet file of every part simulate reads, its workloads inline: policies that select by
// namespace, kind and label, spread, tolerate and fill tiers, and workloads that fit, do not, and match none.
const fuzzFleet = `namespaces:
  team-a: {labels: {tier: gold}}
clusters:
- name: gpu-a
  labels: {region: eu, provider: onprem}
  apis: [kubeflow.org/v1/PyTorchJob, apps/v1/Deployment]
  nodes:
  - name: gpu
    count: 2
    taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
    allocatable: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8", pods: "110"}
    requested: {nvidia.com/gpu: "6"}
- name: cpu-us
  labels: {region: us}
  ready: true
  nodes:
  - name: cpu
    allocatable: {cpu: "16", memory: 64Gi}
- name: maint
  taints: [{key: maintenance, effect: NoSchedule}]
  nodes:
  - {name: cpu, allocatable: {cpu: "4"}, unschedulable: true}
policies:
- metadata: {name: training}
  spec:
    priority: 10
    namespaceSelector: {matchLabels: {tier: gold}}
    resourceSelectors: {kinds: [{group: kubeflow.org, kind: PyTorchJob}]}
    tolerations: [{key: nvidia.com/gpu, operator: Exists}]
    scoring: Spread
- metadata: {name: web}
  spec:
    resourceSelectors:
      kinds: [{group: apps, kind: Deployment}]
      labelSelectors: [{matchLabels: {app: web}}]
    spreadConstraints:
      spreadMode: Divide
      topologyKey: region
      percentageSplit: [{topologyValue: eu, percentage: 50}, {topologyValue: us, percentage: 50}]
- metadata: {name: fill}
  spec:
    orderedClusterSelector: {tiers: [{matchLabels: {region: eu}}, {}]}
workloads:
- namespace: team-a
  object:
    apiVersion: kubeflow.org/v1
    kind: PyTorchJob
    metadata: {name: train}
    spec:
      pytorchReplicaSpecs:
        Worker:
          replicas: 2
          template:
            spec:
              containers:
              - name: pytorch
                resources: {limits: {nvidia.com/gpu: "1"}}
- object:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: team-a, labels: {app: web}}
    spec:
      replicas: 5
      template:
        spec:
          containers:
          - name: web
            resources: {requests: {cpu: "2", memory: 1Gi}}
- object:
    apiVersion: ray.io/v1
    kind: RayCluster
    metadata: {name: lonely}
    spec:
      headGroupSpec:
        template:
          spec:
            containers:
            - name: head
              resources: {requests: {cpu: "100"}}
`

// FuzzDecode: the fast path of fleet file decoding agrees with the general one. A file parseFast takes, the
// general path (the checks, then yaml.UnmarshalStrict) takes too, to the same File; one it leaves, decode
// answers as the general path does.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(fuzzFleet))
	for _, tc := range fastParseCases {
		f.Add([]byte(tc.fleet))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return // fleet files of this size say nothing a smaller one cannot; they only slow the fuzzer
		}
		var want File
		wantErr := fleetspec.CheckDocument(data, reflect.TypeFor[File]())
		if wantErr == nil {
			wantErr = yaml.UnmarshalStrict(data, &want)
		}
		if fast, ok := parseFast(data); ok {
			if wantErr != nil {
				t.Fatalf("parseFast took a file the general path refuses: %v", wantErr)
			}
			if !reflect.DeepEqual(*fast, want) {
				t.Fatalf("parseFast gave\n%#v\nthe general path\n%#v", *fast, want)
			}
		}
		got, err := decode(data)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("decode: error %v, the general path: %v", err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decode gave\n%#v\nthe general path\n%#v", got, want)
		}
	})
}

// FuzzSimulate runs simulate on fleet files: Parse refuses a file naming it, each problem with its path, or
// Run places every workload or fails with a message. Files naming workload files or resource interfaces are
// skipped: a path may name any file on the machine, and FuzzParse in placement/karta covers the RIs.
func FuzzSimulate(f *testing.F) {
	f.Add([]byte(fuzzFleet))
	for _, tc := range fastParseCases {
		f.Add([]byte(tc.fleet))
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 || fleetspec.DeclaredNodes(data) > 1000 /* validation names each node */ {
			return // big fleets say nothing a small one cannot; they only slow the fuzzer
		}
		if file, err := decode(data); err == nil {
			for _, w := range file.Workloads {
				if w.File != "" {
					return
				}
			}
			if len(file.ResourceInterfaces) > 0 {
				return
			}
		}
		in, err := Parse(data, "fuzz.yaml", t.TempDir())
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fleet file fuzz.yaml: ") || strings.TrimPrefix(err.Error(), "fleet file fuzz.yaml: ") == "" {
				t.Fatalf("error %q does not start with the file and go on to say what is wrong", err)
			}
			checkFieldErrors(t, err)
			return
		}
		results, err := Run(in, logger)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("Run failed with an empty message")
			}
			checkFieldErrors(t, err)
			return
		}
		if len(results) != len(in.Objects) {
			t.Fatalf("%d results for %d workloads", len(results), len(in.Objects))
		}
		for _, r := range results {
			if r.Workload == "" || r.Status == "" {
				t.Fatalf("a result without its workload or status: %+v", r)
			}
		}
	})
}

// checkFieldErrors: every field error in err names its field and why.
func checkFieldErrors(t *testing.T, err error) {
	t.Helper()
	var fe *FieldError
	if errors.As(err, &fe) && (fe.Path == "" || fe.Reason == "") {
		t.Fatalf("field error %+v without its field or reason", fe)
	}
	var specErr *fleetspec.FieldError
	if errors.As(err, &specErr) && (specErr.Path == "" || specErr.Reason == "") {
		t.Fatalf("field error %+v without its field or reason", specErr)
	}
	// errors.As finds the first of each; the walk reaches the others.
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, inner := range joined.Unwrap() {
			checkFieldErrors(t, inner)
		}
	}
	if inner := errors.Unwrap(err); inner != nil {
		checkFieldErrors(t, inner)
	}
}
