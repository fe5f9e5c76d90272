package karta

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestCombinedProgramMatchesPerPathRuns: the combined gojq run is only an optimization. For every
// corpus sample, analysis with it must equal analysis with each path run alone.
func TestCombinedProgramMatchesPerPathRuns(t *testing.T) {
	reg := builtinRegistry(t)
	compared := 0
	for _, s := range corpusSamples(t) {
		c, ok := reg.Lookup(GVKOf(s.obj))
		if !ok {
			t.Errorf("%s: no built-in RI", s.file)
			continue
		}
		if c.combined == nil {
			t.Errorf("%s: the combined program of %s did not compile", s.file, c.Name)
			continue
		}
		perPath := *c
		perPath.combined = nil
		want, wantErr := perPath.Analyze(s.obj)
		got, gotErr := c.Analyze(s.obj)
		if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
			t.Errorf("%s: errors differ: combined %v, per path %v", s.file, gotErr, wantErr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: analyses differ:\ncombined %+v\nper path %+v", s.file, got, want)
		}
		compared++
	}
	if compared == 0 {
		t.Skip("no samples compared")
	}
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
