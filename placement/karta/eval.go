package karta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/itchyny/gojq"
)

// maxOutputs bounds how many values one jq path may yield for one CR, so a runaway expression in a
// user RI fails the analysis instead of exhausting memory.
const maxOutputs = 10000

// AnalysisError is a CR the RI could not analyze: a jq path failed or yielded something unusable. Its message
// names the CR's own field where it can tell which (Path), and the RI's field otherwise; the jq expression is
// left to Expr, for debug logs, since a user reads their CR, not the RI.
type AnalysisError struct {
	RI        string
	Component string
	// Field is the RI's field whose path failed (scaleDefinition.replicasPath); Expr is its jq.
	Field string
	Expr  string
	// Path is the field of the CR that is wrong (spec.pytorchReplicaSpecs.Worker.replicas), "" when unknown.
	Path   string
	Object string // Kind namespace/name of the CR
	Err    error
}

func (e *AnalysisError) Error() string {
	msg := e.Object
	if msg == "" {
		msg = "object"
	}
	if e.Path != "" {
		msg += ": " + e.Path + ": " + e.Err.Error() + " (read by " + e.RI
		if e.Component != "" {
			msg += fmt.Sprintf(" for component %q", e.Component)
		}
		return msg + ")"
	}
	msg += ": " + e.RI
	if e.Component != "" {
		msg += fmt.Sprintf(": component %q", e.Component)
	}
	if e.Field != "" {
		msg += ": " + e.Field
	}
	return msg + ": " + e.Err.Error()
}

func (e *AnalysisError) Unwrap() error { return e.Err }

// evaluation is one analysis of one object: the object and, when the RI's combined program ran
// cleanly, every path's outputs at once.
type evaluation struct {
	ctx     context.Context
	cancel  context.CancelFunc
	input   map[string]any
	results [][]any // by program slot; nil when each path must run on its own
	// identities finds the CR's own pod templates in what the RI's paths yield (templatePath).
	identities identityIndex
}

func (ev *evaluation) release() { ev.cancel() }

// evalTimeout bounds the jq evaluation of one analysis, so a user RI whose expression never ends
// (`def f: f; f`) fails that analysis instead of stalling placement.
var evalTimeout = time.Second

var errEvalTimeout = errors.New("evaluation did not finish")

// maxTimeoutsInARow is how many evaluations of a user RI in a row may run out of time, or be slow, before it is
// given up on until it changes: every workload of its kind would otherwise hold the placer for up to a second
// or two (one RI event re-analyzes them all, one after another), and every other workload waits behind them.
// Built-in RIs are never given up on; neither is an RI after a single slow evaluation, which a stalled machine
// can cause.
const maxTimeoutsInARow = 2

// slowEvaluation is how long an evaluation of a user RI may take before it counts as slow: one of a sane RI
// takes microseconds, and one that takes a quarter of a second limits placement to four workloads a second.
var slowEvaluation = 250 * time.Millisecond

// noteTimeout counts an evaluation that ran out of time or took longer than slowEvaluation, and forgets the
// count after one that did neither.
func (c *Compiled) noteTimeout(err error, took time.Duration) {
	switch {
	case errors.Is(err, errEvalTimeout) || took > slowEvaluation:
		c.timeoutsInARow.Add(1)
	case c.timeoutsInARow.Load() != 0:
		c.timeoutsInARow.Store(0)
	}
}

// givenUp fails at once an evaluation of a user RI whose last evaluations all ran out of time or were slow.
func (c *Compiled) givenUp(input map[string]any) error {
	if c.Builtin || c.timeoutsInARow.Load() < maxTimeoutsInARow {
		return nil
	}
	return &AnalysisError{RI: c.label(), Object: objectLabel(input),
		Err: fmt.Errorf("not evaluated: its last %d evaluations took longer than %v each (or did not finish within %v); "+
			"it is evaluated again once it changes", maxTimeoutsInARow, slowEvaluation, evalTimeout)}
}

// newEvaluation runs the combined program, which evaluates every CR path of the RI in one gojq run
// (much cheaper than one run per path). If it fails anywhere, results stay nil and each path runs
// alone, so errors are attributed to the exact component and field, and paths an analysis would not
// reach (a lower-priority status matcher) cannot fail it.
func (c *Compiled) newEvaluation(input map[string]any) *evaluation {
	ctx, cancel := newEvalContext(evalTimeout)
	ev := &evaluation{ctx: ctx, cancel: cancel, input: input}
	if c.combined == nil {
		return ev
	}
	results, err := runCombined(ctx, c.combined, input, c.slots)
	if err != nil {
		// The per-path runs that follow find the failing path; they get a budget of their own so a
		// path that never ends is the one reported.
		cancel()
		ev.ctx, ev.cancel = newEvalContext(evalTimeout)
		return ev
	}
	ev.results = results
	return ev
}

