package karta

import (
	"strings"
	"sync"
	"testing"
)

// recordingGuard records the identities entered, and which are still in progress.
type recordingGuard struct {
	mu      sync.Mutex
	entered []string
	open    int
}

func (g *recordingGuard) Enter(identity string) func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.entered, g.open = append(g.entered, identity), g.open+1
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.open--
	}
}

const guardedRI = `apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
metadata: {name: widgets}
spec:
  structureDefinition:
    rootComponent:
      name: widget
      kind: {group: example.com, version: v1, kind: Widget}
      specDefinition: {podTemplateSpecPath: .spec.template}
      scaleDefinition: {replicasPath: .spec.replicas}
`

// TestUserRIEvaluationsAreGuarded: every evaluation of a user RI, analysis or status mapping, is entered and
// left under the process's guard with the identity of the RI's version; built-in RIs are not guarded. A refused
// version is not evaluated at all, its error says why, and an edited RI is another version, evaluated again.
func TestUserRIEvaluationsAreGuarded(t *testing.T) {
	guard := &recordingGuard{}
	SetEvaluationGuard(guard)
	defer SetEvaluationGuard(nil)
	ri := compileRI(t, guardedRI)
	widget := mustParseObject(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: ml},
  spec: {replicas: 2, template: {spec: {containers: [{name: c}]}}}}`)
	if _, err := ri.Analyze(widget); err != nil {
		t.Fatal(err)
	}
	if _, err := ri.Phase(widget); err != nil {
		t.Fatal(err)
	}
	analyzeBuiltin(t, mustParseObject(t, `{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ml},
  spec: {template: {spec: {containers: [{name: c}]}}}}`))
	if len(guard.entered) != 2 || guard.entered[0] != ri.Identity() || guard.entered[1] != ri.Identity() || guard.open != 0 {
		t.Fatalf("guard entered %v with %d still open, want %s twice (analysis and phase) and none open", guard.entered,
			guard.open, ri.Identity())
	}
	if !strings.HasPrefix(ri.Identity(), "widgets@") {
		t.Errorf("identity %q, want the RI's name and digest", ri.Identity())
	}

	Refuse(ri.Identity(), "the last fleetflow process stopped while evaluating it")
	if _, err := ri.Analyze(widget); err == nil || !strings.Contains(err.Error(), "not evaluated: the last fleetflow process stopped while evaluating it") {
		t.Errorf("a refused version analyzed with error %v, want it refused with the reason", err)
	}
	if len(guard.entered) != 2 {
		t.Errorf("the refused version was evaluated: guard entered %v", guard.entered)
	}
	edited := compileRI(t, strings.Replace(guardedRI, ".spec.replicas", ".spec.replicas // 1", 1))
	if edited.Identity() == ri.Identity() {
		t.Fatalf("an edited RI has the identity %s of the refused one", edited.Identity())
	}
	if _, err := edited.Analyze(widget); err != nil {
		t.Errorf("the edited RI: %v, want it evaluated", err)
	}
}
