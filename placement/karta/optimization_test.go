package karta

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestCombinedProgramMatchesPerPathRuns: the combined gojq run is only an optimization. For every
// corpus sample, analysis with it must equal analysis with each path run alone.
func TestCombinedProgramMatchesPerPathRuns(t *testing.T) {
	builtins := builtinRegistry(t)
	karta := kartaRegistry(t)
	compared := 0
	for _, s := range corpusSamples(t) {
		c, ok := builtins.Lookup(GVKOf(s.obj))
		if !ok {
			t.Errorf("%s: no built-in RI", s.file)
			continue
		}
		compared += compareCombined(t, s, c)
		if kc, ok := karta.Lookup(GVKOf(s.obj)); ok {
			compared += compareCombined(t, s, kc)
		}
	}
	if compared == 0 {
		t.Skip("no samples compared")
	}
}

// kartaRegistry compiles Karta's valid example RIs.
func kartaRegistry(t *testing.T) *Registry {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(corpusDir(t), "karta", "*.yaml"))
	var cs []*Compiled
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ris, err := ParseResourceInterfaces(data, filepath.Base(f))
		if err != nil {
			continue // the CRD and the invalid mpijob.yaml
		}
		for _, ri := range ris {
			if c, err := Compile(ri, filepath.Base(f)); err == nil {
				cs = append(cs, c)
			}
		}
	}
	return NewRegistry(cs...)
}

// compareCombined analyzes s with c as built and with its per-path runs only; both must agree,
// on the result and on any error.
func compareCombined(t *testing.T, s sample, c *Compiled) int {
	t.Helper()
	if c.combined == nil {
		t.Errorf("%s: the combined program of %s did not compile", s.file, c.Name)
		return 0
	}
	perPath := *c
	perPath.combined = nil
	want, wantErr := perPath.Analyze(s.obj)
	got, gotErr := c.Analyze(s.obj)
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Errorf("%s with %s: errors differ: combined %v, per path %v", s.file, c.Name, gotErr, wantErr)
		return 0
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s with %s: analyses differ:\ncombined %+v\nper path %+v", s.file, c.Name, got, want)
	}
	return 1
}

func TestRunawayExpressions(t *testing.T) {
	saved := evalTimeout
	evalTimeout = 100 * time.Millisecond
	defer func() { evalTimeout = saved }()
	tests := []struct{ name, replicas, want string }{
		{"never ends", "def f: f; f", "did not finish within"},
		{"too many values", "range(20000)", "yields more than 10000 values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compileRI(t, riHeader+`
    - name: worker
      ownerRef: root
      specDefinition: {podTemplateSpecPath: '.spec.template'}
      scaleDefinition: {replicasPath: '`+tt.replicas+`'}
`)
			start := time.Now()
			_, err := c.Analyze(mustParseObject(t, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {template: {}}"))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "scaleDefinition.replicasPath") {
				t.Errorf("got %v, want an error naming the field and %q", err, tt.want)
			}
			// Generous bound: the evaluation is cut at 100ms; this only catches a missing cut.
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("analysis took %v", d)
			}
		})
	}
}

// A user RI whose evaluations run out of time maxTimeoutsInARow times in a row is given up on until it changes:
// later workloads fail at once, naming it, instead of holding placement a second each. A built-in RI is not.
func TestRunawayRIGivenUpAfterTimeoutsInARow(t *testing.T) {
	saved := evalTimeout
	evalTimeout = 50 * time.Millisecond
	defer func() { evalTimeout = saved }()
	runaway := riHeader + `
    - name: worker
      ownerRef: root
      specDefinition: {podTemplateSpecPath: '.spec.template'}
      scaleDefinition: {replicasPath: 'def f: f; f'}
`
	obj := mustParseObject(t, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {template: {}}")
	for _, builtin := range []bool{false, true} {
		c := compileRI(t, runaway)
		c.Builtin = builtin
		var errs []string
		for range maxTimeoutsInARow + 2 {
			_, err := c.Analyze(obj)
			if err == nil {
				t.Fatal("a runaway RI analyzed")
			}
			errs = append(errs, err.Error())
		}
		for i, err := range errs {
			wantGivenUp := !builtin && i >= maxTimeoutsInARow
			if gotGivenUp := strings.Contains(err, "not evaluated"); gotGivenUp != wantGivenUp ||
				(!wantGivenUp && !strings.Contains(err, "did not finish within")) || !strings.Contains(err, "Thing t") {
				t.Errorf("builtin %v, evaluation %d: %s; given up: want %v", builtin, i, err, wantGivenUp)
			}
		}
	}
	if _, err := compileRI(t, runaway).Analyze(obj); err == nil || strings.Contains(err.Error(), "not evaluated") {
		t.Errorf("the RI compiled again (changed) is not evaluated again: %v", err)
	}
}

// A user RI whose evaluations finish but are slow is given up on as one that runs out of time, until it changes:
// every other workload would wait behind those of its kind. The test counts every evaluation slow.
func TestSlowRIGivenUp(t *testing.T) {
	saved := slowEvaluation
	defer func() { slowEvaluation = saved }()
	slowEvaluation = time.Nanosecond
	ri := riHeader + `
    - name: worker
      ownerRef: root
      specDefinition: {podTemplateSpecPath: '.spec.template'}
      scaleDefinition: {replicasPath: '.spec.replicas'}
`
	c := compileRI(t, ri)
	obj := mustParseObject(t, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {replicas: 1, template: {spec: {containers: [{name: c}]}}}")
	for i := range maxTimeoutsInARow {
		if _, err := c.Analyze(obj); err != nil {
			t.Fatalf("slow evaluation %d: %v, want its analysis", i, err)
		}
	}
	_, err := c.Analyze(obj)
	if err == nil || !strings.Contains(err.Error(), "not evaluated: its last 2 evaluations took longer than 1ns each") {
		t.Fatalf("after %d slow evaluations: %v, want the RI given up on", maxTimeoutsInARow, err)
	}
	slowEvaluation = saved
	if _, err := compileRI(t, ri).Analyze(obj); err != nil {
		t.Errorf("the RI compiled again (changed): %v, want it evaluated", err)
	}
}