// errCombined is any reason to fall back from the combined run to per-path runs.
var errCombined = errors.New("combined evaluation incomplete")

// runCombined splits the combined program's output stream at the separators into per-path results.
func runCombined(ctx context.Context, code *gojq.Code, input map[string]any, slots int) (results [][]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			results, err = nil, errCombined
		}
	}()
	results = make([][]any, 0, slots)
	var cur []any
	iter := code.RunWithContext(ctx, input)
	for {
		v, ok := iter.Next()
		if !ok {
			break
		}
		if v == pathSeparator {
			if len(results) == slots {
				return nil, errCombined
			}
			results = append(results, cur)
			cur = nil
			continue
		}
		if _, isErr := v.(error); isErr {
			return nil, errCombined
		}
		if len(cur) == maxOutputs {
			return nil, errCombined
		}
		cur = append(cur, v)
	}
	if len(results) != slots || cur != nil {
		return nil, errCombined
	}
	return results, nil
}

// runCode runs compiled jq, turning a panic (gojq panics on values outside its type set) into an error.
func runCode(ctx context.Context, code *gojq.Code, input map[string]any) (out []any, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("jq evaluation failed on a value of unsupported type: %v", r)
		}
	}()
	iter := code.RunWithContext(ctx, input)
	for {
		v, ok := iter.Next()
		if !ok {
			return out, nil
		}
		if e, isErr := v.(error); isErr {
			var halt *gojq.HaltError
			if errors.As(e, &halt) && halt.Value() == nil {
				return out, nil
			}
			if errors.Is(e, context.DeadlineExceeded) {
				return nil, fmt.Errorf("%w within %v", errEvalTimeout, evalTimeout)
			}
			return nil, e
		}
		if len(out) == maxOutputs {
			return nil, fmt.Errorf("yields more than %d values", maxOutputs)
		}
		out = append(out, v)
	}
}

// run evaluates p and collects its outputs.
func (c *Compiled) run(ev *evaluation, component string, p *program) ([]any, error) {
	if ev.results != nil && p.slot >= 0 {
		return ev.results[p.slot], nil
	}
	out, err := runCode(ev.ctx, p.code, ev.input)
	if err != nil {
		return nil, c.evalError(ev, component, p, err)
	}
	return out, nil
}

func (c *Compiled) evalError(ev *evaluation, component string, p *program, err error) *AnalysisError {
	return &AnalysisError{RI: c.label(), Component: component, Field: p.field, Expr: p.expr, Object: objectLabel(ev.input), Err: err}
}

// valueError is err about value v, the i-th that p yielded: it names the CR's field holding v when it can be
// found (fieldOf), joined with the field within v that err names (fieldError); else it says which value it was.
func (c *Compiled) valueError(ev *evaluation, component string, p *program, i int, v any, err error) *AnalysisError {
	ae := c.evalError(ev, component, p, err)
	path := fieldOf(ev.input, v, component)
	if path == "" {
		ae.Err = fmt.Errorf("value %d: %w", i, err)
		return ae
	}
	ae.Path = path
	var inner fieldError
	if errors.As(err, &inner) {
		ae.Path, ae.Err = path+"."+inner.field, inner.err
	}
	return ae
}

// objectLabel renders "Kind namespace/name" for messages.
func objectLabel(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	if kind == "" {
		kind = "object"
	}
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	switch {
	case ns != "":
		return fmt.Sprintf("%s %s/%s", kind, ns, name)
	case name != "":
		return fmt.Sprintf("%s %s", kind, name)
	default:
		return kind
	}
}

// normalizeInput returns obj in the value types gojq accepts. Objects decoded from JSON already
// are, and are returned as they are; anything else (int64 from client-go, typed slices from Go
// builders) is rebuilt through JSON once.
func normalizeInput(obj map[string]any) (map[string]any, error) {
	if obj == nil {
		return nil, errors.New("no object to analyze")
	}
	if jqCompatible(obj, 0) {
		return obj, nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("object is not JSON-representable: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("object is not JSON-representable: %w", err)
	}
	return out, nil
}

// maxDepth guards the compatibility walk against pathological nesting.
const maxDepth = 10000

func jqCompatible(v any, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool, int, float64, string, *big.Int:
		return true
	case []any:
		for _, e := range x {
			if !jqCompatible(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range x {
			if !jqCompatible(e, depth+1) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case int, float64, *big.Int:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
