package placer

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/schemas"
)

// A workload placed shortly before the placer restarted, whose pods its cluster has not reported yet, keeps the
// room its reservation held until the reservation would have expired had the placer not restarted: a workload
// placed after the restart does not take it. Placed longer than the TTL ago, it holds none; with its pods
// reported, they take the room and it holds none either; no longer fitting there, it stays placed there and
// holds none.
func TestRestoredWorkloadKeepsItsReservation(t *testing.T) {
	ttl := state.DefaultReservationTTL
	tests := []struct {
		name     string
		placed   time.Duration // how long before the restart web was placed
		podsRun  bool          // east reported web's 6 pods on its node
		busyCPU  string        // requested on east's node by pods of no placed workload
		otherCPU int64
		want     []string
		// reserved is whether web holds a reservation after the restart.
		reserved bool
	}{
		{name: "placed just before the restart", placed: time.Minute, otherCPU: 4, want: []string{"Apply west"}, reserved: true},
		{name: "placed longer than the TTL ago", placed: ttl + time.Minute, otherCPU: 4, want: []string{"Apply east"}},
		{name: "its pods reported", placed: time.Minute, podsRun: true, otherCPU: 2, want: []string{"Apply east"}},
		{name: "its pods reported, no room left", placed: time.Minute, podsRun: true, otherCPU: 4, want: []string{"Apply west"}},
		{name: "no longer fits where it is placed", placed: time.Minute, busyCPU: "4", otherCPU: 2, want: []string{"Apply east"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.eastThenWest()
			web := deploymentVersion("web", "1", 6, nil)
			ref := web.Ref()
			placed := &schemas.PlacementVerdict{Workload: ref, Sequence: 5, Status: schemas.VerdictPlaced, Policy: "any",
				Clusters: []string{"east"}}
			at := f.now.Add(-tt.placed)
			f.readStateAt(at,
				stateMessage{schemas.TypeWorkloadChanged, web},
				stateMessage{schemas.TypePlacementDecided, &schemas.PlacementDecided{DecisionID: "d/5/east", Workload: ref,
					Cluster: "east", Action: schemas.ActionApply, Sequence: 5, Object: web.Object, Policy: "any",
					Clusters: []string{"east"}, Verdict: placed}})
			if tt.podsRun {
				f.readStateAt(at, stateMessage{schemas.TypeNodeChanged, &schemas.NodeState{Cluster: "east", Name: "n1", Ready: true,
					Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")},
					Requested:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")},
					Pods:        6, WorkloadPods: map[string]int{ref.UID: 6},
					WorkloadRequested: map[string]corev1.ResourceList{ref.UID: {corev1.ResourceCPU: resource.MustParse("6")}}}})
			}
			if tt.busyCPU != "" {
				f.readStateAt(at, stateMessage{schemas.TypeNodeChanged, &schemas.NodeState{Cluster: "east", Name: "n1", Ready: true,
					Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")},
					Requested:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(tt.busyCPU)}, Pods: 1}})
			}
			f.restoreAndPublish()
			id := idOf(ref)
			reservations := f.p.Snapshot().ReservationsOf(id)
			if got := len(reservations) > 0; got != tt.reserved {
				t.Fatalf("web holds a reservation after the restart: %v, want %v (%+v)", got, tt.reserved, reservations)
			}
			if tt.reserved {
				if want := at.Add(ttl).UnixNano(); reservations[0].ExpiresAt != want {
					t.Errorf("reservation expires at %v, want %v: when the one made before the restart would have",
						time.Unix(0, reservations[0].ExpiresAt), time.Unix(0, want))
				}
			}
			if wl := f.p.Snapshot().Workload(id); wl.Placement == nil || !equal(wl.Placement.Clusters, []string{"east"}) {
				t.Fatalf("placement after the restart %+v, want east", wl.Placement)
			}
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))
			other := deploymentVersion("other", "1", tt.otherCPU, nil)
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(other.Ref()), other)
			if got := f.decisions(mark); !equal(got, tt.want) {
				t.Errorf("decisions for other (%d cpu) = %v, want %v", tt.otherCPU, got, tt.want)
			}
		})
	}
}

