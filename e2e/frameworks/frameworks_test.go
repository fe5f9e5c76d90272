package frameworks

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/simulate"
	"github.com/fleetflow/fleetflow/schemas"
)

const (
	// namespace holds every sample CR; the fleet file gives it labels on the control plane.
	namespace = "ml"
	// propagateLabel marks the CRDs the level-1 policy copies to every workload cluster.
	propagateLabel = "fleetflow.io/propagate"
)

var (
	crdKind     = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// submitted is a CR on the control plane that still holds its placement.
type submitted struct {
	cr      *unstructured.Unstructured
	crdName string
}

// TestEveryFrameworkLandsWhereNodeFitPredicts runs each framework kind through the whole pipeline:
//  1. its CRD, applied to the control plane only with label fleetflow.io/propagate=true, reaches every
//     workload cluster through the Duplicate policy (the copy carries fleetflow's managed-by label, and the
//     test never writes CRDs to a workload cluster);
//  2. a sample CR submitted to the control plane is placed where internal/simulate says the same fleet,
//     placement policy and CRs (every earlier one still holding its reservation) put it, and only there;
//  3. a status the kind's RI maps to Running, written in the workload cluster as the framework's
//     controller would, is copied onto the control-plane object with annotation fleetflow.io/phase=Running.
//
// The fleet (testdata/fleet.yaml) makes node-level fit decide: cluster-a is the first tier but no node of
// it has more than 2 GPUs free, so CRs with a 4- or 8-GPU pod go to cluster-b although cluster-a has
// enough GPUs in sum. The test checks that not every kind lands on the same cluster and that at least one
// is turned away from a cluster by node-level fit.
func TestEveryFrameworkLandsWhereNodeFitPredicts(t *testing.T) {
	corpus := corpusRoot(t)
	cases := frameworkCases()
	predict := newPredictor(t, fleetFile, placementPolicyFile)
	e := e2eenv.New(t, e2eenv.Options{FleetFile: fleetFile, PolicyFiles: []string{propagatePolicyFile, placementPolicyFile}})
	ctx := t.Context()

	// Every CRD goes to the control plane up front, so the clusters pick them up in parallel; a CRD whose
	// name an earlier case already installed (MPIJob v2beta1 after v1) replaces it in its own subtest.
	resolved := make([]resolvedCase, len(cases))
	installed := map[string]bool{}
	var upFront []*unstructured.Unstructured
	for i, c := range cases {
		resolved[i] = resolveCase(t, c, corpus)
		if name := resolved[i].crd.GetName(); !installed[name] {
			installed[name] = true
			resolved[i].installedUpFront = true
			upFront = append(upFront, resolved[i].crd)
		}
	}
	started := time.Now()
	applyToControlPlane(t, e, upFront...)
	t.Logf("%d CRDs installed on the control plane in %s", len(upFront), time.Since(started).Round(time.Millisecond))

	var live []submitted
	landed := map[string]string{}
	// decidedByNodeFit lists the kinds that a cluster with enough capacity in sum turned away because no
	// single node fits one of their pods.
	var decidedByNodeFit []string
	for i, c := range cases {
		r := resolved[i]
		t.Run(c.name(), func(t *testing.T) {
			t.Logf("%s: CRD from %s, sample from %s", c.gvk, r.crdSource, r.sampleSource)
			crdName := r.crd.GetName()
			if !r.installedUpFront {
				live = replaceCRD(t, e, r.crd, live)
			}

			// 1. Level 1: the CRD reaches every workload cluster through fleetflow.
			for name, cluster := range e.Clusters {
				var copied *unstructured.Unstructured
				e2eenv.Eventually(t, e2eenv.Settle, "CRD "+crdName+" serving "+c.gvk.Version+" copied to "+name, func() bool {
					copied = e2eenv.Get(t, cluster, crdKind, "", crdName)
					return copied != nil && servesVersion(copied, c.gvk.Version)
				})
				if got := copied.GetLabels()[schemas.LabelManagedBy]; got != schemas.ManagedByFleetflow {
					t.Errorf("CRD %s on %s has %s=%q, want %q: not placed by fleetflow", crdName, name, schemas.LabelManagedBy, got, schemas.ManagedByFleetflow)
				}
				e2eenv.Eventually(t, e2eenv.Settle, name+" reporting "+c.gvk.String()+" installed", func() bool {
					serves, err := e.ClusterServes(ctx, name, c.gvk)
					if err != nil {
						t.Log(err)
					}
					return serves
				})
			}

			// 2. The sample lands where the placement core predicts.
			cr := r.sample.DeepCopy()
			cr.SetNamespace(namespace)
			prediction := predict(t, append(liveCRs(live), cr))
			t.Logf("predicted %s for %s/%s; reasons %v", prediction.Clusters, c.gvk.Kind, cr.GetName(), prediction.Reasons)
			if prediction.Status != "Placed" || len(prediction.Clusters) != 1 {
				t.Fatalf("the fleet cannot place the %s sample by design (simulate: %s %v, %s %v): pick a smaller sample",
					c.gvk.Kind, prediction.Status, prediction.Clusters, prediction.Message, prediction.Reasons)
			}
			want := prediction.Clusters[0]
			if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, cr); err != nil {
				t.Fatalf("submit %s: %v", c.gvk.Kind, err)
			}
			live = append(live, submitted{cr: cr, crdName: crdName})

			var source *unstructured.Unstructured
			e2eenv.Eventually(t, e2eenv.Settle, c.gvk.Kind+" placed on the control plane", func() bool {
				source = e2eenv.Get(t, e.ControlPlane, c.gvk, namespace, cr.GetName())
				return source != nil && source.GetAnnotations()[schemas.AnnotationPlacement] != ""
			})
			annotations := source.GetAnnotations()
			if annotations[schemas.AnnotationPlacement] != string(schemas.VerdictPlaced) || annotations[schemas.AnnotationCluster] != want {
				t.Fatalf("%s placed %s on %q (reasons %q), predicted Placed on %q (reasons %v)", c.gvk.Kind,
					annotations[schemas.AnnotationPlacement], annotations[schemas.AnnotationCluster],
					annotations[schemas.AnnotationReasons], want, prediction.Reasons)
			}
			// The pipeline passed over the other clusters for the reasons the prediction gives.
			if got, wantReasons := annotations[schemas.AnnotationReasons], reasonsAnnotation(prediction); got != wantReasons {
				t.Errorf("%s placed with reasons %q, predicted %q", c.gvk.Kind, got, wantReasons)
			}
			landed[c.name()] = want
			if slices.ContainsFunc(slices.Collect(maps.Values(prediction.Reasons)), isNodeLevelMisfit) {
				decidedByNodeFit = append(decidedByNodeFit, c.name())
			}
			var placed *unstructured.Unstructured
			e2eenv.Eventually(t, e2eenv.Settle, c.gvk.Kind+" present on "+want, func() bool {
				placed = e2eenv.Get(t, e.Clusters[want], c.gvk, namespace, cr.GetName())
				return placed != nil
			})
			if got := placed.GetLabels()[schemas.LabelWorkloadUID]; got != string(source.GetUID()) {
				t.Errorf("copy on %s has %s=%q, want the control-plane uid %q", want, schemas.LabelWorkloadUID, got, source.GetUID())
			}
			for name, cluster := range e.Clusters {
				if name != want && e2eenv.Get(t, cluster, c.gvk, namespace, cr.GetName()) != nil {
					t.Errorf("%s also placed on %s", c.gvk.Kind, name)
				}
			}

			// 3. Status flows back: the test is the framework's controller in the workload cluster.
			// Without a status subresource fleetflow has nowhere to copy the status to; the phase annotation
			// still has to say Running.
			subresource := hasStatusSubresource(e2eenv.Get(t, e.Clusters[want], crdKind, "", crdName), c.gvk.Version)
			written := writeStatus(t, e.Clusters[want], placed, c.running(placed), subresource)
			e2eenv.Eventually(t, e2eenv.Settle, c.gvk.Kind+" status and phase Running on the control plane", func() bool {
				source = e2eenv.Get(t, e.ControlPlane, c.gvk, namespace, cr.GetName())
				got, _, _ := unstructured.NestedMap(source.Object, "status")
				a := source.GetAnnotations()
				return (!subresource || reflect.DeepEqual(got, written)) && a[schemas.AnnotationPhase] == "Running" &&
					a[schemas.AnnotationCluster] == want
			})
		})
	}

	clusters := map[string]bool{}
	for _, c := range landed {
		clusters[c] = true
	}
	if len(landed) == len(cases) && len(clusters) < 2 {
		t.Errorf("every kind landed on the same cluster %v: the fleet no longer makes node-level fit matter", landed)
	}
	if len(landed) == len(cases) && len(decidedByNodeFit) == 0 {
		t.Errorf("no kind was turned away from a cluster by node-level fit: the fleet no longer tests it (landed %v)", landed)
	}
	t.Logf("landed: %v; turned away by node-level fit: %v", landed, decidedByNodeFit)
	logPipelineComplaints(t, e)
}

