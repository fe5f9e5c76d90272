package crds

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestChartCarriesTheseCRDs: the Helm chart's crds/ directory holds exactly these CRDs, byte for byte, so a
// chart install serves what the binary installs (hack/codegen.sh copies them).
func TestChartCarriesTheseCRDs(t *testing.T) {
	chartDir := filepath.Join("..", "chart", "fleetflow", "crds")
	names, err := fs.Glob(FS, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	var inChart []string
	for _, e := range entries {
		inChart = append(inChart, e.Name())
	}
	if !slices.Equal(names, inChart) {
		t.Fatalf("chart CRDs %v, want %v (run hack/codegen.sh)", inChart, names)
	}
	for _, name := range names {
		want, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chartDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s in the chart differs from deploy/crds/%s (run hack/codegen.sh)", name, name)
		}
	}
}
