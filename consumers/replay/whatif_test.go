package replay_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/fleetflow/fleetflow/consumers/replay"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
)

// withSouth is busyDay with a fourth, larger cluster that no policy selects yet.
func withSouth(t *testing.T) *recording {
	r := busyDay(t)
	r.cluster("south", "16")
	return r
}

func TestWhatIfPredictsWhatApplyingThePolicyDoes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		clusters []string
	}{
		{"drop a cluster and add one", []string{"north", "south"}},
		{"drop every Ready cluster", []string{"east"}},
		{"unchanged", []string{"west", "east", "north"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := withSouth(t)
			pol := policyObject("fill", tc.clusters...)
			report, err := replay.RunWhatIf(t.Context(), func() (replay.History, error) { return r.exported(), nil },
				replay.WhatIf{Policies: []map[string]any{pol.Object}}, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(report.Replay.Divergences); n != 0 {
				t.Fatalf("the history itself replays with %d divergences", n)
			}

			// Now apply it for real, and read what the live placer said.
			r.input(schemas.TypePolicyChanged, schemas.PolicySubject(pol.Ref()), pol)
			live := replay.NewSession(replay.Options{})
			if _, err := live.Run(t.Context(), r.exported()); err != nil {
				t.Fatal(err)
			}
			got := live.RecordedOutcomes()
			if len(report.Workloads) != len(got) {
				t.Fatalf("what-if lists %d workloads, %d live", len(report.Workloads), len(got))
			}
			changed := 0
			for _, w := range report.Workloads {
				l := got[w.Workload]
				if l.Status != w.WhatIf.Status || !slices.Equal(l.Clusters, w.WhatIf.Clusters) {
					t.Errorf("%s: what-if says %s on %v, live %s on %v", w.Workload, w.WhatIf.Status, w.WhatIf.Clusters, l.Status, l.Clusters)
				}
				if w.Change != replay.Same {
					changed++
				}
			}
			s := report.Summary
			if changed != s.Move+s.LosePlacement+s.GainPlacement+s.OtherwiseDiffer {
				t.Errorf("summary %+v does not count the %d changed workloads", s, changed)
			}
			if (changed == 0) != slices.Equal(tc.clusters, []string{"west", "east", "north"}) {
				t.Errorf("%d workloads change under %v", changed, tc.clusters)
			}
		})
	}
}

func TestWhatIfFromTheStart(t *testing.T) {
	r := withSouth(t)
	pol := policyObject("fill", "south")
	report, err := replay.RunWhatIf(t.Context(), func() (replay.History, error) { return r.exported(), nil },
		replay.WhatIf{Policies: []map[string]any{pol.Object}, FromStart: true}, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// south registers last: with only it selected all along, nothing was placed before it came, and then
	// the 16 CPUs of it hold as many of the jobs as fit.
	var onSouth int
	for _, w := range report.Workloads {
		if w.WhatIf.Status == schemas.VerdictPlaced && !slices.Equal(w.WhatIf.Clusters, []string{"south"}) {
			t.Errorf("%s placed on %v, though only south was ever selected", w.Workload, w.WhatIf.Clusters)
		}
		if w.WhatIf.Status == schemas.VerdictPlaced {
			onSouth++
		}
	}
	if onSouth == 0 {
		t.Error("nothing placed on south")
	}
	for _, c := range report.Clusters {
		if c.Cluster == "south" && c.Resource == "cpu" && c.After <= c.Before {
			t.Errorf("south's cpu share goes from %.1f%% to %.1f%%", c.Before, c.After)
		}
	}
}

func TestWhatIfRefusesABadPolicy(t *testing.T) {
	r := busyDay(t)
	open := func() (replay.History, error) { return r.exported(), nil }
	for _, tc := range []struct {
		name string
		w    replay.WhatIf
		want string
	}{
		{"wrong kind", replay.WhatIf{Policies: []map[string]any{{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "x"}}}}, "kind"},
		{"no name", replay.WhatIf{Policies: []map[string]any{{"apiVersion": "fleetflow.io/v1alpha1", "kind": "SchedulePolicy",
			"spec": map[string]any{}}}}, "metadata.name"},
		{"refused by the placer", replay.WhatIf{Policies: []map[string]any{policyWith("bad", map[string]any{
			"orderedClusterSelector": map[string]any{"tiers": "east"}})}}, "bad"},
		{"deleting one not there", replay.WhatIf{Delete: []string{"nope"}}, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := replay.RunWhatIf(t.Context(), open, tc.w, replay.Options{})
			if err == nil {
				t.Fatal("accepted")
			}
			if !contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
		})
	}
}

func policyWith(name string, spec map[string]any) map[string]any {
	return eventtest.Policy(name, spec).Object
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