// A placer rebuilt from the streams holds again the reservation of a workload the placer before it placed, until
// the time the first one's would have expired: its Apply's storing plus the TTL, by the server's clock.
func TestRebuiltPlacerHoldsTheReservationOfARecentPlacement(t *testing.T) {
	f := newRebuildFixture(t)
	before := time.Now()
	first := f.rebuild(t, f.srv.ClientURL())
	id := idOf(f.web.Ref())
	if r := first.Snapshot().ReservationsOf(id); len(r) != 1 {
		t.Fatalf("the first placer holds %d reservations of web, want 1", len(r))
	}
	f.waitForSubject(t, schemas.DecisionSubject("east", f.web.Ref()))
	after := time.Now()

	rebuilt := f.rebuild(t, f.srv.ClientURL())
	wl := rebuilt.Snapshot().Workload(id)
	if wl.Placement == nil || !equal(wl.Placement.Clusters, []string{"east"}) {
		t.Fatalf("the rebuilt placer has web placed %+v, want on east", wl.Placement)
	}
	reservations := rebuilt.Snapshot().ReservationsOf(id)
	if len(reservations) != 1 || len(reservations[0].Nodes) != 1 || reservations[0].Nodes[0].Pods != 1 {
		t.Fatalf("the rebuilt placer holds %+v of web, want its one pod on east's node", reservations)
	}
	ttl := state.DefaultReservationTTL
	if expires := time.Unix(0, reservations[0].ExpiresAt); expires.Before(before.Add(ttl)) || expires.After(after.Add(ttl)) {
		t.Errorf("the rebuilt reservation expires at %v, want between %v and %v: a TTL after the Apply was stored",
			expires, before.Add(ttl), after.Add(ttl))
	}
}

// A workload edited past every cluster shortly before the placer restarted keeps, after the restart, the
// reservation of the copy it keeps running (the version applied, not the edit), until it would have expired had
// the placer not restarted: a workload placed after the restart does not take that room. Before, the rebuild
// kept the workload on east (Kept) with no reservation, and the next workload was placed on the room of the pods
// still coming (on a local fleet, a 1-GPU job on a cluster whose 32 GPUs a kept 4-pod job was about to take).
func TestRestoredKeptWorkloadKeepsItsReservation(t *testing.T) {
	ttl := state.DefaultReservationTTL
	tests := []struct {
		name     string
		applied  time.Duration // how long before the restart web's copy was applied to east
		invalid  bool          // the edit is one its RI cannot read, not one no cluster fits
		want     []string
		reserved bool
	}{
		{name: "applied just before the restart", applied: time.Minute, want: []string{"Apply west"}, reserved: true},
		{name: "applied longer than the TTL ago", applied: ttl + time.Minute, want: []string{"Apply east"}},
		{name: "edited so its RI cannot read it", applied: time.Minute, invalid: true, want: []string{"Apply west"}, reserved: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.eastThenWest()
			web := deploymentVersion("web", "1", 6, nil)
			ref := web.Ref()
			placed := &schemas.PlacementVerdict{Workload: ref, Sequence: 5, Status: schemas.VerdictPlaced, Policy: "any",
				Clusters: []string{"east"}}
			at := f.now.Add(-tt.applied)
			edited := deploymentVersion("web", "2", 100, nil)
			nowhere := &schemas.PlacementVerdict{Workload: ref, Sequence: 7, Status: schemas.VerdictUnschedulable, Policy: "any"}
			if tt.invalid {
				edited = deploymentVersion("web", "2", 1, func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = 1.5 })
				nowhere = &schemas.PlacementVerdict{Workload: ref, Sequence: 7, Status: schemas.VerdictInvalid, Message: "1.5"}
			}
			f.readStateAt(at,
				stateMessage{schemas.TypePlacementDecided, &schemas.PlacementDecided{DecisionID: "d/5/east", Workload: ref,
					Cluster: "east", Action: schemas.ActionApply, Sequence: 5, Object: web.Object, Policy: "any",
					Clusters: []string{"east"}, Verdict: placed}},
				stateMessage{schemas.TypeWorkloadChanged, edited},
				stateMessage{schemas.TypePlacementVerdict, nowhere})
			f.restoreAndPublish()
			id := idOf(ref)
			wl := f.p.Snapshot().Workload(id)
			if wl.Placement != nil || !equal(wl.Kept, []string{"east"}) {
				t.Fatalf("after the restart web is placed %+v, kept on %v; want placed nowhere, kept on east", wl.Placement, wl.Kept)
			}
			reservations := f.p.Snapshot().ReservationsOf(id)
			if got := len(reservations) > 0; got != tt.reserved {
				t.Fatalf("web holds a reservation after the restart: %v, want %v (%+v)", got, tt.reserved, reservations)
			}
			if tt.reserved {
				if want := at.Add(ttl).UnixNano(); reservations[0].ExpiresAt != want {
					t.Errorf("reservation expires at %v, want %v: when the one made before the restart would have",
						time.Unix(0, reservations[0].ExpiresAt), time.Unix(0, want))
				}
				if pods := reservations[0].Nodes[0].Pods; pods != 6 {
					t.Errorf("reservation holds %d pods, want the 6 of the version applied", pods)
				}
			}
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))
			other := deploymentVersion("other", "1", 4, nil)
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(other.Ref()), other)
			if got := f.decisions(mark); !equal(got, tt.want) {
				t.Errorf("decisions for other (4 cpu) = %v, want %v", got, tt.want)
			}
		})
	}
}

