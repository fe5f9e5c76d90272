package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/placement/structs"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
)

// history builds a sequence of events as the streams would record them, one second apart unless every says.
type history struct {
	events []Event
	at     time.Time
	step   time.Duration
}

func newHistory() *history {
	return &history{at: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
}

func (h *history) add(eventType, subject string, payload schemas.Payload) *history {
	step := h.step
	if step == 0 {
		step = time.Second
	}
	h.at = h.at.Add(step)
	h.events = append(h.events, Event{Subject: subject, Sequence: uint64(len(h.events) + 1), Type: eventType, Payload: payload,
		Time: h.at, Stored: h.at})
	return h
}

// cluster records a Ready cluster, labelled name=<name>, with one node of cpus CPUs that serves Deployments.
func (h *history) cluster(name, cpus string) *history {
	h.add(schemas.TypeClusterChanged, schemas.ClusterSpecSubject(name), eventtest.Cluster(name, map[string]any{"name": name}))
	h.add(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject(name), &schemas.ClusterHeartbeat{Cluster: name, Time: h.at})
	h.add(schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject(name), &schemas.ClusterAPIs{Cluster: name, APIs: []string{"apps/v1/Deployment"}})
	return h.add(schemas.TypeNodeChanged, schemas.NodeSubject(name, "n1"), eventtest.Node(name, "n1", cpus))
}

// policy records a policy that fills the clusters in the order named.
func (h *history) policy(name string, clusters ...string) *history {
	p := eventtest.Policy(name, eventtest.FillInOrder(clusters...))
	return h.add(schemas.TypePolicyChanged, schemas.PolicySubject(p.Ref()), p)
}

func (h *history) workload(w *schemas.ObjectChanged) *history {
	return h.add(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(w.Ref()), w)
}

// every records the next events d apart.
func (h *history) every(d time.Duration) *history {
	h.step = d
	return h
}

func (h *history) tick() *history {
	return h.add(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: h.at})
}

func newController(t testing.TB) *Controller {
	t.Helper()
	builtins, err := karta.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(karta.NewRegistry(builtins...), Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	c.SetEpoch("test")
	return c
}

// run hands events to c, committing each, and returns the effects, encoded.
func run(t testing.TB, c *Controller, events []Event) []string {
	t.Helper()
	var out []string
	for _, ev := range events {
		effects, err := c.Handle(ev)
		if err != nil {
			t.Fatalf("%s #%d: %v", ev.Subject, ev.Sequence, err)
		}
		for _, e := range effects {
			data, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(data))
		}
		c.Commit()
	}
	return out
}

