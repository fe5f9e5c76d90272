package karta

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// unitsOf renders units as "KEY: a 1 + b 2" lines ("KEY alone: ..." when alone), for comparison.
func unitsOf(units []ExclusiveUnit) []string {
	var out []string
	for _, u := range units {
		key := u.TopologyKey
		if u.Alone {
			key += " alone"
		}
		out = append(out, key+": "+u.String())
	}
	return out
}

// repeated is n copies of s.
func repeated(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestBuiltinExclusiveTopology(t *testing.T) {
	const pool = "cloud.google.com/gke-nodepool"
	lws := func(annotations, spec string) string {
		return "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {name: l, namespace: ns" +
			annotations + "}\nspec: " + spec
	}
	jobset := func(annotations, spec string) string {
		return "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j, namespace: ns" + annotations +
			"}\nspec: " + spec
	}
	const lwsExclusive = `, annotations: {leaderworkerset.sigs.k8s.io/exclusive-topology: ` + pool + `}`
	const jobsetExclusive = `, annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: ` + pool + `}`
	const podTemplate = `{spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}}`
	tests := []struct {
		name string
		cr   string
		want []string
	}{
		{"lws groups of leader and workers", lws(lwsExclusive, `{replicas: 3, leaderWorkerTemplate: {size: 4, workerTemplate: `+podTemplate+`}}`),
			repeated(pool+": leader 1 + worker 3", 3)},
		{"lws defaults: one group of one", lws(lwsExclusive, `{leaderWorkerTemplate: {workerTemplate: `+podTemplate+`}}`),
			[]string{pool + ": leader 1"}},
		{"lws without the annotation", lws("", `{replicas: 3, leaderWorkerTemplate: {size: 4, workerTemplate: `+podTemplate+`}}`), nil},
		{"lws subgroups with the leader in the first", lws(`, annotations: {leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology: rack}`,
			`{replicas: 2, leaderWorkerTemplate: {size: 4, subGroupPolicy: {subGroupSize: 2}, workerTemplate: `+podTemplate+`}}`),
			[]string{"rack: leader 1 + worker 1", "rack: worker 2", "rack: leader 1 + worker 1", "rack: worker 2"}},
		{"lws subgroups with the leader as the extra pod", lws(`, annotations: {leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology: rack}`,
			`{leaderWorkerTemplate: {size: 5, subGroupPolicy: {subGroupSize: 2}, workerTemplate: `+podTemplate+`}}`),
			[]string{"rack: leader 1 + worker 2", "rack: worker 2"}},
		{"lws subgroups without the leader", lws(`, annotations: {leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology: rack}`,
			`{leaderWorkerTemplate: {size: 5, subGroupPolicy: {subGroupSize: 2, subGroupPolicyType: LeaderExcluded}, workerTemplate: `+podTemplate+`}}`),
			[]string{"rack: worker 2", "rack: worker 2"}},
		{"lws groups and subgroups: the groups' key", lws(`, annotations: {leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology: rack, `+
			`leaderworkerset.sigs.k8s.io/exclusive-topology: `+pool+`}`,
			`{leaderWorkerTemplate: {size: 4, subGroupPolicy: {subGroupSize: 2}, workerTemplate: `+podTemplate+`}}`),
			[]string{pool + ": leader 1 + worker 3"}},
		{"lws subgroup annotation without a subgroup size", lws(`, annotations: {leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology: rack}`,
			`{leaderWorkerTemplate: {size: 4, workerTemplate: `+podTemplate+`}}`), nil},
		{"lws scaled to zero", lws(lwsExclusive, `{replicas: 0, leaderWorkerTemplate: {size: 4, workerTemplate: `+podTemplate+`}}`), nil},
		{"jobset: each child job", jobset(jobsetExclusive, `{replicatedJobs: [
		    {name: a, replicas: 2, template: {spec: {parallelism: 3, template: `+podTemplate+`}}},
		    {name: b, template: {spec: {parallelism: 4, completions: 2, template: `+podTemplate+`}}}]}`),
			append(repeated(pool+" alone: replicatedjob/a 3", 2), pool+" alone: replicatedjob/b 2")},
		{"jobset: on one replicated job's template", jobset("", `{replicatedJobs: [
		    {name: a, replicas: 2, template: {metadata: {annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: rack}},
		      spec: {parallelism: 2, template: `+podTemplate+`}}},
		    {name: b, template: {spec: {template: `+podTemplate+`}}}]}`),
			repeated("rack alone: replicatedjob/a 2", 2)},
		{"jobset suspended", jobset(jobsetExclusive, `{suspend: true, replicatedJobs: [{name: a, replicas: 2, template: {spec: {template: `+podTemplate+`}}}]}`), nil},
		{"jobset without the annotation", jobset("", `{replicatedJobs: [{name: a, replicas: 2, template: {spec: {template: `+podTemplate+`}}}]}`), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzeBuiltin(t, mustParseObject(t, tt.cr))
			if got := unitsOf(a.ExclusiveUnits); !slices.Equal(got, tt.want) {
				t.Errorf("exclusive units = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestExclusiveTopologyErrors(t *testing.T) {
	ri := func(expr string) *Compiled {
		return compileRI(t, strings.Replace(riHeader, "metadata: {name: bad-ri}",
			"metadata: {name: bad-ri, annotations: {fleetflow.io/exclusive-topology: '"+expr+"'}}", 1)+`
    - name: worker
      ownerRef: root
      specDefinition: {podTemplateSpecPath: '.spec.template'}
      scaleDefinition: {replicasPath: '.spec.replicas'}
`)
	}
	tests := []struct{ name, expr, want string }{
		{"not an object", `7`, "unit 0: is a number, want an object"},
		{"no key", `{pods: {worker: 1}}`, "unit 0: topologyKey is null, want a node label key"},
		{"bad key", `{topologyKey: "not a key!", pods: {worker: 1}}`, `topologyKey "not a key!" is not a label key`},
		{"unknown field", `{topologyKey: "rack", pods: {worker: 1}, size: 2}`, `unknown field "size"`},
		{"unknown component", `{topologyKey: "rack", pods: {leader: 1}}`, `pods of "leader": no component instance of this object has that name (known: worker)`},
		{"more pods than the component", `range(3) | {topologyKey: "rack", pods: {worker: 2}}`, `unit 2: the units hold 6 pods of "worker", which has 4`},
		{"not a count", `{topologyKey: "rack", pods: {worker: 1.5}}`, "not a whole replica count"},
		{"alone not a boolean", `{topologyKey: "rack", pods: {worker: 1}, alone: "yes"}`, "unit 0: alone is a string, want a boolean"},
		{"allNamespaces not a boolean", `{topologyKey: "rack", pods: {worker: 1}, allNamespaces: 1}`, "unit 0: allNamespaces is a number, want a boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ri(tt.expr).Analyze(mustParseObject(t, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t1, namespace: ns}\n"+
				"spec: {replicas: 4, template: {}}"))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "Thing ns/t1") ||
				!strings.Contains(err.Error(), exclusiveField) {
				t.Errorf("got %v, want an error naming the CR, the annotation and %q", err, tt.want)
			}
		})
	}
	// A unit naming several wrong components is refused naming the first by name, every time: the placer's
	// verdicts carry the error, and one that changed with each analysis would be published again and again.
	for range 20 {
		_, err := ri(`{topologyKey: "rack", pods: {b: 1, a: 1, worker: 1}}`).Analyze(mustParseObject(t,
			"apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t1}\nspec: {replicas: 4, template: {}}"))
		if want := `pods of "a": no component instance`; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want an error saying %q", err, want)
		}
	}
	a, err := ri(`range(2) | {topologyKey: "rack", pods: {worker: 2}}`).Analyze(mustParseObject(t,
		"apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t1}\nspec: {replicas: 4, template: {}}"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := unitsOf(a.ExclusiveUnits), repeated("rack: worker 2", 2); !slices.Equal(got, want) {
		t.Errorf("units = %q, want %q", got, want)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, a, ""); err != nil {
		t.Fatal(err)
	}
	if want := "exclusive topology: 2 units, each in a rack of its own: worker 2"; !strings.Contains(table.String(), want) {
		t.Errorf("table:\n%s\nwant a line %q", table.String(), want)
	}
}

func TestExclusiveTopologyChangesIdentity(t *testing.T) {
	parse := func(annotation string) *ResourceInterface {
		ris, err := ParseResourceInterfaces([]byte(strings.Replace(riHeader, "metadata: {name: bad-ri}",
			"metadata: {name: bad-ri, annotations: {fleetflow.io/exclusive-topology: '"+annotation+"'}}", 1)+`
    - name: worker
      ownerRef: root
      specDefinition: {podTemplateSpecPath: '.spec.template'}
`), "test.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return ris[0]
	}
	if identityOf("ri", parse("empty")) == identityOf("ri", parse(`{topologyKey: "rack", pods: {worker: 1}}`)) {
		t.Error("an RI whose exclusive-topology expression changed kept its identity, so a refused version stays refused")
	}
}