// A copy deleted in its cluster while its workload is Invalid is no longer said to keep running after a restart
// either: the rebuilt placer keeps the workload placed nowhere (Kept), and the copy's going sends its Invalid
// verdict again without that. Before, only a Placed or Unschedulable verdict was sent again, and the Invalid one
// went on saying the copy kept running the version applied before.
func TestRestoredInvalidWorkloadsCopyGoneIsNotSaidToRun(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.eastThenWest()
	web := deploymentVersion("web", "1", 1, nil)
	ref := web.Ref()
	placed := &schemas.PlacementVerdict{Workload: ref, Sequence: 5, Status: schemas.VerdictPlaced, Policy: "any",
		Clusters: []string{"east"}}
	broken := deploymentVersion("web", "2", 1, func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = 1.5 })
	invalid := &schemas.PlacementVerdict{Workload: ref, Sequence: 7, Status: schemas.VerdictInvalid,
		Message: "1.5 is not a whole replica count; the copy on east keeps running the version applied before"}
	f.readState(
		stateMessage{schemas.TypePlacementDecided, &schemas.PlacementDecided{DecisionID: "d/5/east", Workload: ref,
			Cluster: "east", Action: schemas.ActionApply, Sequence: 5, Object: web.Object, Policy: "any",
			Clusters: []string{"east"}, Verdict: placed}},
		stateMessage{schemas.TypeWorkloadChanged, broken},
		stateMessage{schemas.TypePlacementVerdict, invalid})
	mark := f.restoreAndPublish()
	gone := &schemas.WorkloadStatus{Workload: ref, Cluster: "east", Gone: true}
	f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", ref), gone)
	if got := f.decisions(mark); len(got) != 0 {
		t.Fatalf("decisions while the workload is Invalid = %v, want none", got)
	}
	if v := f.lastVerdictSent(); v.Status != schemas.VerdictInvalid || strings.Contains(v.Message, "keeps running") {
		t.Errorf("verdict once the copy is gone: %s %q, want Invalid not saying it keeps running", v.Status, v.Message)
	}
}