// logPipelineComplaints shows the pipeline's warnings and errors of a passing run (a failing one prints
// the whole log), so a problem that did not break an assertion is still seen.
func logPipelineComplaints(t *testing.T, e *e2eenv.Env) {
	t.Helper()
	if t.Failed() {
		return
	}
	for line := range strings.Lines(e.Logs.String()) {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			t.Log(strings.TrimSpace(line))
		}
	}
}

// reasonsAnnotation is the fleetflow.io/reasons annotation a verdict with the predicted outcome gives: the
// message, then one "cluster: reason" line per passed-over cluster, by cluster name.
func reasonsAnnotation(r simulate.Result) string {
	var lines []string
	if r.Message != "" {
		lines = append(lines, r.Message)
	}
	for _, cluster := range slices.Sorted(maps.Keys(r.Reasons)) {
		lines = append(lines, cluster+": "+r.Reasons[cluster])
	}
	return strings.Join(lines, "\n")
}

// isNodeLevelMisfit tells a per-node rejection ("pod head (nvidia.com/gpu 4) fits no node: ...") from a
// rejection by the cluster's totals ("needs nvidia.com/gpu 4 in total, 3 free").
func isNodeLevelMisfit(reason string) bool { return strings.Contains(reason, "fits no node") }

// applyToControlPlane labels CRDs for the level-1 policy and applies them to the control plane only, all
// at once: a real CRD takes the API server seconds to serve, and they need not wait for one another.
func applyToControlPlane(t *testing.T, e *e2eenv.Env, crds ...*unstructured.Unstructured) {
	t.Helper()
	errs := make([]error, len(crds))
	var wg sync.WaitGroup
	for i, crd := range crds {
		crd = crd.DeepCopy()
		labels := crd.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[propagateLabel] = "true"
		crd.SetLabels(labels)
		wg.Go(func() {
			if err := e.ControlPlane.Apply(t.Context(), e2eenv.FieldManager, crd); err != nil {
				errs[i] = fmt.Errorf("install CRD %s on the control plane: %w", crd.GetName(), err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// replaceCRD swaps a CRD for another of the same name (MPIJob v1 for v2beta1), as an admin would: the CRs
// of the old one are deleted on the control plane, then the old CRD. Fleetflow must remove both from the
// workload clusters before the new CRD is applied. It returns the CRs still placed.
func replaceCRD(t *testing.T, e *e2eenv.Env, crd *unstructured.Unstructured, live []submitted) []submitted {
	t.Helper()
	ctx := t.Context()
	name := crd.GetName()
	var kept []submitted
	for _, s := range live {
		if s.crdName != name {
			kept = append(kept, s)
			continue
		}
		gvr, _, err := e.ControlPlane.ResourceFor(s.cr)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.ControlPlane.Dynamic.Resource(gvr).Namespace(s.cr.GetNamespace()).Delete(ctx, s.cr.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete %s %s: %v", s.cr.GetKind(), s.cr.GetName(), err)
		}
		for cluster, clients := range e.Clusters {
			e2eenv.Eventually(t, e2eenv.Settle, s.cr.GetKind()+" "+s.cr.GetName()+" deleted from "+cluster, func() bool {
				return e2eenv.Get(t, clients, s.cr.GroupVersionKind(), s.cr.GetNamespace(), s.cr.GetName()) == nil
			})
		}
	}
	if err := e.ControlPlane.Dynamic.Resource(crdResource).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete CRD %s on the control plane: %v", name, err)
	}
	for cluster, clients := range e.Clusters {
		e2eenv.Eventually(t, e2eenv.Settle, "CRD "+name+" deleted from "+cluster+" by fleetflow", func() bool {
			return e2eenv.Get(t, clients, crdKind, "", name) == nil
		})
	}
	e2eenv.Eventually(t, e2eenv.Settle, "CRD "+name+" gone from the control plane", func() bool {
		return e2eenv.Get(t, e.ControlPlane, crdKind, "", name) == nil
	})
	applyToControlPlane(t, e, crd)
	return kept
}

// writeStatus writes status onto the placed object as the framework's controller does: through the status
// subresource when the CRD has one, else by updating the object. It returns the status the API server kept.
func writeStatus(t *testing.T, clients *kube.Clients, placed *unstructured.Unstructured, status map[string]any, subresource bool) map[string]any {
	t.Helper()
	gvr, _, err := clients.ResourceFor(placed)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		t.Fatal(err)
	}
	var subresources []string
	if subresource {
		subresources = []string{"status"}
	}
	updated, err := clients.Dynamic.Resource(gvr).Namespace(placed.GetNamespace()).Patch(t.Context(), placed.GetName(),
		types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "framework-controller"}, subresources...)
	if err != nil {
		t.Fatalf("write the status of %s %s as its controller: %v", placed.GetKind(), placed.GetName(), err)
	}
	kept, _, _ := unstructured.NestedMap(updated.Object, "status")
	if len(kept) == 0 {
		t.Fatalf("the API server dropped the status written on %s %s", placed.GetKind(), placed.GetName())
	}
	return kept
}

func servesVersion(crd *unstructured.Unstructured, version string) bool {
	return crdVersion(crd, version) != nil
}

func hasStatusSubresource(crd *unstructured.Unstructured, version string) bool {
	v := crdVersion(crd, version)
	if v == nil {
		return false
	}
	_, found, _ := unstructured.NestedMap(v, "subresources", "status")
	return found
}

func crdVersion(crd *unstructured.Unstructured, version string) map[string]any {
	if crd == nil {
		return nil
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, raw := range versions {
		v, _ := raw.(map[string]any)
		if v["name"] == version && v["served"] == true {
			return v
		}
	}
	return nil
}

func liveCRs(live []submitted) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(live))
	for i, s := range live {
		out[i] = s.cr
	}
	return out
}
