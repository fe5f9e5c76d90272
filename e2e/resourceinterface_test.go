package e2e

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/consumers/audit"
	statuswriter "github.com/fleetflow/fleetflow/consumers/status"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/schemas"
)

var resourceInterfaces = schema.GroupVersionResource{Group: "optimization.nvidia.com", Version: "v1alpha1", Resource: "resourceinterfaces"}

// lastAnalysis reads the newest analysis of a workload from the audit trail: the one its last verdict
// answers.
func lastAnalysis(t *testing.T, e *e2eenv.Env, namespace, name string) *schemas.Analysis {
	t.Helper()
	sel, err := audit.ParseWorkloadSelector("PyTorchJob/" + namespace + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var last *schemas.Analysis
	err = audit.AuditTail(t.Context(), e.Bus.JetStream, audit.AuditQuery{Workload: sel}, func(r audit.AuditRecord) error {
		if v := r.Verdict(); v != nil && v.Analysis != nil {
			last = v.Analysis
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// TestResourceInterfaceAppliedAtRunTime: an RI applied to the control plane as a CR overrides the
// built-in one for its kind at once, for workloads already placed and for new ones, with no restart;
// deleting it brings the built-in back.
func TestResourceInterfaceAppliedAtRunTime(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	submit := func(name string) {
		job := e2eenv.ReadObjects(t, "testdata/workloads/pytorchjob-small.yaml")[0]
		job.SetNamespace("team-ri")
		job.SetName(name)
		if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, job); err != nil {
			t.Fatal(err)
		}
	}
	analyzedBy := func(name, ri string, pods int64) func() bool {
		return func() bool {
			a := lastAnalysis(t, e, "team-ri", name)
			return a != nil && a.ResourceInterface == ri && a.TotalPods == pods
		}
	}
	// The sample job has one master and two workers: 3 pods by the built-in RI.
	submit("before")
	e2eenv.Eventually(t, e2eenv.Settle, "the built-in RI's analysis", analyzedBy("before", "fleetflow-kubeflow-org-pytorchjob-v1", 3))

	ri := e2eenv.ReadObjects(t, "testdata/resourceinterfaces/pytorchjob-tenfold.yaml")
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, ri...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.ControlPlane.Dynamic.Resource(resourceInterfaces).Delete(context.Background(), "site-pytorchjob-tenfold", metav1.DeleteOptions{})
	})
	// The user RI counts ten pods per worker replica: 1 + 2 × 10 = 21 pods.
	e2eenv.Eventually(t, e2eenv.Settle, "the placed job re-read through the user RI", analyzedBy("before", "site-pytorchjob-tenfold", 21))
	submit("after")
	e2eenv.Eventually(t, e2eenv.Settle, "a new job read through the user RI", analyzedBy("after", "site-pytorchjob-tenfold", 21))
	// 20 one-GPU workers cannot fit a cluster of 8 GPUs: the new analysis changes the verdict too.
	e2eenv.Eventually(t, e2eenv.Settle, "the bigger job unschedulable", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-ri", "after").GetAnnotations()
		return a[schemas.AnnotationPlacement] == string(schemas.VerdictUnschedulable)
	})

	if err := e.ControlPlane.Dynamic.Resource(resourceInterfaces).Delete(ctx, "site-pytorchjob-tenfold", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the built-in RI back", analyzedBy("after", "fleetflow-kubeflow-org-pytorchjob-v1", 3))
	e2eenv.Eventually(t, e2eenv.Settle, "the job placed again", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-ri", "after").GetAnnotations()
		return a[schemas.AnnotationPlacement] == string(schemas.VerdictPlaced)
	})
}

// widgetRI is an RI named name for a Widget kind no CRD serves, whose pods are .spec.template, replicasPath
// times.
func widgetRI(name, replicasPath string) string {
	return `
apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
metadata: {name: ` + name + `}
spec:
  structureDefinition:
    rootComponent:
      name: widget
      kind: {group: example.com, version: v1, kind: Widget}
      specDefinition: {podTemplateSpecPath: .spec.template}
      scaleDefinition: {replicasPath: '` + replicasPath + `'}
`
}

// TestDividePolicyAcceptedOnceItsKindHasAnRI: a Divide policy over a kind no RI describes is refused, and
// accepted once an RI for the kind is applied after it (as `kubectl apply -f dir/` orders policy.yaml before
// ri.yaml); deleting the RI refuses it again.
func TestDividePolicyAcceptedOnceItsKindHasAnRI(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	policies := e.ControlPlane.Dynamic.Resource(schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1", Resource: "schedulepolicies"})
	policy := e2eenv.ParseObjects(t, `
apiVersion: fleetflow.io/v1alpha1
kind: SchedulePolicy
metadata: {name: widget-divide}
spec:
  resourceSelectors: {kinds: [{group: example.com, kind: Widget}]}
  spreadConstraints: {spreadMode: Divide, topologyKey: region, percentageSplit: [{topologyValue: east, percentage: 50}, {topologyValue: west, percentage: 50}]}
`)
	ri := e2eenv.ParseObjects(t, widgetRI("widget-ri", ".spec.replicas"))
	t.Cleanup(func() {
		_ = policies.Delete(context.Background(), "widget-divide", metav1.DeleteOptions{})
		_ = e.ControlPlane.Dynamic.Resource(resourceInterfaces).Delete(context.Background(), "widget-ri", metav1.DeleteOptions{})
	})
	accepted := func(want metav1.ConditionStatus) func() bool {
		return func() bool {
			obj := e2eenv.Get(t, e.ControlPlane, schema.GroupVersionKind{Group: "fleetflow.io", Version: "v1alpha1", Kind: "SchedulePolicy"}, "", "widget-divide")
			conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			for _, c := range conditions {
				if m, _ := c.(map[string]any); m["type"] == statuswriter.PolicyConditionAccepted {
					return m["status"] == string(want)
				}
			}
			return false
		}
	}
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, policy...); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the policy refused without an RI for Widget", accepted(metav1.ConditionFalse))
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, ri...); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the policy accepted once the RI is applied", accepted(metav1.ConditionTrue))
	if err := e.ControlPlane.Dynamic.Resource(resourceInterfaces).Delete(ctx, "widget-ri", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the policy refused again once the RI is deleted", accepted(metav1.ConditionFalse))
}

// TestResourceInterfaceShowsWhetherItIsInForce: an RI applied to the control plane says in its Accepted
// condition whether it is in force (for which kind, instead of which RI) or why it was refused.
func TestResourceInterfaceShowsWhetherItIsInForce(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	broken := e2eenv.ParseObjects(t, widgetRI("widget-broken", ".spec.replicas |||"))
	tenfold := e2eenv.ReadObjects(t, "testdata/resourceinterfaces/pytorchjob-tenfold.yaml")
	t.Cleanup(func() {
		for _, name := range []string{"widget-broken", "site-pytorchjob-tenfold"} {
			_ = e.ControlPlane.Dynamic.Resource(resourceInterfaces).Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, append(broken, tenfold...)...); err != nil {
		t.Fatal(err)
	}
	shows := func(name, status string, parts ...string) func() bool {
		return func() bool {
			obj, err := e.ControlPlane.Dynamic.Resource(resourceInterfaces).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			for _, c := range conditions {
				if m, _ := c.(map[string]any); m["type"] == statuswriter.RIConditionAccepted && m["status"] == status {
					message, _ := m["message"].(string)
					for _, part := range parts {
						if !strings.Contains(message, part) {
							return false
						}
					}
					return true
				}
			}
			return false
		}
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the broken RI refused with its field and jq error",
		shows("widget-broken", "False", "scaleDefinition.replicasPath", "jq"))
	e2eenv.Eventually(t, e2eenv.Settle, "the user RI in force instead of the built-in one",
		shows("site-pytorchjob-tenfold", "True", "in force for PyTorchJob.kubeflow.org/v1", "the built-in RI fleetflow-kubeflow-org-pytorchjob-v1"))
}

// TestPolicyNamingAKindNoRIDescribesSaysSo: a policy naming a kind no RI describes (a misspelt one, here) is
// in force, and its Accepted condition says that kind asks nothing of the clusters' capacity.
func TestPolicyNamingAKindNoRIDescribesSaysSo(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	policies := e.ControlPlane.Dynamic.Resource(schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1", Resource: "schedulepolicies"})
	t.Cleanup(func() { _ = policies.Delete(context.Background(), "misspelt", metav1.DeleteOptions{}) })
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, e2eenv.ParseObjects(t, `
apiVersion: fleetflow.io/v1alpha1
kind: SchedulePolicy
metadata: {name: misspelt}
spec:
  resourceSelectors: {kinds: [{group: kubeflow.org, kind: PytorchJob}, {group: kubeflow.org, kind: PyTorchJob}]}
`)...); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the policy accepted, naming the kind no RI describes", func() bool {
		obj, err := policies.Get(ctx, "misspelt", metav1.GetOptions{})
		if err != nil {
			return false
		}
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conditions {
			m, _ := c.(map[string]any)
			message, _ := m["message"].(string)
			if m["type"] == statuswriter.PolicyConditionAccepted && m["status"] == "True" {
				return strings.Contains(message, "no ResourceInterface describes PytorchJob.kubeflow.org, so") &&
					!strings.Contains(message, "PyTorchJob.kubeflow.org")
			}
		}
		return false
	})
}
