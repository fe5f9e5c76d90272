package schemas

import (
	"strings"
	"testing"
)

func TestPinsRoundTrip(t *testing.T) {
	pins := Pins{"worker": {"node-b": 1, "node-a": 2}, "master": {"node-a": 1}}
	encoded := pins.String()
	if want := `{"master":{"node-a":1},"worker":{"node-a":2,"node-b":1}}`; encoded != want {
		t.Fatalf("String() = %s, want %s", encoded, want)
	}
	back, err := ParsePins(encoded)
	if err != nil {
		t.Fatal(err)
	}
	if back.String() != encoded {
		t.Fatalf("round trip = %s, want %s", back, encoded)
	}
	if Pins(nil).String() != "" {
		t.Fatal("empty pins encode as a non-empty string")
	}
}

func TestParsePinsRejects(t *testing.T) {
	for name, in := range map[string]string{
		"not JSON":       `worker=node-a`,
		"negative pods":  `{"worker":{"node-a":-1}}`,
		"pods not a map": `{"worker":3}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParsePins(in); err == nil || !strings.Contains(err.Error(), AnnotationPins) {
				t.Fatalf("ParsePins(%s) = %v, want an error naming %s", in, err, AnnotationPins)
			}
		})
	}
}

func TestParsePinCopy(t *testing.T) {
	tests := []struct {
		in                     string
		kind, apiVersion, name string
		fails                  bool
	}{
		{in: PinCopy("PyTorchJob", "kubeflow.org/v1", "train"), kind: "PyTorchJob", apiVersion: "kubeflow.org/v1", name: "train"},
		{in: PinCopy("ConfigMap", "v1", "c"), kind: "ConfigMap", apiVersion: "v1", name: "c"},
		{in: "PyTorchJob/train", fails: true},
		{in: "/v1/x", fails: true},
		{in: "Job/batch/v1/", fails: true},
	}
	for _, tt := range tests {
		kind, apiVersion, name, err := ParsePinCopy(tt.in)
		if tt.fails {
			if err == nil {
				t.Errorf("ParsePinCopy(%q) = %s %s %s, want an error", tt.in, kind, apiVersion, name)
			}
			continue
		}
		if err != nil || kind != tt.kind || apiVersion != tt.apiVersion || name != tt.name {
			t.Errorf("ParsePinCopy(%q) = %q %q %q %v", tt.in, kind, apiVersion, name, err)
		}
	}
}