// actions lists the decisions among effects as "Action cluster".
func actions(t *testing.T, effects []string) []string {
	t.Helper()
	var out []string
	for _, data := range effects {
		var e struct {
			Type    string
			Payload json.RawMessage
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatal(err)
		}
		if e.Type != schemas.TypePlacementDecided {
			continue
		}
		var d schemas.PlacementDecided
		if err := json.Unmarshal(e.Payload, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s", d.Action, d.Cluster))
	}
	return out
}

// The same events in the same order give the same effects, byte for byte, through two controllers: web and api
// placed on east, both failed over to west when east falls silent (the tick), then a policy change that keeps
// them there and api's deletion.
func TestSameEventsGiveTheSameEffects(t *testing.T) {
	h := newHistory().policy("any", "east", "west").cluster("east", "8").cluster("west", "8")
	web, api := eventtest.Deployment("web", "1"), eventtest.Deployment("api", "2")
	h.workload(web).workload(api)
	placed := len(h.events)
	h.at = h.at.Add(time.Minute)
	h.add(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("west"), &schemas.ClusterHeartbeat{Cluster: "west", Time: h.at})
	h.tick()
	failedOver := len(h.events)
	h.policy("any", "west")
	h.add(schemas.TypeWorkloadDeleted, schemas.WorkloadSubject(api.Ref()), &schemas.ObjectDeleted{Workload: api.Ref()})

	first, second := newController(t), newController(t)
	var runs [2][]string
	for i, bounds := range [][2]int{{0, placed}, {placed, failedOver}, {failedOver, len(h.events)}} {
		a, b := run(t, first, h.events[bounds[0]:bounds[1]]), run(t, second, h.events[bounds[0]:bounds[1]])
		runs[0], runs[1] = append(runs[0], a...), append(runs[1], b...)
		want := [][]string{{"Apply east", "Apply east"}, {"Apply west", "Delete east", "Apply west", "Delete east"}, {"Delete west"}}[i]
		if got := actions(t, a); !slices.Equal(got, want) {
			t.Errorf("decisions of events %d to %d = %v, want %v", bounds[0], bounds[1], got, want)
		}
	}
	if !slices.Equal(runs[0], runs[1]) {
		t.Fatalf("two runs of the same events differ:\n%v\n%v", runs[0], runs[1])
	}
}

// Abort discards what the aborted events wrote of the ledger, so their redelivery has the same effects again
// under the same ids; Commit makes them final, so a redelivery then has none. Each case aborts a batch whose
// events' effects hinge on a change the fleet view keeps (a placement, a namespace's labels, a cluster back).
func TestAbortedEventsHaveTheirEffectsAgainOnRedelivery(t *testing.T) {
	web := eventtest.Deployment("web", "1")
	namespace := func(labels map[string]any) *schemas.ObjectChanged {
		return eventtest.Object("v1", "Namespace", "", "team", labels, nil)
	}
	placed := func() *history {
		return newHistory().policy("any", "east").cluster("east", "8").
			add(schemas.TypeNamespaceChanged, schemas.NamespaceSubject("team"), namespace(nil)).workload(web)
	}
	tests := []struct {
		name string
		// history holds the events run and committed, then the batch (the last batch events) that is aborted.
		history     *history
		batch       int
		wantActions []string
	}{
		{"placed", placed(), 1, []string{"Apply east"}},
		{"placed and confirmed in one batch", placed().add(schemas.TypePlacementApplied, schemas.PlacementSubject("east", web.Ref()),
			&schemas.PlacementApplied{Cluster: "east", Workload: web.Ref(), Action: schemas.ActionApply,
				Sequence: uint64(len(placed().events))}), 2, []string{"Apply east"}},
		{"its namespace relabelled", placed().add(schemas.TypeNamespaceChanged, schemas.NamespaceSubject("team"),
			namespace(map[string]any{"pod-security.kubernetes.io/enforce": "restricted"})), 1, []string{"Apply east"}},
		{"deleted", placed().add(schemas.TypeWorkloadDeleted, schemas.WorkloadSubject(web.Ref()),
			&schemas.ObjectDeleted{Workload: web.Ref()}), 1, []string{"Delete east"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newController(t)
			events := tt.history.events
			setup, batch := events[:len(events)-tt.batch], events[len(events)-tt.batch:]
			run(t, c, setup)

			var aborted []string
			for _, ev := range batch {
				effects, err := c.Handle(ev)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range effects {
					aborted = append(aborted, mustJSON(t, e))
				}
			}
			c.Abort()
			if got := actions(t, aborted); !slices.Equal(got, tt.wantActions) {
				t.Fatalf("decisions of the batch = %v, want %v", got, tt.wantActions)
			}
			if c.AwaitingRedelivery() != len(batch) {
				t.Errorf("events awaiting redelivery after an abort = %d, want %d", c.AwaitingRedelivery(), len(batch))
			}
			if again := run(t, c, batch); !slices.Equal(again, aborted) {
				t.Errorf("effects on redelivery:\n%v\nwant the aborted ones:\n%v", again, aborted)
			}
			if c.AwaitingRedelivery() != 0 {
				t.Errorf("events awaiting redelivery after it = %d, want 0", c.AwaitingRedelivery())
			}
			if more := run(t, c, batch); len(more) != 0 {
				t.Errorf("effects of committed events handled again = %v, want none", more)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// When the one write that stores a workload and its plan fails, the workload is stored and placed apart, once:
// the effects are what one write would have had.
func TestPlacesApartWhenTheOneWriteFails(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cpu         string
		wantActions []string
		wantVerdict schemas.VerdictStatus
	}{
		{name: "fits", cpu: "1", wantActions: []string{"Apply east"}, wantVerdict: schemas.VerdictPlaced},
		{name: "fits nowhere", cpu: "100", wantVerdict: schemas.VerdictUnschedulable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory().policy("any", "east").cluster("east", "8")
			c := newController(t)
			run(t, c, h.events)
			attempts := 0
			c.upsertAndPlan = func(uint64, time.Time, structs.WorkloadInfo, func(*state.Snapshot) (*structs.Plan, error)) (*structs.Plan, error) {
				attempts++
				return nil, errors.New("injected: the one write failed")
			}
			web := eventtest.Deployment("web", tc.cpu)
			h.events = nil
			effects := run(t, c, h.workload(web).events)
			if attempts != 1 {
				t.Fatalf("the one write was tried %d times, want 1", attempts)
			}
			if got := actions(t, effects); !slices.Equal(got, tc.wantActions) {
				t.Errorf("decisions = %v, want %v", got, tc.wantActions)
			}
			var verdicts []schemas.VerdictStatus
			for _, data := range effects {
				var e struct {
					Type    string
					Payload struct {
						Status  schemas.VerdictStatus
						Verdict *schemas.PlacementVerdict
					}
				}
				if err := json.Unmarshal([]byte(data), &e); err != nil {
					t.Fatal(err)
				}
				switch {
				case e.Type == schemas.TypePlacementVerdict:
					verdicts = append(verdicts, e.Payload.Status)
				case e.Payload.Verdict != nil:
					verdicts = append(verdicts, e.Payload.Verdict.Status)
				}
			}
			if !slices.Equal(verdicts, []schemas.VerdictStatus{tc.wantVerdict}) {
				t.Errorf("verdicts = %v, want [%s]", verdicts, tc.wantVerdict)
			}
			ref := web.Ref()
			if wl := c.Snapshot().Workload(structs.WorkloadID(ref.APIVersion, ref.Kind, ref.Namespace, ref.Name)); wl == nil {
				t.Error("the fleet view does not hold the workload")
			}
		})
	}
}

// asStored is e's payload as a stream gives it back: encoded, then decoded.
func asStored(t *testing.T, e Effect) schemas.Payload {
	t.Helper()
	data, err := schemas.MarshalData(e.Type, e.Payload)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := schemas.DecodeData(e.Type, data)
	if err != nil {
		t.Fatal(err)
	}
	return payload
}

// noHistory is a History that holds nothing older than what the rebuild read.
type noHistory struct{}

func (noHistory) Events(string, func(schemas.Payload)) error { return nil }

// A controller rebuilt from the newest event of every subject (what the state stream keeps) of a running one's
// inputs and effects puts every workload back where the running one placed it, and decides nothing new.
func TestRebuiltControllerAgreesWithTheRunningOne(t *testing.T) {
	h := newHistory().policy("any", "east", "west").cluster("east", "4").cluster("west", "8")
	for i := range 6 {
		h.workload(eventtest.Deployment(fmt.Sprintf("job-%d", i), "1"))
	}
	running := newController(t)
	// The state stream: the newest event per subject, inputs and effects alike, in the order they were stored.
	type stored struct {
		order int
		ev    Event
	}
	newest := map[string]stored{}
	order, decisionSeq := 0, uint64(0)
	keep := func(ev Event) {
		order++
		newest[ev.Subject] = stored{order: order, ev: ev}
	}
	for _, ev := range h.events {
		effects, err := running.Handle(ev)
		if err != nil {
			t.Fatal(err)
		}
		keep(ev)
		for _, e := range effects {
			out := Event{Subject: e.Subject, Sequence: ev.Sequence, Type: e.Type, Payload: asStored(t, e), Time: ev.Time, Stored: ev.Stored}
			if schemas.IsDecision(e.Subject) {
				decisionSeq++
				out.Sequence = decisionSeq
			}
			keep(out)
		}
		running.Commit()
	}
	var state []stored
	for _, s := range newest {
		state = append(state, s)
	}
	slices.SortFunc(state, func(a, b stored) int { return a.order - b.order })

	rebuilt := newController(t)
	rebuilt.BeginRebuild(h.at)
	for _, s := range state {
		if err := rebuilt.Restore(s.ev); err != nil {
			t.Fatal(err)
		}
	}
	rebuilt.AdvanceSequence(h.events[len(h.events)-1].Sequence)
	effects, err := rebuilt.FinishRebuild(h.at, noHistory{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range effects {
		if e.Type == schemas.TypePlacementDecided {
			t.Errorf("the rebuilt controller decided %s anew", e.ID)
		}
	}
	rebuilt.Commit()
	placed := 0
	for _, want := range running.Snapshot().Workloads() {
		got := rebuilt.Snapshot().Workload(want.ID)
		if got == nil || (got.Placement == nil) != (want.Placement == nil) ||
			(want.Placement != nil && !slices.Equal(got.Placement.Clusters, want.Placement.Clusters)) {
			t.Errorf("%s rebuilt as %+v, want %+v", want.ID, got, want.Placement)
		}
		if want.Placement != nil {
			placed++
		}
	}
	if placed != 6 {
		t.Errorf("%d of 6 workloads placed by the running controller, want all: the test fleet holds them", placed)
	}
}
