package frameworkcrds

import (
	"embed"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetflow/fleetflow/internal/kube"
)

// PropagateLabel marks the CRDs that the level-1 Duplicate policies of the tests, the demo and the bench
// copy to every workload cluster.
const PropagateLabel = "fleetflow.io/propagate"

//go:embed *.yaml
var files embed.FS

// Objects returns the CRDs of the named files, in that order; with no name, those of every file.
func Objects(names ...string) ([]*unstructured.Unstructured, error) {
	if len(names) == 0 {
		entries, err := files.ReadDir(".")
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			names = append(names, e.Name())
		}
	}
	var out []*unstructured.Unstructured
	for _, name := range names {
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("framework CRD %s: %w", name, err)
		}
		objs, err := kube.DecodeYAML(data, name)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// Propagated labels the CRDs with PropagateLabel, so that a level-1 Duplicate policy copies them.
func Propagated(crds []*unstructured.Unstructured) []*unstructured.Unstructured {
	for _, crd := range crds {
		labels := crd.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[PropagateLabel] = "true"
		crd.SetLabels(labels)
	}
	return crds
}
