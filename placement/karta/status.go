package karta

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

type compiledStatus struct {
	phase       *program
	conditions  *program
	typeField   string
	statusField string
	reasonField string
	byPriority  []statusRule
}

// statusRule is the matchers of one status. Rules are tried in priority order and the first
// status with a matching matcher wins.
type statusRule struct {
	phase    Phase
	matchers []compiledMatcher
}

type compiledMatcher struct {
	byPhase      string
	byConditions []ExpectedCondition
	expression   *program
	expected     string
}

func (cp *compiler) statusDefinition(component string, sd *StatusDefinition, evaluated bool) *compiledStatus {
	mark := func(p *program) *program {
		if evaluated {
			return cp.onCR(p)
		}
		return p
	}
	cs := &compiledStatus{typeField: "type", statusField: "status", reasonField: "reason"}
	if sd.PhaseDefinition != nil {
		if sd.PhaseDefinition.Path == "" {
			cp.fail(component, "statusDefinition.phaseDefinition.path", "", errors.New("required"))
			return nil
		}
		cs.phase = mark(cp.jq(component, "statusDefinition.phaseDefinition.path", &sd.PhaseDefinition.Path))
	}
	if cd := sd.ConditionsDefinition; cd != nil {
		if cd.Path == "" {
			cp.fail(component, "statusDefinition.conditionsDefinition.path", "", errors.New("required"))
			return nil
		}
		cs.conditions = mark(cp.jq(component, "statusDefinition.conditionsDefinition.path", &cd.Path))
		if cd.TypeFieldName != "" {
			cs.typeField = cd.TypeFieldName
		}
		if cd.StatusFieldName != "" {
			cs.statusField = cd.StatusFieldName
		}
		if cd.ReasonFieldName != nil && *cd.ReasonFieldName != "" {
			cs.reasonField = *cd.ReasonFieldName
		}
	}
	// Terminal states outrank live ones, and Degraded outranks Running, because RIs often write
	// overlapping matchers (a running PyTorchJob still has Created=True, which is "initializing").
	m := sd.StatusMappings
	for _, r := range []struct {
		phase    Phase
		name     string
		matchers []StatusMatcher
	}{
		{PhaseFailed, "failed", m.Failed},
		{PhaseCompleted, "completed", m.Completed},
		{PhaseDegraded, "degraded", m.Degraded},
		{PhaseRunning, "running", m.Running},
		{PhaseInitializing, "initializing", m.Initializing},
	} {
		rule := statusRule{phase: r.phase}
		for i, sm := range r.matchers {
			field := fmt.Sprintf("statusDefinition.statusMappings.%s[%d]", r.name, i)
			cm := compiledMatcher{byPhase: sm.ByPhase, byConditions: sm.ByConditions}
			if sm.ByPhase != "" && cs.phase == nil {
				cp.fail(component, field+".byPhase", "", errors.New("needs statusDefinition.phaseDefinition"))
				return nil
			}
			for j, ec := range sm.ByConditions {
				if ec.Type == "" {
					cp.fail(component, fmt.Sprintf("%s.byConditions[%d].type", field, j), "", errors.New("required"))
					return nil
				}
				if cs.conditions == nil {
					cp.fail(component, field+".byConditions", "", errors.New("needs statusDefinition.conditionsDefinition"))
					return nil
				}
			}
			if e := sm.ByExpression; e != nil {
				cm.expression = mark(cp.jq(component, field+".byExpression.expression", &e.Expression))
				cm.expected = e.ExpectedResult
			}
			// A matcher with no byPhase, byConditions or byExpression checks nothing and matches, as in Karta,
			// whose CRD requires none of them.
			rule.matchers = append(rule.matchers, cm)
		}
		cs.byPriority = append(cs.byPriority, rule)
	}
	return cs
}

type condition struct {
	status, reason string
}

// Phase maps a CR's status through the RI's statusMappings. A CR without a matching status, or an
// RI without a status definition, is Undefined. A condition the CR lacks never matches.
// Like Analyze, it normalizes obj first unless every value is one of jq's own types.
func (c *Compiled) Phase(obj map[string]any) (Phase, error) {
	input, err := c.jqInput(obj)
	if err != nil {
		return PhaseUndefined, err
	}
	return c.phaseOnce(input)
}

// phaseOnce runs only the status paths, each alone: the combined program would evaluate far more.
func (c *Compiled) phaseOnce(input map[string]any) (Phase, error) {
	if err := c.givenUp(input); err != nil {
		return PhaseUndefined, err
	}
	if !c.Builtin {
		return guarded(c, input, func() (Phase, error) {
			started := time.Now()
			phase, err := c.phaseNow(input)
			c.noteTimeout(err, time.Since(started))
			return phase, err
		})
	}
	return c.phaseNow(input)
}

func (c *Compiled) phaseNow(input map[string]any) (Phase, error) {
	ctx, cancel := newEvalContext(evalTimeout)
	defer cancel()
	return c.phase(&evaluation{ctx: ctx, cancel: cancel, input: input})
}

func (c *Compiled) phase(ev *evaluation) (Phase, error) {
	cs := c.status
	if cs == nil {
		return PhaseUndefined, nil
	}
	var phase *string
	if cs.phase != nil {
		out, err := c.run(ev, "", cs.phase)
		if err != nil {
			return PhaseUndefined, err
		}
		if len(out) > 0 && out[0] != nil {
			s := scalarString(out[0])
			phase = &s
		}
	}
	conds := map[string]condition{}
	if cs.conditions != nil {
		out, err := c.run(ev, "", cs.conditions)
		if err != nil {
			return PhaseUndefined, err
		}
		for _, v := range out {
			if v == nil {
				continue
			}
			list, ok := v.([]any)
			if !ok {
				return PhaseUndefined, c.evalError(ev, "", cs.conditions, fmt.Errorf("yields %s, want an array of conditions", typeName(v)))
			}
			for _, item := range list {
				m, ok := item.(map[string]any)
				if !ok {
					continue
				}
				t, _ := m[cs.typeField].(string)
				if t == "" {
					continue
				}
				st, _ := m[cs.statusField].(string)
				rs, _ := m[cs.reasonField].(string)
				conds[t] = condition{status: st, reason: rs}
			}
		}
	}
	for _, rule := range cs.byPriority {
		for _, m := range rule.matchers {
			ok, err := c.matches(ev, m, phase, conds)
			if err != nil {
				return PhaseUndefined, err
			}
			if ok {
				return rule.phase, nil
			}
		}
	}
	return PhaseUndefined, nil
}

func (c *Compiled) matches(ev *evaluation, m compiledMatcher, phase *string, conds map[string]condition) (bool, error) {
	if m.byPhase != "" && (phase == nil || *phase != m.byPhase) {
		return false, nil
	}
	for _, ec := range m.byConditions {
		got, ok := conds[ec.Type]
		if !ok {
			return false, nil
		}
		if ec.Status != "" && got.status != ec.Status {
			return false, nil
		}
		if ec.Reason != "" && got.reason != ec.Reason {
			return false, nil
		}
	}
	if m.expression != nil {
		out, err := c.run(ev, "", m.expression)
		if err != nil {
			return false, err
		}
		if len(out) == 0 || scalarString(out[0]) != m.expected {
			return false, nil
		}
	}
	return true, nil
}

// scalarString renders a jq value for comparison: strings as they are, anything else as JSON.
func scalarString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
