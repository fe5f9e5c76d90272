package scenarios

import (
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/consumers/audit"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/schemas"
)

// PyTorchJobKind is the kind every scenario submits.
var PyTorchJobKind = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}

// Replicas is one replica spec of a PyTorchJob: how many pods, and what each asks for. GPUs go in requests
// and limits alike, as the apiserver requires for extended resources.
type Replicas struct {
	Count  int64
	CPU    string
	Memory string
	GPUs   int64
}

func (r Replicas) spec() map[string]any {
	requests := map[string]any{"cpu": r.CPU, "memory": r.Memory}
	resources := map[string]any{"requests": requests}
	if r.GPUs > 0 {
		gpus := strconv.FormatInt(r.GPUs, 10)
		requests["nvidia.com/gpu"] = gpus
		resources["limits"] = map[string]any{"nvidia.com/gpu": gpus}
	}
	return map[string]any{
		"replicas": r.Count,
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
			"name": "pytorch", "image": "example.com/train:1", "resources": resources,
		}}}},
	}
}

// PyTorchJob builds a job with a Master and a Worker replica spec. The built-in RI reads both as one gang.
func PyTorchJob(namespace, name string, master, worker Replicas) *unstructured.Unstructured {
	job := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"pytorchReplicaSpecs": map[string]any{
			"Master": master.spec(),
			"Worker": worker.spec(),
		}},
	}}
	job.SetGroupVersionKind(PyTorchJobKind)
	job.SetNamespace(namespace)
	job.SetName(name)
	return job
}

// Placement is what the status writer annotated on a control-plane workload from its latest verdict.
type Placement struct {
	Status  string // fleetflow.io/placement: Placed, Unschedulable, ...
	Cluster string // fleetflow.io/cluster
	Policy  string // fleetflow.io/policy
	Reasons string // fleetflow.io/reasons: the verdict's message, if any, then one "cluster: reason" per line
}

// Reason returns the reason given for one cluster, "" when there is none.
func (p Placement) Reason(cluster string) string {
	for line := range strings.SplitSeq(p.Reasons, "\n") {
		if rest, ok := strings.CutPrefix(line, cluster+": "); ok {
			return rest
		}
	}
	return ""
}

// PlacementOf reads the placement annotations of a PyTorchJob on the control plane; zero when it is gone.
func PlacementOf(t *testing.T, e *e2eenv.Env, namespace, name string) Placement {
	t.Helper()
	obj := e2eenv.Get(t, e.ControlPlane, PyTorchJobKind, namespace, name)
	if obj == nil {
		return Placement{}
	}
	a := obj.GetAnnotations()
	return Placement{Status: a[schemas.AnnotationPlacement], Cluster: a[schemas.AnnotationCluster],
		Policy: a[schemas.AnnotationPolicy], Reasons: a[schemas.AnnotationReasons]}
}

// WaitPlacement waits until the job's annotations satisfy ok and returns them.
func WaitPlacement(t *testing.T, e *e2eenv.Env, namespace, name, what string, ok func(Placement) bool) Placement {
	t.Helper()
	var p Placement
	e2eenv.Eventually(t, e2eenv.Settle, namespace+"/"+name+": "+what, func() bool {
		p = PlacementOf(t, e, namespace, name)
		return ok(p)
	})
	return p
}

// WaitPlacedOn waits until the job is annotated Placed on cluster and its copy exists there.
func WaitPlacedOn(t *testing.T, e *e2eenv.Env, namespace, name, cluster string) Placement {
	t.Helper()
	return WaitPlacement(t, e, namespace, name, "Placed on "+cluster+" and applied there", func(p Placement) bool {
		return p.Status == string(schemas.VerdictPlaced) && p.Cluster == cluster &&
			e2eenv.Get(t, e.Clusters[cluster], PyTorchJobKind, namespace, name) != nil
	})
}

// Audit reads the whole audit trail of one PyTorchJob, in time order, failing on unreadable records.
func Audit(t *testing.T, e *e2eenv.Env, namespace, name string) []audit.AuditRecord {
	t.Helper()
	sel, err := audit.ParseWorkloadSelector("PyTorchJob.kubeflow.org/" + namespace + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var records []audit.AuditRecord
	err = audit.AuditTail(t.Context(), e.Bus.JetStream, audit.AuditQuery{Workload: sel}, func(r audit.AuditRecord) error {
		if r.Err != nil {
			t.Errorf("unreadable audit record %s/%d: %v", r.Stream, r.Sequence, r.Err)
		}
		records = append(records, r)
		return nil
	})
	if err != nil {
		t.Fatalf("audit %s/%s: %v", namespace, name, err)
	}
	return records
}
