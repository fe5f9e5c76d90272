package frameworks

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/internal/simulate"
)

// noCorpusEnv set to anything makes the test use its own testdata even when the corpus is there, so both
// paths can be run on one machine.
const noCorpusEnv = "FLEETFLOW_E2E_NO_CORPUS"

// corpusRoot is ../shared/corpus next to the repository, or "" when it is absent (or switched off).
func corpusRoot(t *testing.T) string {
	t.Helper()
	if os.Getenv(noCorpusEnv) != "" {
		t.Logf("%s is set: using this package's minimal CRDs and samples", noCorpusEnv)
		return ""
	}
	root, err := localfleettest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(root), "shared", "corpus")
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		t.Logf("no corpus at %s: using this package's minimal CRDs and samples", dir)
		return ""
	}
	t.Logf("using the real CRDs and samples of the corpus at %s where it has them", dir)
	return dir
}

// resolvedCase is a case with its CRD and sample read.
type resolvedCase struct {
	crd, sample             *unstructured.Unstructured
	crdSource, sampleSource string
	installedUpFront        bool
}

// resolveCase reads the corpus CRD and sample of c when the corpus has them, else its own testdata.
func resolveCase(t *testing.T, c frameworkCase, corpus string) resolvedCase {
	t.Helper()
	r := resolvedCase{crdSource: c.ownCRD, sampleSource: c.ownSample}
	if corpus != "" && c.corpusCRD != "" {
		r.crdSource = filepath.Join(corpus, c.corpusCRD)
		r.sampleSource = filepath.Join(corpus, c.corpusSample)
	}
	crds := e2eenv.ReadObjects(t, r.crdSource)
	if len(crds) != 1 || crds[0].GroupVersionKind() != crdKind {
		t.Fatalf("%s: want exactly one CustomResourceDefinition", r.crdSource)
	}
	r.crd = crds[0]
	for _, obj := range e2eenv.ReadObjects(t, r.sampleSource) {
		if obj.GroupVersionKind() == c.gvk {
			r.sample = obj
			break
		}
	}
	if r.sample == nil {
		t.Fatalf("%s: no %s in the file", r.sampleSource, c.gvk)
	}
	return r
}

// predictFunc places crs in order through the placement core and returns the last one's result.
type predictFunc func(t *testing.T, crs []*unstructured.Unstructured) simulate.Result

// newPredictor runs internal/simulate with the fleet file the fleet was seeded from and the placement
// policies the pipeline runs with. The level-1 policy is left out: it selects only CRDs, which have no
// RI, ask for no capacity, and are not among the simulated workloads. The fleet file lists no APIs, which
// the simulation reads as "serves every kind": the test submits a CR only once every workload cluster
// reported its CRD installed, so the pipeline's view agrees.
func newPredictor(t *testing.T, fleetPath, policyPath string) predictFunc {
	t.Helper()
	spec := e2eenv.ReadFleetSpec(t, fleetPath)
	var policies []v1alpha1.SchedulePolicy
	for _, obj := range e2eenv.ReadObjects(t, policyPath) {
		var p v1alpha1.SchedulePolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &p); err != nil {
			t.Fatalf("%s: policy %s: %v", policyPath, obj.GetName(), err)
		}
		policies = append(policies, p)
	}
	return func(t *testing.T, crs []*unstructured.Unstructured) simulate.Result {
		t.Helper()
		in := &simulate.Input{Source: fleetPath, File: &simulate.File{Namespaces: spec.Namespaces, Clusters: spec.Clusters, Policies: policies}}
		for _, cr := range crs {
			in.Objects = append(in.Objects, cr.DeepCopy().Object)
			in.ObjectSources = append(in.ObjectSources, fmt.Sprintf("%s %s/%s", cr.GetKind(), cr.GetNamespace(), cr.GetName()))
		}
		results, err := simulate.Run(in, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatalf("simulate: %v", err)
		}
		if len(results) != len(crs) {
			t.Fatalf("simulate returned %d results for %d workloads", len(results), len(crs))
		}
		return results[len(results)-1]
	}
}
