package objects

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/policy"
)

// KindInfo tells policy validation which kinds an RI knows and which of those a Divide spread can split,
// as the RIs in force say (karta.Compiled.Divisible).
func KindInfo(ris *karta.Registry) policy.KindInfo {
	return ris.DivisibleGroupKind
}

// InvalidCluster says what is wrong with a Cluster's spec that its CRD's schema let in (an older CRD took any
// taint), naming the Cluster, each field's path and value, or "" when nothing is.
func InvalidCluster(cluster *v1alpha1.Cluster) string {
	errs := v1alpha1.ValidateTaints(field.NewPath("spec", "taints"), cluster.Spec.Taints)
	if len(errs) == 0 {
		return ""
	}
	reasons := make([]string, len(errs))
	for i, err := range errs {
		reasons[i] = err.Error()
	}
	return fmt.Sprintf("Cluster %s is invalid: %s", cluster.Name, strings.Join(reasons, "; "))
}

// RICreated is the creation time of an RI object of the control plane, which orders the user RIs of a kind
// (karta.Registry); zero when it has none.
func RICreated(obj map[string]any) time.Time {
	return (&unstructured.Unstructured{Object: obj}).GetCreationTimestamp().Time
}
