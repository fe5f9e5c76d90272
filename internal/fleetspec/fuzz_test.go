package fleetspec

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"sigs.k8s.io/yaml"
)

// sameFleet compares fleets by meaning: quantities by value, nil and empty alike, and times to the second, which
// is all a taint's timeAdded keeps when written.
var sameFleet = conversion.EqualitiesOrDie(
	func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 },
	func(a, b metav1.Time) bool { return a.Truncate(time.Second).Equal(b.Truncate(time.Second)) },
)

// FuzzParse: a fleet file parses to a valid fleet or fails naming the file, with a path and a reason for every
// field at fault, and the same message every time; a fleet that parses, written back as YAML, parses to the same
// fleet.
func FuzzParse(f *testing.F) {
	f.Add([]byte(validFleet))
	for _, tt := range parseRejects {
		f.Add([]byte(tt.yaml))
	}
	if data, err := yaml.Marshal(Fleet{Clusters: []Cluster{{Name: "json", Nodes: []NodeGroup{{Name: "n", Count: 2,
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}}}}); err == nil {
		if j, err := yaml.YAMLToJSON(data); err == nil {
			f.Add(j) // a fleet file may be JSON
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 || DeclaredNodes(data) > maxFuzzNodes {
			return // big fleets say nothing a small one cannot; they only slow the fuzzer
		}
		fleet, err := Parse(data, "fuzz.yaml")
		if _, again := Parse(data, "fuzz.yaml"); errorText(again) != errorText(err) {
			t.Fatalf("Parse answered %q, then %q", errorText(err), errorText(again))
		}
		if err != nil {
			checkParseError(t, err)
			return
		}
		if err := fleet.Validate(); err != nil {
			t.Fatalf("Parse returned a fleet that does not validate: %v", err)
		}
		written, err := yaml.Marshal(fleet)
		if err != nil {
			t.Fatalf("a parsed fleet does not write: %v", err)
		}
		reread, err := Parse(written, "written.yaml")
		if err != nil {
			t.Fatalf("the fleet written back does not parse: %v\n%s", err, written)
		}
		if !sameFleet.DeepEqual(fleet, reread) {
			t.Fatalf("the fleet changed on the way through YAML:\n%#v\n%#v\n%s", fleet, reread, written)
		}
	})
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkParseError: the message names the file, and every field error in it its field and the reason.
func checkParseError(t *testing.T, err error) {
	t.Helper()
	if !strings.HasPrefix(err.Error(), "fleet fuzz.yaml: ") || strings.TrimPrefix(err.Error(), "fleet fuzz.yaml: ") == "" {
		t.Fatalf("error %q does not start with the file and go on to say what is wrong", err)
	}
	checkFieldErrors(t, err)
}

// checkFieldErrors: every field error in err names its field and why.
func checkFieldErrors(t *testing.T, err error) {
	t.Helper()
	var fe *FieldError
	if errors.As(err, &fe) && (fe.Path == "" || fe.Reason == "") {
		t.Fatalf("field error %+v without its field or reason", fe)
	}
	// errors.As finds the first; the walk reaches the others.
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, inner := range joined.Unwrap() {
			checkFieldErrors(t, inner)
		}
	}
	if inner := errors.Unwrap(err); inner != nil {
		checkFieldErrors(t, inner)
	}
}

// maxFuzzNodes bounds the fleets the fuzz targets parse: validation names each node, and a few groups of the
// largest count take seconds.
const maxFuzzNodes = 1000
