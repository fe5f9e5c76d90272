package karta

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
)

// EvaluationGuard is told when an evaluation of a user RI starts, with the identity of the RI's version
// (Compiled.Identity), and when it ends. Go cannot recover from running out of memory, and a hostile RI
// (`reduce range(40) as $i ("ab"; . + .)`) gets there within one evaluation, past any timeout: a guard
// records the evaluation where a process that dies in it leaves it behind, so the next process refuses
// that version (Refuse) rather than die again when its rebuild analyzes the workloads of its kind.
type EvaluationGuard interface {
	Enter(identity string) (leave func())
}

var evaluationGuard atomic.Pointer[EvaluationGuard]

// SetEvaluationGuard installs the process's guard; nil removes it. Built-in RIs are never guarded.
func SetEvaluationGuard(g EvaluationGuard) {
	if g == nil {
		evaluationGuard.Store(nil)
		return
	}
	evaluationGuard.Store(&g)
}

// refusedVersions maps the identities of RI versions not to evaluate to why.
var refusedVersions sync.Map

// Refuse stops evaluations of the RI version identity, for reason: each fails at once, saying why, until the
// RI changes (a new version has another identity).
func Refuse(identity, reason string) { refusedVersions.Store(identity, reason) }

// Identity names this version of the RI: its name and a digest of its definition, so an edited RI is another.
func (c *Compiled) Identity() string { return c.identity }

// identityOf is the name and a digest of ri's spec.
func identityOf(name string, ri *ResourceInterface) string {
	spec, err := json.Marshal(ri.Spec)
	if err != nil {
		return name
	}
	// The exclusive-topology expression is evaluated as the spec's paths are.
	spec = append(spec, ri.Annotations[AnnotationExclusiveTopology]...)
	sum := sha256.Sum256(spec)
	return name + "@" + hex.EncodeToString(sum[:8])
}

// guarded runs evaluate, an evaluation of user RI c, under the process's guard, or refuses it.
func guarded[T any](c *Compiled, input map[string]any, evaluate func() (T, error)) (T, error) {
	if reason, refused := refusedVersions.Load(c.identity); refused {
		var zero T
		return zero, &AnalysisError{RI: c.label(), Object: objectLabel(input),
			Err: fmt.Errorf("not evaluated: %s; it is evaluated again once it changes", reason)}
	}
	if g := evaluationGuard.Load(); g != nil {
		defer (*g).Enter(c.identity)()
	}
	return evaluate()
}
