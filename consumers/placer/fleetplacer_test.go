package placer

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/observe"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/lifecycle"
	"github.com/fleetflow/fleetflow/placement/objects"
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/structs"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
)

// placerFixture drives a Placer with deliveries built in memory and records what it publishes.
type placerFixture struct {
	t   *testing.T
	p   *Placer
	pub *asyncRecorder
	seq uint64
	now time.Time
}

func newPlacerFixture(t *testing.T, config PlacerConfig) *placerFixture {
	t.Helper()
	return newLoggedPlacerFixture(t, config, io.Discard)
}

// newLoggedPlacerFixture is newPlacerFixture with the placer logging to logs.
func newLoggedPlacerFixture(t *testing.T, config PlacerConfig, logs io.Writer) *placerFixture {
	t.Helper()
	builtins, err := karta.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	pub := &asyncRecorder{refuse: map[string]bool{}}
	p, err := NewPlacer(pub, karta.NewRegistry(builtins...), config, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return &placerFixture{t: t, p: p, pub: pub, now: time.Now()}
}

func (f *placerFixture) deliver(eventType, subject string, payload schemas.Payload) {
	f.t.Helper()
	f.seq++
	if err := f.p.Handle(f.t.Context(), delivery(f.t, f.seq, eventType, subject, payload)); err != nil {
		f.t.Fatalf("%s: %v", subject, err)
	}
}

// object builds a control-plane object's payload (see eventtest.Object).
var object = eventtest.Object

// cluster registers a Ready cluster with one 8-CPU node that serves Deployments.
func (f *placerFixture) cluster(name string, labels map[string]any) {
	f.t.Helper()
	f.deliver(schemas.TypeClusterChanged, schemas.ClusterSpecSubject(name), eventtest.Cluster(name, labels))
	f.heartbeat(name, f.now)
	f.deliver(schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject(name), &schemas.ClusterAPIs{Cluster: name, APIs: []string{"apps/v1/Deployment"}})
	f.deliver(schemas.TypeNodeChanged, schemas.NodeSubject(name, "n1"), eventtest.Node(name, "n1", "8"))
}

// eastThenWest registers clusters east and west (labelled name=east and name=west) and a policy "any" that
// fills east before west.
func (f *placerFixture) eastThenWest() {
	f.t.Helper()
	f.eastThenWestWith(nil)
	f.cluster("west", map[string]any{"name": "west"})
}

// eastThenWestWith registers the policy "any" of eastThenWest, with the extra fields of its spec, and the
// cluster east only.
func (f *placerFixture) eastThenWestWith(extra map[string]any) {
	f.t.Helper()
	spec := eventtest.FillInOrder("east", "west")
	maps.Copy(spec, extra)
	f.policy("any", spec)
	f.cluster("east", map[string]any{"name": "east"})
}

// westAloneBeatsAt has west beat at, and a tick come then, as when east went silent; it returns the decisions
// published since mark.
func (f *placerFixture) westAloneBeatsAt(at time.Time, mark int) []string {
	f.t.Helper()
	f.heartbeat("west", at)
	f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: at})
	return f.decisions(mark)
}

// deliverStored delivers an event its stream stored at stored, by the server's clock.
func (f *placerFixture) deliverStored(eventType, subject string, payload schemas.Payload, stored time.Time) {
	f.t.Helper()
	f.seq++
	d := delivery(f.t, f.seq, eventType, subject, payload)
	d.Stored = stored
	if err := f.p.Handle(f.t.Context(), d); err != nil {
		f.t.Fatalf("%s: %v", subject, err)
	}
}

func (f *placerFixture) heartbeat(cluster string, at time.Time) {
	f.deliver(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject(cluster), &schemas.ClusterHeartbeat{Cluster: cluster, Time: at})
}

func (f *placerFixture) policy(name string, spec map[string]any) {
	pol := eventtest.Policy(name, spec)
	f.deliver(schemas.TypePolicyChanged, schemas.PolicySubject(pol.Ref()), pol)
}

// placedWebOnEast places the Deployment web on east (of eastThenWest), confirmed by east's applier, and
// returns it with the count of decisions published so far.
func (f *placerFixture) placedWebOnEast() (*schemas.ObjectChanged, int) {
	f.t.Helper()
	web := deployment("web")
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
	f.confirm("east", web)
	return web, len(f.pub.ofType(schemas.TypePlacementDecided))
}

// deployment asks for one pod of 1 CPU, which an 8-CPU cluster fits.
func deployment(name string) *schemas.ObjectChanged { return eventtest.Deployment(name, "1") }

// firstContainer is the first container of a Deployment object's pod template, for a test to change.
func firstContainer(deployment map[string]any) map[string]any {
	spec := deployment["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	return spec["containers"].([]any)[0].(map[string]any)
}

// decisions lists the decisions published since mark as "Action cluster".
func (f *placerFixture) decisions(mark int) []string {
	var out []string
	for _, s := range f.pub.ofType(schemas.TypePlacementDecided)[mark:] {
		parts := splitDecisionID(s.id)
		out = append(out, parts[0]+" "+parts[1])
	}
	return out
}

// splitDecisionID reads "<uid>/<seq>/<action>/<cluster>" into action and cluster.
func splitDecisionID(id string) [2]string {
	var fields []string
	start := 0
	for i := 0; i < len(id); i++ {
		if id[i] == '/' {
			fields = append(fields, id[start:i])
			start = i + 1
		}
	}
	fields = append(fields, id[start:])
	return [2]string{fields[len(fields)-2], fields[len(fields)-1]}
}

// lastVerdictSent is the last verdict published as an event of its own; the test fails when there is none.
func (f *placerFixture) lastVerdictSent() *schemas.PlacementVerdict {
	f.t.Helper()
	return f.lastSent(schemas.TypePlacementVerdict).(*schemas.PlacementVerdict)
}

// lastSent is the payload of the last event of eventType published; the test fails when there is none.
func (f *placerFixture) lastSent(eventType string) schemas.Payload {
	f.t.Helper()
	all := f.pub.ofType(eventType)
	if len(all) == 0 {
		f.t.Fatalf("no %s published", eventType)
	}
	return all[len(all)-1].payload(f.t)
}

func (f *placerFixture) confirm(cluster string, w *schemas.ObjectChanged) {
	f.t.Helper()
	ref := w.Ref()
	f.deliver(schemas.TypePlacementApplied, schemas.PlacementSubject(cluster, ref), &schemas.PlacementApplied{
		DecisionID: "d", Workload: ref, Cluster: cluster, Action: schemas.ActionApply, Sequence: f.seq})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestClusterLabelChangeMovesAfterTheNewClusterConfirms: a cluster that stops matching the policy's
// selector loses its workload, which is applied to the matching cluster first; the delete on the old
// cluster waits until the new cluster's applier confirmed the apply.
func TestClusterLabelChangeMovesAfterTheNewClusterConfirms(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.policy("gpu", map[string]any{"clusterSelector": map[string]any{"matchLabels": map[string]any{"pool": "main"}}})
	f.cluster("east", map[string]any{"pool": "main"})
	f.cluster("west", map[string]any{"pool": "spare"})
	web := deployment("web")
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
	if got := f.decisions(0); !equal(got, []string{"Apply east"}) {
		t.Fatalf("first decisions = %v, want [Apply east]", got)
	}
	f.confirm("east", web)

	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	f.cluster("east", map[string]any{"pool": "spare"})
	f.cluster("west", map[string]any{"pool": "main"})
	if got := f.decisions(mark); !equal(got, []string{"Apply west"}) {
		t.Fatalf("decisions on the label change = %v, want only [Apply west] until west confirms", got)
	}
	f.confirm("west", web)
	if got := f.decisions(mark); !equal(got, []string{"Apply west", "Delete east"}) {
		t.Fatalf("decisions after west confirmed = %v, want [Apply west Delete east]", got)
	}
}

// TestSilentClusterFailsOverOnTick: when a cluster's heartbeats stop for longer than the timeout, the
// next tick marks it NotReady and its workload moves; the old cluster is told to delete at once, since
// waiting for a dead cluster would leave the workload nowhere.
func TestSilentClusterFailsOverOnTick(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{HeartbeatTimeout: 10 * time.Second})
	f.eastThenWest()
	_, mark := f.placedWebOnEast()
	if got := f.westAloneBeatsAt(f.now.Add(15*time.Second), mark); !equal(got, []string{"Apply west", "Delete east"}) {
		t.Fatalf("decisions after east went silent = %v, want [Apply west Delete east]", got)
	}
	verdicts := f.pub.verdicts(t)
	if len(verdicts) < 2 || !equal(verdicts[len(verdicts)-1].Clusters, []string{"west"}) {
		t.Fatalf("verdicts = %+v, want a last one placing the workload on west", verdicts)
	}
	// The reason says since when east has been silent, in words that stay the same at the next ticks.
	reason := verdicts[len(verdicts)-1].Reasons["east"]
	if !strings.HasPrefix(reason, "is not Ready: its producer has sent no heartbeat since ") || !strings.HasSuffix(reason, "(timeout 10s)") {
		t.Errorf("reason for east = %q, want it to say since when it sent no heartbeat, and the timeout", reason)
	}
	// The fleet as /metrics counts it: west Ready, east not, the workload placed.
	stats := f.p.FleetStats()
	if got, want := (observe.FleetStats{Placed: stats.Placed, Unplaced: stats.Unplaced, Ready: stats.Ready, NotReady: stats.NotReady}),
		(observe.FleetStats{Placed: 1, Ready: 1, NotReady: 1}); !reflect.DeepEqual(got, want) {
		t.Errorf("fleet counts = %+v, want %+v", got, want)
	}
	if len(stats.UnplacedByReason) != 0 {
		t.Errorf("unplaced by reason = %v, want none: the workload is placed", stats.UnplacedByReason)
	}
}

// TestHeartbeatFromAClockRunningAheadCountsAsOfItsStoring: a heartbeat stamped later than the stream stored it
// (its producer's clock runs ahead) counts as of its storing, so the cluster still fails over once silent.
// Taken at its word, it would keep the cluster Ready for as long as the clock is ahead.
func TestHeartbeatFromAClockRunningAheadCountsAsOfItsStoring(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{HeartbeatTimeout: 10 * time.Second})
	f.eastThenWest()
	_, mark := f.placedWebOnEast()
	f.deliverStored(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"),
		&schemas.ClusterHeartbeat{Cluster: "east", Time: f.now.Add(time.Hour)}, f.now.Add(time.Second))
	if got := f.westAloneBeatsAt(f.now.Add(15*time.Second), mark); !equal(got, []string{"Apply west", "Delete east"}) {
		t.Fatalf("decisions once east was silent for 14 s = %v, want [Apply west Delete east]", got)
	}
}

// TestClocksApartKeepClustersReady: heartbeats and ticks are taken as of their storing, by the streams' server's
// clock, so clusters that beat on time stay Ready whichever of the server's, the producers' or the placer's
// clocks runs apart. Taken by two clocks, every cluster would turn NotReady at the placer's ticks, and its
// workloads fail over.
func TestClocksApartKeepClustersReady(t *testing.T) {
	tests := []struct {
		name                       string
		producerClock, serverClock time.Duration // offsets from the placer's clock
	}{
		{"the server's clock behind", 0, -time.Minute},
		{"the producers' clock behind", -time.Minute, 0},
		{"the producers' clock ahead", time.Minute, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{HeartbeatTimeout: 10 * time.Second})
			f.eastThenWest()
			f.placedWebOnEast()
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))
			for i := 1; i <= 15; i++ {
				at := f.now.Add(time.Duration(2*i) * time.Second)
				for _, c := range []string{"east", "west"} {
					f.deliverStored(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject(c),
						&schemas.ClusterHeartbeat{Cluster: c, Time: at.Add(tt.producerClock)}, at.Add(tt.serverClock))
				}
				f.deliverStored(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: at}, at.Add(tt.serverClock))
			}
			if got := f.decisions(mark); len(got) != 0 {
				t.Errorf("decisions while both clusters beat on time = %v, want none", got)
			}
			for _, c := range []string{"east", "west"} {
				if !clusterReady(f.p, c) {
					t.Errorf("cluster %s NotReady though it beat every 2 s", c)
				}
			}
		})
	}
}

// TestRedeliveredEventDecidesNothingNew: the same event delivered again (same stream sequence) changes
// nothing and publishes nothing.
func TestRedeliveredEventDecidesNothingNew(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.policy("any", map[string]any{})
	f.cluster("east", nil)
	web := deployment("web")
	d := delivery(t, 100, schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
	for attempt := range 2 {
		d.Attempt = uint64(attempt + 1)
		if err := f.p.Handle(t.Context(), d); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.decisions(0); !equal(got, []string{"Apply east"}) {
		t.Fatalf("decisions = %v, want one Apply for two deliveries", got)
	}
}

// TestPlacedVerdictsRideWithTheirApply: a Placed verdict rides with the Apply that carries it out instead of
// being an event of its own; a verdict with no Apply to ride with is one: an Unschedulable verdict, or a
// Placed one for a workload that stays on the cluster that already runs it. All carry the epoch of the
// placer's streams and the sequence of the event that caused them, as decisions do, so the status writer can
// tell an older verdict from a newer one as appliers tell decisions apart.
func TestPlacedVerdictsRideWithTheirApply(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.p.SetEpoch("epoch-7")
	f.policy("any", map[string]any{})
	f.cluster("east", nil)
	f.cluster("west", nil)
	web := deployment("web")
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
	// A new version asks for more than any cluster has: a second verdict, Unschedulable.
	grown := deployment("web")
	grown.Object["metadata"].(map[string]any)["resourceVersion"] = "2"
	firstContainer(grown.Object)["resources"] = map[string]any{"requests": map[string]any{"cpu": "100"}}
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(grown.Ref()), grown)
	// Shrunk back, it fits on east again, which still runs the first version (an unschedulable workload keeps
	// running where it is): a new Placed verdict, and nothing new to apply.
	shrunk := deployment("web")
	shrunk.Object["metadata"].(map[string]any)["resourceVersion"] = "3"
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(shrunk.Ref()), shrunk)

	decisions := f.pub.ofType(schemas.TypePlacementDecided)
	if len(decisions) != 1 {
		t.Fatalf("decisions = %+v, want one Apply", decisions)
	}
	apply := decisions[0].payload(t).(*schemas.PlacementDecided)
	placed := apply.Verdict
	if placed == nil || placed.Status != schemas.VerdictPlaced || placed.Epoch != "epoch-7" || placed.Sequence != apply.Sequence ||
		apply.Epoch != "epoch-7" {
		t.Fatalf("the Apply at %q/%d carries verdict %+v, want the Placed verdict at epoch-7 and the Apply's sequence",
			apply.Epoch, apply.Sequence, placed)
	}
	var standalone []*schemas.PlacementVerdict
	for _, s := range f.pub.ofType(schemas.TypePlacementVerdict) {
		standalone = append(standalone, s.payload(t).(*schemas.PlacementVerdict))
	}
	if len(standalone) != 2 || standalone[0].Status != schemas.VerdictUnschedulable || standalone[1].Status != schemas.VerdictPlaced ||
		!equal(standalone[1].Clusters, []string{apply.Cluster}) {
		t.Fatalf("verdicts sent on their own = %+v, want the Unschedulable one, then a Placed one on %s", standalone, apply.Cluster)
	}
	previous := placed
	for _, v := range standalone {
		if v.Epoch != "epoch-7" || v.Sequence <= previous.Sequence {
			t.Errorf("%s verdict at %q/%d after one at %q/%d; want the same epoch and a greater sequence",
				v.Status, v.Epoch, v.Sequence, previous.Epoch, previous.Sequence)
		}
		previous = v
	}
}

// TestDuplicateCopiesSurviveAFlapAndReachNewClusters: a Duplicate copy is not withdrawn from a cluster that
// went silent (nothing to fail over to, and a withdrawn CRD would take every object of its kind with it), no
// decision is sent when the cluster beats again, and a cluster that joins later gets its copy.
func TestDuplicateCopiesSurviveAFlapAndReachNewClusters(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{HeartbeatTimeout: 10 * time.Second})
	f.policy("everywhere", map[string]any{"spreadConstraints": map[string]any{"spreadMode": "Duplicate"}})
	f.cluster("east", nil)
	f.cluster("west", nil)
	web := deployment("web")
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
	if got := f.decisions(0); !equal(got, []string{"Apply east", "Apply west"}) {
		t.Fatalf("decisions = %v, want a copy on each cluster", got)
	}
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))

	silent := f.now.Add(15 * time.Second)
	f.heartbeat("west", silent)
	f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: silent})
	if got := f.decisions(mark); len(got) != 0 {
		t.Fatalf("decisions after east went silent = %v, want none", got)
	}
	back := silent.Add(time.Second)
	f.heartbeat("east", back)
	f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: back})
	if got := f.decisions(mark); len(got) != 0 {
		t.Fatalf("decisions after east came back = %v, want none", got)
	}

	f.now = back
	f.cluster("north", nil)
	if got := f.decisions(mark); !equal(got, []string{"Apply north"}) {
		t.Fatalf("decisions after north joined = %v, want [Apply north]", got)
	}
}

// TestRestoreKeepsWorkloadsOffAvoidedClusters: a placer restarted after moving a workload off a cluster
// (its pods stayed Pending there) reads that from the workload's last verdict, so when the workload's new
// cluster stops qualifying it is not sent back where it could not run.
func TestRestoreKeepsWorkloadsOffAvoidedClusters(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.eastThenWest()

	// What Rebuild reads from the state stream: the workload, its last verdict, and its Apply to west, where its
	// copy runs.
	web := deployment("web")
	id := idOf(web.Ref())
	why := "its pods stayed Pending there for more than 5m0s"
	f.readState(stateMessage{schemas.TypeWorkloadChanged, web},
		stateMessage{schemas.TypePlacementVerdict, &schemas.PlacementVerdict{Workload: web.Ref(), Sequence: f.seq + 1,
			Status: schemas.VerdictPlaced, Policy: "any", Clusters: []string{"west"}, Reasons: map[string]string{"east": why},
			ReasonCodes: map[string]string{"east": string(structs.RejectAvoided)}}},
		stateMessage{schemas.TypePlacementDecided, &schemas.PlacementDecided{DecisionID: "d/west", Workload: web.Ref(),
			Cluster: "west", Action: schemas.ActionApply, Sequence: f.seq + 1, Object: web.Object, Policy: "any",
			Clusters: []string{"west"}}})
	f.restoreAndPublish()
	wl := f.p.Snapshot().Workload(id)
	if wl.Placement == nil || !equal(wl.Placement.Clusters, []string{"west"}) || wl.Avoid["east"] != why {
		t.Fatalf("restored placement %+v avoid %v, want west, avoiding east because %q", wl.Placement, wl.Avoid, why)
	}

	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	f.cluster("west", map[string]any{"name": "retired"})
	if got := f.decisions(mark); len(got) != 0 {
		t.Fatalf("decisions once west stopped qualifying = %v, want none: east is avoided, so the workload stays", got)
	}
}

// TestRestoreFindsWhereAWorkloadRuns: a restarted placer puts a workload back where it ran, whether its
// last verdict is an event of its own or rode with an Apply, and also when a later Apply to the same cluster
// (a new version, with the same verdict) took that Apply's place in the state stream; a move in progress is
// restored to its new cluster.
func TestRestoreFindsWhereAWorkloadRuns(t *testing.T) {
	web := deployment("web")
	why := "its pods stayed Pending there for more than 5m0s"
	verdict := func(seq uint64, status schemas.VerdictStatus, clusters ...string) *schemas.PlacementVerdict {
		return &schemas.PlacementVerdict{Workload: web.Ref(), Sequence: seq, Status: status, Policy: "any", Clusters: clusters}
	}
	apply := func(seq uint64, cluster string, v *schemas.PlacementVerdict, avoid map[string]string) *schemas.PlacementDecided {
		return &schemas.PlacementDecided{DecisionID: fmt.Sprintf("d/%d/%s", seq, cluster), Workload: web.Ref(), Cluster: cluster,
			Action: schemas.ActionApply, Sequence: seq, Object: web.Object, Policy: "any", Clusters: []string{cluster},
			Avoid: avoid, Verdict: v}
	}
	cases := []struct {
		name      string
		state     []stateMessage
		wantOn    string
		wantAvoid map[string]string
	}{
		{"a verdict of its own", []stateMessage{
			{schemas.TypePlacementVerdict, verdict(5, schemas.VerdictPlaced, "west")},
			{schemas.TypePlacementDecided, apply(5, "west", nil, nil)},
		}, "west", nil},
		{"a verdict carried by its Apply", []stateMessage{
			{schemas.TypePlacementDecided, apply(5, "west", verdict(5, schemas.VerdictPlaced, "west"), nil)},
		}, "west", nil},
		{"the carrying Apply replaced by a later one", []stateMessage{
			{schemas.TypePlacementVerdict, verdict(3, schemas.VerdictUnschedulable)},
			{schemas.TypePlacementDecided, apply(9, "west", nil, map[string]string{"east": why})},
		}, "west", map[string]string{"east": why}},
		{"a move in progress", []stateMessage{
			{schemas.TypePlacementDecided, apply(9, "west", verdict(9, schemas.VerdictPlaced, "west"), nil)},
			{schemas.TypePlacementDecided, apply(5, "east", nil, nil)},
		}, "west", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.eastThenWest()
			f.readState(append([]stateMessage{{schemas.TypeWorkloadChanged, web}}, tc.state...)...)
			f.restoreAndPublish()
			wl := f.p.Snapshot().Workload(idOf(web.Ref()))
			if wl.Placement == nil || !equal(wl.Placement.Clusters, []string{tc.wantOn}) || !maps.Equal(wl.Avoid, tc.wantAvoid) {
				t.Errorf("restored placement %+v avoiding %v, want %s avoiding %v", wl.Placement, wl.Avoid, tc.wantOn, tc.wantAvoid)
			}
		})
	}
}

// TestPendingPodsMoveOnlyPastTheTimeout: a tick moves a workload whose pods have pended on its cluster for
// longer than PendingTimeout, and leaves it alone while they pend for less, or once they stopped pending.
func TestPendingPodsMoveOnlyPastTheTimeout(t *testing.T) {
	tests := []struct {
		name         string
		pendingFor   time.Duration
		thenResolved bool
		want         []string
	}{
		{name: "past the timeout: moves", pendingFor: 2 * time.Minute, want: []string{"Apply west"}},
		{name: "within the timeout: stays", pendingFor: 30 * time.Second},
		{name: "pods scheduled since: stays", pendingFor: 2 * time.Minute, thenResolved: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{PendingTimeout: time.Minute})
			f.eastThenWest()
			web := deployment("web")
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
			f.confirm("east", web)
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))

			since := f.now.Add(-tt.pendingFor)
			status := &schemas.WorkloadStatus{Cluster: "east", Workload: web.Ref(), PendingPods: 1, PendingSince: &since}
			f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", web.Ref()), status)
			if tt.thenResolved {
				f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", web.Ref()),
					&schemas.WorkloadStatus{Cluster: "east", Workload: web.Ref()})
			}
			f.heartbeat("east", f.now)
			f.heartbeat("west", f.now)
			f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: f.now})
			if got := f.decisions(mark); !equal(got, tt.want) {
				t.Fatalf("decisions after the tick = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDividePolicyOnlyForDivisibleKinds: a Divide policy naming a kind its RI cannot split (a PyTorchJob has a
// master and workers) is refused with the field and the reason; one naming Deployments is in force.
func TestDividePolicyOnlyForDivisibleKinds(t *testing.T) {
	tests := []struct {
		name, group, kind string
		wantErr           string
	}{
		{name: "deployments", group: "apps", kind: "Deployment"},
		{name: "pytorchjobs", group: "kubeflow.org", kind: "PyTorchJob",
			wantErr: "spec.resourceSelectors.kinds[0]: PyTorchJob.kubeflow.org is not divisible"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.policy(tt.name, map[string]any{
				"resourceSelectors": map[string]any{"kinds": []any{map[string]any{"group": tt.group, "kind": tt.kind}}},
				"spreadConstraints": map[string]any{"spreadMode": "Divide", "topologyKey": "region",
					"percentageSplit": []any{
						map[string]any{"topologyValue": "east", "percentage": int64(50)},
						map[string]any{"topologyValue": "west", "percentage": int64(50)},
					}},
			})
			refused := f.p.ctrl.PolicyRefused(tt.name)
			switch {
			case tt.wantErr == "" && (refused != nil || !inForce(f.p, tt.name)):
				t.Errorf("policy %s not in force: %v", tt.name, refused)
			case tt.wantErr != "" && (refused == nil || !strings.Contains(refused.Error(), tt.wantErr)):
				t.Errorf("policy error %v, want one containing %q", refused, tt.wantErr)
			}
		})
	}
}

// deploymentVersion is deployment(name) at resourceVersion rv, changed by change.
// unschedulableWeb is version 2 of the Deployment web: its pod asks for 100 CPUs, more than any test cluster has.
func unschedulableWeb() *schemas.ObjectChanged {
	return deploymentVersion("web", "2", 1, func(o map[string]any) {
		firstContainer(o)["resources"] = map[string]any{"requests": map[string]any{"cpu": "100"}}
	})
}

func deploymentVersion(name, rv string, replicas int64, change func(object map[string]any)) *schemas.ObjectChanged {
	w := deployment(name)
	w.Object["metadata"].(map[string]any)["resourceVersion"] = rv
	w.Object["spec"].(map[string]any)["replicas"] = replicas
	if change != nil {
		change(w.Object)
	}
	return w
}

// TestNewVersionDecidesOnlyWhatAnApplierWouldCopy: a new version of a placed workload makes new Apply
// decisions only when what an applier copies changed, not for its status, its server-set metadata or
// fleetflow's own annotations; this holds for a workload on one cluster and for one divided over two.
func TestNewVersionDecidesOnlyWhatAnApplierWouldCopy(t *testing.T) {
	status := func(o map[string]any) { o["status"] = map[string]any{"readyReplicas": int64(1)} }
	annotated := func(o map[string]any) {
		status(o)
		o["metadata"].(map[string]any)["annotations"] = map[string]any{"fleetflow.io/cluster": "east"}
	}
	newImage := func(o map[string]any) {
		annotated(o)
		firstContainer(o)["image"] = "web:2"
	}
	steps := []struct {
		name   string
		rv     string
		change func(map[string]any)
		// want lists the clusters given a new Apply.
		want []string
	}{
		{name: "status written back", rv: "2", change: status},
		{name: "fleetflow annotations", rv: "3", change: annotated},
		{name: "the same version redelivered", rv: "3", change: annotated},
		{name: "new image", rv: "4", change: newImage, want: []string{"east", "west"}},
		{name: "status after the new image", rv: "5", change: func(o map[string]any) {
			newImage(o)
			o["status"] = map[string]any{"readyReplicas": int64(2)}
		}},
		{name: "image back to the first one", rv: "6", change: annotated, want: []string{"east", "west"}},
	}
	tests := []struct {
		name     string
		policy   map[string]any
		replicas int64
		clusters []string
	}{
		{name: "one cluster", policy: map[string]any{}, replicas: 1, clusters: []string{"east"}},
		{name: "divided", replicas: 2, clusters: []string{"east", "west"}, policy: map[string]any{
			"resourceSelectors": map[string]any{"kinds": []any{map[string]any{"group": "apps", "kind": "Deployment"}}},
			"spreadConstraints": map[string]any{"spreadMode": "Divide", "topologyKey": "region",
				"percentageSplit": []any{
					map[string]any{"topologyValue": "east", "percentage": int64(50)},
					map[string]any{"topologyValue": "west", "percentage": int64(50)},
				}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.policy("all", tt.policy)
			f.cluster("east", map[string]any{"region": "east"})
			f.cluster("west", map[string]any{"region": "west"})
			first := deploymentVersion("web", "1", tt.replicas, nil)
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(first.Ref()), first)
			var wantFirst []string
			for _, c := range tt.clusters {
				wantFirst = append(wantFirst, "Apply "+c)
			}
			if got := f.decisions(0); !equal(got, wantFirst) {
				t.Fatalf("first decisions = %v, want %v", got, wantFirst)
			}
			for _, step := range steps {
				mark := len(f.pub.ofType(schemas.TypePlacementDecided))
				w := deploymentVersion("web", step.rv, tt.replicas, step.change)
				f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(w.Ref()), w)
				var want []string
				for _, c := range step.want {
					if slices.Contains(tt.clusters, c) {
						want = append(want, "Apply "+c)
					}
				}
				if got := f.decisions(mark); !equal(got, want) {
					t.Fatalf("%s: decisions = %v, want %v", step.name, got, want)
				}
			}
		})
	}
}

// TestPlacerForgetsAppliedEventsBelowTheAcknowledgementFloor: the placer's record of applied events is bounded
// by its consumer's acknowledgement floor. Below the floor it forgets everything, since JetStream delivers none
// of it again, so workloads that came and went leave nothing behind; above it, a redelivered event is still
// skipped; and a new event on a forgotten subject is handled as any new event.
func TestPlacerForgetsAppliedEventsBelowTheAcknowledgementFloor(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.policy("any", map[string]any{})
	f.cluster("east", nil)
	const churn = 50
	for i := range churn {
		job := deployment(fmt.Sprintf("job-%d", i))
		job.Object["metadata"].(map[string]any)["uid"] = fmt.Sprintf("uid-job-%d", i)
		ref := job.Ref()
		f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(ref), job)
		f.confirm("east", job)
		f.deliver(schemas.TypeWorkloadDeleted, schemas.WorkloadSubject(ref), &schemas.ObjectDeleted{Workload: ref})
		f.deliver(schemas.TypePlacementApplied, schemas.PlacementSubject("east", ref), &schemas.PlacementApplied{
			DecisionID: "delete", Workload: ref, Cluster: "east", Action: schemas.ActionDelete, Sequence: f.seq})
	}
	if n := f.p.ctrl.Tracking(); n != 0 {
		t.Fatalf("%d workloads still tracked after all were deleted", n)
	}
	if len(f.p.seen) < 2*churn {
		t.Fatalf("the placer remembers %d subjects after %d workloads came and went; the test needs at least %d",
			len(f.p.seen), churn, 2*churn)
	}
	floor := f.seq
	web := deployment("web")
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
	webSeq := f.seq

	subjects := len(f.p.seen)
	if forgotten := f.p.ForgetAppliedThrough(floor); forgotten != subjects-1 || len(f.p.seen) != 1 {
		t.Fatalf("forgot %d of %d subjects, %d left; want all but web's, the one event above the floor",
			forgotten, subjects, len(f.p.seen))
	}
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	if err := f.p.Handle(t.Context(), delivery(t, webSeq, schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)); err != nil {
		t.Fatal(err)
	}
	if got := f.decisions(mark); len(got) != 0 {
		t.Errorf("web's event, redelivered above the floor, decided %v; want nothing", got)
	}
	again := deployment("job-0")
	again.Object["metadata"].(map[string]any)["uid"] = "uid-job-0-again"
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(again.Ref()), again)
	if got := f.decisions(mark); !equal(got, []string{"Apply east"}) {
		t.Errorf("job-0 submitted again after its subject was forgotten: decisions %v, want [Apply east]", got)
	}
}

// TestPlacerReportsGoneWorkloadsOnceStored: a workload deleted on the control plane is reported gone, with its
// UID, once the Deletes of its copies are stored, so what the state stream keeps of it can be pruned; not from a
// batch whose publishes failed, whose redelivery reports it instead; and only once.
func TestPlacerReportsGoneWorkloadsOnceStored(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.policy("any", map[string]any{})
	f.cluster("east", nil)
	web := deployment("web")
	ref := web.Ref()
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(ref), web)
	f.confirm("east", web)
	if gone := f.p.TakeGone(); len(gone) != 0 {
		t.Fatalf("gone = %v while web runs on east", gone)
	}

	// The deletion comes in a batch with another workload whose Apply fails.
	deleted := delivery(t, f.seq+1, schemas.TypeWorkloadDeleted, schemas.WorkloadSubject(ref), &schemas.ObjectDeleted{Workload: ref})
	api := deployment("api")
	api.Object["metadata"].(map[string]any)["uid"] = "uid-api"
	apiChanged := delivery(t, f.seq+2, schemas.TypeWorkloadChanged, schemas.WorkloadSubject(api.Ref()), api)
	f.seq += 2
	batch := func() error {
		for _, d := range []bus.Delivery{deleted, apiChanged} {
			if err := f.p.Stage(t.Context(), d); err != nil {
				return err
			}
		}
		return f.p.Flush(t.Context())
	}
	f.pub.refuseSubject = schemas.DecisionSubject("east", api.Ref())
	if err := batch(); err == nil {
		t.Fatal("the batch succeeded though the Apply of api was refused")
	}
	if gone := f.p.TakeGone(); len(gone) != 0 {
		t.Fatalf("gone = %v from a batch that failed", gone)
	}
	f.pub.refuseSubject = ""
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	if err := batch(); err != nil {
		t.Fatal(err)
	}
	if got := f.decisions(mark); !equal(got, []string{"Delete east", "Apply east"}) {
		t.Errorf("decisions of the redelivered batch = %v, want web deleted from east and api applied there", got)
	}
	if gone := f.p.TakeGone(); len(gone) != 1 || gone[0] != ref {
		t.Fatalf("gone = %v after the batch was stored, want [%v]", gone, ref)
	}
	if gone := f.p.TakeGone(); len(gone) != 0 {
		t.Errorf("gone = %v when asked again, want nothing", gone)
	}
}

// TestDeletedWorkloadIsDeletedAgainWhenItsClusterReturns: a workload deleted on the control plane while its
// cluster is down gets a Delete its applier gives up on. The copy may have survived, so the placer sends the
// Delete again once the cluster is Ready, as it does for a workload moved off a cluster that was down.
func TestDeletedWorkloadIsDeletedAgainWhenItsClusterReturns(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{HeartbeatTimeout: 10 * time.Second})
	f.policy("any", map[string]any{})
	f.cluster("east", nil)
	web := deployment("web")
	ref := web.Ref()
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(ref), web)
	f.confirm("east", web)

	silent := f.now.Add(15 * time.Second)
	f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: silent})
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	f.deliver(schemas.TypeWorkloadDeleted, schemas.WorkloadSubject(ref), &schemas.ObjectDeleted{Workload: ref})
	if got := f.decisions(mark); !equal(got, []string{"Delete east"}) {
		t.Fatalf("decisions after the workload was deleted = %v, want [Delete east]", got)
	}
	deleteSeq := f.pub.ofType(schemas.TypePlacementDecided)[mark].payload(t).(*schemas.PlacementDecided).Sequence
	f.deliver(schemas.TypePlacementFailed, schemas.PlacementSubject("east", ref), &schemas.PlacementFailed{
		DecisionID: "delete", Workload: ref, Cluster: "east", Action: schemas.ActionDelete, Sequence: deleteSeq,
		Error: "the cluster did not answer", Attempts: schemas.MaxDeliver})
	mark = len(f.pub.ofType(schemas.TypePlacementDecided))

	back := silent.Add(time.Second)
	f.heartbeat("east", back)
	f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: back})
	if got := f.decisions(mark); !equal(got, []string{"Delete east"}) {
		t.Fatalf("decisions once east is back = %v, want the Delete sent again", got)
	}
	if gone := f.p.TakeGone(); len(gone) == 0 || gone[len(gone)-1] != ref {
		t.Errorf("gone = %v, want %v last, once its Delete was sent again", gone, ref)
	}
}

// TestForgettingIsBoundedPerCallAndKeepsWhatIsAboveTheFloor: one call forgets at most maxForgetPerCall subjects,
// oldest first, so a rebuild's many subjects go over several batches; a record above the floor holds back the
// ones applied after it (a redelivery applied out of sequence order), which are forgotten once the floor passes
// it; and a subject applied again keeps its newer record.
func TestForgettingIsBoundedPerCallAndKeepsWhatIsAboveTheFloor(t *testing.T) {
	p := newPlacerFixture(t, PlacerConfig{}).p
	subjects := maxForgetPerCall + maxForgetPerCall/2
	for i := range subjects {
		p.markApplied(fmt.Sprintf("fleetflow.events.node.east.n%d", i), uint64(i+1))
	}
	floor := uint64(subjects)
	if got := p.ForgetAppliedThrough(floor); got != maxForgetPerCall {
		t.Fatalf("first call forgot %d subjects, want the bound %d", got, maxForgetPerCall)
	}
	if got := p.ForgetAppliedThrough(floor); got != subjects-maxForgetPerCall || len(p.seen) != 0 {
		t.Fatalf("second call forgot %d subjects, %d left; want the other %d and none left", got, len(p.seen), subjects-maxForgetPerCall)
	}

	p.markApplied("a", floor+5)
	p.markApplied("b", floor+3)
	p.markApplied("a", floor+9) // a applied again: its record at floor+5 no longer counts
	if got := p.ForgetAppliedThrough(floor + 4); got != 0 || len(p.seen) != 2 {
		t.Errorf("floor+4 forgot %d subjects, %d left; want none forgotten: a's first record is above the floor", got, len(p.seen))
	}
	if got := p.ForgetAppliedThrough(floor + 5); got != 1 || p.seen["a"] != floor+9 {
		t.Errorf("floor+5 forgot %d subjects and left a at %d; want b forgotten and a kept at %d", got, p.seen["a"], floor+9)
	}
	if got := p.ForgetAppliedThrough(floor + 9); got != 1 || len(p.seen) != 0 || len(p.applied.records) != 0 {
		t.Errorf("floor+9 forgot %d subjects, %d left, %d records; want a forgotten and nothing left", got, len(p.seen), len(p.applied.records))
	}
}

// TestPlacerReportsTheDeletedFleetOnce: nodes and clusters deleted are reported once, for what the state stream
// keeps of them to be pruned.
func TestPlacerReportsTheDeletedFleetOnce(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.cluster("east", nil)
	f.cluster("burst", nil)
	node := &schemas.NodeDeleted{Cluster: "east", Name: "n1"}
	f.deliver(schemas.TypeNodeDeleted, schemas.NodeSubject("east", "n1"), node)
	cluster := &schemas.ObjectDeleted{Workload: schemas.ObjectRef{APIVersion: "fleetflow.io/v1alpha1", Kind: "Cluster", Name: "burst", UID: "uid-burst"}}
	f.deliver(schemas.TypeClusterDeleted, schemas.ClusterSpecSubject("burst"), cluster)
	gone := f.p.TakeGoneFleet()
	if len(gone.Nodes) != 1 || gone.Nodes[0] != *node || !slices.Equal(gone.Clusters, []string{"burst"}) {
		t.Fatalf("gone = %+v, want node %v and cluster burst", gone, *node)
	}
	if again := f.p.TakeGoneFleet(); len(again.Nodes)+len(again.Clusters) != 0 {
		t.Errorf("gone = %+v when asked again, want nothing", again)
	}
}

// TestWhatADeletedClusterSendsAfterItsDeletionIsLeftOut: a deleted cluster's heartbeat, APIs and nodes that come
// after its deletion (its runner finishing its Deletes, a producer nobody stopped), live or read by a rebuild,
// do not bring it back into the view nor log it Ready, and each has the cluster reported gone again so the
// pruner removes them from the state stream. Registered again, the cluster counts again.
func TestWhatADeletedClusterSendsAfterItsDeletionIsLeftOut(t *testing.T) {
	deleted := &schemas.ObjectDeleted{Workload: schemas.ObjectRef{APIVersion: "fleetflow.io/v1alpha1", Kind: "Cluster", Name: "burst", UID: "uid-burst"}}
	late := func(at time.Time) []stateMessage {
		return []stateMessage{
			{schemas.TypeClusterHeartbeat, &schemas.ClusterHeartbeat{Cluster: "burst", Time: at}},
			{schemas.TypeClusterAPIs, &schemas.ClusterAPIs{Cluster: "burst", APIs: []string{"apps/v1/Deployment"}}},
			{schemas.TypeNodeChanged, &schemas.NodeState{Cluster: "burst", Name: "n2", Ready: true,
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}},
		}
	}
	for _, tc := range []struct {
		name       string
		rebuilding bool
	}{{"live", false}, {"rebuild", true}} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &strings.Builder{}
			f := newLoggedPlacerFixture(t, PlacerConfig{}, logs)
			burst := object("fleetflow.io/v1alpha1", "Cluster", "", "burst", nil, map[string]any{
				"spec": map[string]any{"kubeconfigSecretRef": map[string]any{"name": "burst", "namespace": "fleetflow-system"}}})
			sendAll := func(msgs []stateMessage) {
				t.Helper()
				if tc.rebuilding {
					f.readState(msgs...)
					return
				}
				subjects := map[string]string{schemas.TypeClusterHeartbeat: schemas.ClusterHeartbeatSubject("burst"),
					schemas.TypeClusterAPIs: schemas.ClusterAPIsSubject("burst"), schemas.TypeNodeChanged: schemas.NodeSubject("burst", "n2"),
					schemas.TypeClusterChanged: schemas.ClusterSpecSubject("burst"), schemas.TypeClusterDeleted: schemas.ClusterSpecSubject("burst")}
				for _, m := range msgs {
					f.deliver(m.eventType, subjects[m.eventType], m.payload)
				}
			}
			sendAll(append([]stateMessage{{schemas.TypeClusterChanged, burst}}, late(f.now)...))
			sendAll([]stateMessage{{schemas.TypeClusterDeleted, deleted}})
			if gone := f.p.TakeGoneFleet(); !slices.Equal(gone.Clusters, []string{"burst"}) {
				t.Fatalf("gone clusters at the deletion = %v, want [burst]", gone.Clusters)
			}
			logs.Reset()

			sendAll(late(f.now.Add(time.Second)))
			sendAll(late(f.now.Add(2 * time.Second)))
			if c := f.p.Snapshot().Cluster("burst"); c != nil {
				t.Errorf("the deleted cluster is back in the view: %+v", *c)
			}
			if nodes := f.p.Snapshot().Nodes("burst"); len(nodes) != 0 {
				t.Errorf("the deleted cluster has %d nodes in the view, want none", len(nodes))
			}
			if gone := f.p.TakeGoneFleet(); !slices.Equal(gone.Clusters, []string{"burst"}) {
				t.Errorf("gone clusters after what it sent late = %v, want [burst] once, for the pruner to take it too", gone.Clusters)
			}
			if tc.rebuilding {
				f.restoreAndPublish()
			}
			if strings.Contains(logs.String(), "cluster Ready") {
				t.Errorf("the deleted cluster was logged Ready:\n%s", logs.String())
			}

			// Registered again: what it sends counts again, and nothing of it is pruned.
			sendAll(append([]stateMessage{{schemas.TypeClusterChanged, burst}}, late(f.now.Add(3*time.Second))...))
			if tc.rebuilding {
				f.restoreAndPublish()
			}
			if c := f.p.Snapshot().Cluster("burst"); c == nil || !c.Ready || len(c.APIs) == 0 {
				t.Errorf("the cluster registered again = %+v, want it Ready with its APIs", c)
			}
			if nodes := f.p.Snapshot().Nodes("burst"); len(nodes) != 1 {
				t.Errorf("the cluster registered again has %d nodes, want 1", len(nodes))
			}
			if gone := f.p.TakeGoneFleet(); len(gone.Clusters) != 0 {
				t.Errorf("gone clusters after it was registered again = %v, want none", gone.Clusters)
			}
		})
	}
}

// TestAClusterRegisteredAgainKeepsWhatItsProducerSentFirst: a Cluster deleted and registered again under its name
// gets a new runner, whose producer may report the nodes and APIs before the control plane's registration
// reaches the placer; those reports count once it does, rather than missing until the producer's resync.
func TestAClusterRegisteredAgainKeepsWhatItsProducerSentFirst(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	burst := object("fleetflow.io/v1alpha1", "Cluster", "", "burst", nil, map[string]any{
		"spec": map[string]any{"kubeconfigSecretRef": map[string]any{"name": "burst", "namespace": "fleetflow-system"}}})
	f.deliver(schemas.TypeClusterChanged, schemas.ClusterSpecSubject("burst"), burst)
	f.deliver(schemas.TypeClusterDeleted, schemas.ClusterSpecSubject("burst"), &schemas.ObjectDeleted{Workload: burst.Ref()})
	f.deliver(schemas.TypeNodeChanged, schemas.NodeSubject("burst", "n1"), &schemas.NodeState{Cluster: "burst", Name: "n1", Ready: true,
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}})
	f.deliver(schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject("burst"), &schemas.ClusterAPIs{Cluster: "burst", APIs: []string{"apps/v1/Deployment"}})
	if nodes := f.p.Snapshot().Nodes("burst"); len(nodes) != 0 {
		t.Fatalf("the deleted cluster has %d nodes in the view, want none while it is deleted", len(nodes))
	}
	again := object("fleetflow.io/v1alpha1", "Cluster", "", "burst", nil, map[string]any{
		"spec": map[string]any{"kubeconfigSecretRef": map[string]any{"name": "burst", "namespace": "fleetflow-system"}}})
	again.Object["metadata"].(map[string]any)["uid"] = "uid-burst-2"
	f.deliver(schemas.TypeClusterChanged, schemas.ClusterSpecSubject("burst"), again)
	if nodes := f.p.Snapshot().Nodes("burst"); len(nodes) != 1 {
		t.Errorf("the cluster registered again has %d nodes, want the one its producer sent first", len(nodes))
	}
	if c := f.p.Snapshot().Cluster("burst"); c == nil || len(c.APIs) == 0 {
		t.Errorf("the cluster registered again = %+v, want the APIs its producer sent first", c)
	}
}

// TestInvalidClusterTaintKeepsNewWorkloadsOff: a Cluster whose taint an older CRD let in though it is invalid (a
// misspelt effect) takes no new workloads, keeps those it runs, and says why with the Cluster, the field's path
// and its value, instead of the taint being ignored and workloads placed where it was meant to keep them off.
// Fixed, the cluster takes workloads again.
func TestInvalidClusterTaintKeepsNewWorkloadsOff(t *testing.T) {
	logs := &strings.Builder{}
	f := newLoggedPlacerFixture(t, PlacerConfig{}, logs)
	f.eastThenWest()
	_, mark := f.placedWebOnEast()
	tainted := func(effect string) *schemas.ObjectChanged {
		return object("fleetflow.io/v1alpha1", "Cluster", "", "east", map[string]any{"name": "east"}, map[string]any{
			"spec": map[string]any{"kubeconfigSecretRef": map[string]any{"name": "east", "namespace": "fleetflow-system"},
				"taints": []any{map[string]any{"key": "maintenance", "value": "true", "effect": effect}}}})
	}
	f.deliver(schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), tainted("NoSchedul"))
	if got := f.decisions(mark); len(got) != 0 {
		t.Errorf("decisions once east's Cluster is invalid = %v, want none: web stays where it runs", got)
	}
	const why = `Cluster east is invalid: spec.taints[0].effect: Unsupported value: "NoSchedul": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`
	if !strings.Contains(logs.String(), "Cluster is invalid") || !strings.Contains(logs.String(), "NoSchedul") {
		t.Errorf("the invalid Cluster was not logged:\n%s", logs.String())
	}

	api := deployment("api")
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(api.Ref()), api)
	d := f.lastDecision()
	if d.Cluster != "west" || d.Verdict == nil || !strings.Contains(d.Verdict.Reasons["east"], why) {
		t.Fatalf("new workload decided %s %s with verdict %+v, want it on west and east's reason to say %q", d.Action, d.Cluster, d.Verdict, why)
	}

	f.deliver(schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), tainted("PreferNoSchedule"))
	jobs := deployment("jobs")
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(jobs.Ref()), jobs)
	if d := f.lastDecision(); d.Cluster != "east" {
		t.Errorf("a new workload once the taint is fixed went to %s, want east", d.Cluster)
	}
}

// applyGaveUp delivers an applier's report that it gave up on an Apply of w to cluster with sequence seq.
func (f *placerFixture) applyGaveUp(cluster string, w *schemas.ObjectChanged, seq uint64, why string) {
	f.t.Helper()
	ref := w.Ref()
	f.deliver(schemas.TypePlacementFailed, schemas.PlacementSubject(cluster, ref), &schemas.PlacementFailed{
		DecisionID: fmt.Sprintf("%s/%d/Apply/%s", ref.UID, seq, cluster), Workload: ref, Cluster: cluster,
		Action: schemas.ActionApply, Sequence: seq, Error: why, Attempts: 1})
}

// lastDecision is the last decision published.
func (f *placerFixture) lastDecision() *schemas.PlacementDecided {
	f.t.Helper()
	return f.lastSent(schemas.TypePlacementDecided).(*schemas.PlacementDecided)
}

// TestApplyAnApplierGaveUpOnMovesOnlyWhenThePolicyAsks: an applier that gives up on an Apply (forbidden,
// invalid, its CRD never came) makes the workload move to another cluster that fits when its policy
// reschedules on failure, applied there first and deleted from the cluster that refused it once that apply is
// confirmed; the verdict says why. Without rescheduleOnFailure the failure is only reported, and a report
// about an Apply older than the last one published to that cluster changes nothing.
func TestApplyAnApplierGaveUpOnMovesOnlyWhenThePolicyAsks(t *testing.T) {
	const why = `admission webhook "quota.example.com" denied the request: team over its GPU quota`
	tests := []struct {
		name       string
		reschedule bool
		older      bool
		want       []string
	}{
		{name: "the policy reschedules on failure: moves", reschedule: true, want: []string{"Apply west"}},
		{name: "the policy does not: stays", reschedule: false},
		{name: "a report about an older Apply: stays", reschedule: true, older: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.eastThenWestWith(map[string]any{"rescheduleOnFailure": tt.reschedule})
			f.cluster("west", map[string]any{"name": "west"})
			web := deployment("web")
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
			applied := f.lastDecision()
			if applied.Action != schemas.ActionApply || applied.Cluster != "east" {
				t.Fatalf("first decision = %s on %s, want an Apply on east", applied.Action, applied.Cluster)
			}
			seq := applied.Sequence
			if tt.older {
				seq--
			}
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))
			f.applyGaveUp("east", web, seq, why)
			if got := f.decisions(mark); !equal(got, tt.want) {
				t.Fatalf("decisions after the applier gave up = %v, want %v", got, tt.want)
			}
			if len(tt.want) == 0 {
				return
			}
			verdict := f.lastDecision().Verdict
			if verdict == nil || verdict.ReasonCodes["east"] != string(structs.RejectAvoided) || !strings.Contains(verdict.Reasons["east"], why) {
				t.Errorf("the move's verdict = %+v, want east avoided with the applier's error", verdict)
			}
			mark = len(f.pub.ofType(schemas.TypePlacementDecided))
			f.confirm("west", web)
			if got := f.decisions(mark); !equal(got, []string{"Delete east"}) {
				t.Errorf("decisions once west confirmed = %v, want [Delete east]", got)
			}
		})
	}
}

// TestApplyGivenUpIsSentAgainAfterTheRetryInterval: an Apply its applier gave up on (here refused by RBAC in the
// workload cluster) for a workload that stays there is sent again once FailedApplyRetry passed, though nothing the
// placer sees changed: an administrator may have fixed the cluster. Not sooner, and after another refusal only
// once the interval passed again.
func TestApplyGivenUpIsSentAgainAfterTheRetryInterval(t *testing.T) {
	const retry = 2 * time.Minute
	const forbidden = `deployments.apps "web" is forbidden: User "fleetflow" cannot patch resource "deployments"`
	f := newPlacerFixture(t, PlacerConfig{HeartbeatTimeout: time.Hour, FailedApplyRetry: retry})
	logs := &strings.Builder{}
	f.p.log = slog.New(slog.NewTextHandler(logs, nil))
	f.eastThenWestWith(nil)
	web := deployment("web")
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
	applied := f.lastDecision()
	if applied.Action != schemas.ActionApply || applied.Cluster != "east" {
		t.Fatalf("first decision = %s on %s, want an Apply on east", applied.Action, applied.Cluster)
	}
	at := f.now
	tick := func(after time.Duration) []string {
		t.Helper()
		mark := len(f.pub.ofType(schemas.TypePlacementDecided))
		f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: at.Add(after)})
		return f.decisions(mark)
	}
	// The placer's clock is the stream's: each report is stored between the ticks around it.
	gaveUp := func(seq uint64, after time.Duration) {
		t.Helper()
		ref := web.Ref()
		f.deliverStored(schemas.TypePlacementFailed, schemas.PlacementSubject("east", ref), &schemas.PlacementFailed{
			DecisionID: fmt.Sprintf("%s/%d/Apply/east", ref.UID, seq), Workload: ref, Cluster: "east",
			Action: schemas.ActionApply, Sequence: seq, Error: forbidden, Attempts: 5}, at.Add(after))
	}
	gaveUp(applied.Sequence, time.Second)
	for _, step := range []struct {
		after time.Duration
		want  []string
	}{
		{after: 2 * time.Second},
		{after: retry},
		{after: retry + 2*time.Second, want: []string{"Apply east"}},
		{after: retry + 4*time.Second},
	} {
		if got := tick(step.after); !equal(got, step.want) {
			t.Fatalf("decisions at tick +%s = %v, want %v", step.after, got, step.want)
		}
	}
	gaveUp(f.lastDecision().Sequence, retry+5*time.Second)
	for _, step := range []struct {
		after time.Duration
		want  []string
	}{
		{after: retry + 6*time.Second},
		{after: 2*retry + 4*time.Second},
		{after: 2*retry + 6*time.Second, want: []string{"Apply east"}},
	} {
		if got := tick(step.after); !equal(got, step.want) {
			t.Fatalf("decisions at tick +%s after the second refusal = %v, want %v", step.after, got, step.want)
		}
	}
	// An edit its RI cannot read is not sent (no Apply goes while a workload is Invalid), nor said to be.
	gaveUp(f.lastDecision().Sequence, 2*retry+7*time.Second)
	broken := deploymentVersion("web", "2", 1, func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = 1.5 })
	f.deliverStored(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(broken.Ref()), broken, at.Add(2*retry+8*time.Second))
	logs.Reset()
	if got := tick(4*retry + time.Minute); len(got) != 0 {
		t.Errorf("decisions for the Invalid workload past the retry interval = %v, want none", got)
	}
	if strings.Contains(logs.String(), "sending again an Apply") {
		t.Errorf("the retry of an Invalid workload's Apply was logged, though none goes:\n%s", logs.String())
	}
}

// TestApplyGivenUpIsNotRetriedIntoANotReadyCluster: FailedApplyRetry is for what a cluster refused and may have
// fixed since, which no event tells. A Duplicate copy stays placed on a cluster that stopped answering; an Apply
// its applier gave up on there because the cluster did not answer is sent again once the cluster is Ready again
// (its heartbeat tells), not every interval into a cluster that still does not answer.
func TestApplyGivenUpIsNotRetriedIntoANotReadyCluster(t *testing.T) {
	const retry = time.Minute
	f := newPlacerFixture(t, PlacerConfig{HeartbeatTimeout: 10 * time.Second, FailedApplyRetry: retry})
	f.policy("dup", map[string]any{"spreadConstraints": map[string]any{"spreadMode": "Duplicate"}})
	f.cluster("east", map[string]any{"name": "east"})
	f.cluster("west", map[string]any{"name": "west"})
	web := deployment("web")
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
	var onEast *schemas.PlacementDecided
	for _, d := range f.pub.ofType(schemas.TypePlacementDecided) {
		if dec := d.payload(t).(*schemas.PlacementDecided); dec.Cluster == "east" && dec.Action == schemas.ActionApply {
			onEast = dec
		}
	}
	if onEast == nil {
		t.Fatal("no Apply on east")
	}
	// west keeps beating, east goes silent.
	at := func(after time.Duration) time.Time { return f.now.Add(after) }
	tick := func(after time.Duration) {
		t.Helper()
		f.deliverStored(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("west"),
			&schemas.ClusterHeartbeat{Cluster: "west", Time: at(after)}, at(after))
		f.deliverStored(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: at(after)}, at(after))
	}
	tick(15 * time.Second)
	ref := web.Ref()
	f.deliverStored(schemas.TypePlacementFailed, schemas.PlacementSubject("east", ref), &schemas.PlacementFailed{
		DecisionID: fmt.Sprintf("%s/%d/Apply/east", ref.UID, onEast.Sequence), Workload: ref, Cluster: "east",
		Action: schemas.ActionApply, Sequence: onEast.Sequence, Error: "dial tcp 10.0.0.1:6443: connect: connection refused",
		Attempts: 5}, at(16*time.Second))
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	for _, after := range []time.Duration{17 * time.Second, retry + 17*time.Second, 3*retry + 17*time.Second} {
		tick(after)
	}
	if got := f.decisions(mark); len(got) != 0 {
		t.Fatalf("decisions while east does not answer = %v, want none", got)
	}
	back := at(3*retry + 20*time.Second)
	f.deliverStored(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"),
		&schemas.ClusterHeartbeat{Cluster: "east", Time: back}, back)
	if got := f.decisions(mark); !equal(got, []string{"Apply east"}) {
		t.Fatalf("decisions once east is back = %v, want [Apply east]", got)
	}
}

// TestApplyGivenUpIsSentAgainOnceTheClusterIsBack: an Apply its applier gave up on while the cluster did not
// answer, for a workload that stays there (its policy does not reschedule on failure), is sent again once
// the cluster is Ready again, and only then; without it the copy would keep the earlier version for good.
func TestApplyGivenUpIsSentAgainOnceTheClusterIsBack(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{HeartbeatTimeout: 10 * time.Second})
	f.eastThenWestWith(nil)
	web, _ := f.placedWebOnEast()
	edited := deployment("web")
	edited.Object["metadata"].(map[string]any)["resourceVersion"] = "2"
	firstContainer(edited.Object)["image"] = "web:2"
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(edited.Ref()), edited)
	given := f.lastDecision()
	if given.Action != schemas.ActionApply || given.Cluster != "east" {
		t.Fatalf("decision for the edit = %s on %s, want an Apply on east", given.Action, given.Cluster)
	}
	silent := f.now.Add(15 * time.Second)
	f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: silent})
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	f.applyGaveUp("east", web, given.Sequence, "dial tcp 10.0.0.1:6443: connect: connection refused")
	f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: silent.Add(2 * time.Second)})
	if got := f.decisions(mark); len(got) != 0 {
		t.Fatalf("decisions while east is down = %v, want none", got)
	}
	back := silent.Add(5 * time.Second)
	// The first time the cluster is seen back, the stream refuses the Apply sent again: the batch fails, and the
	// redelivered heartbeat must send it once more.
	f.pub.refuse[schemas.TypePlacementDecided] = true
	f.seq++
	beat := delivery(t, f.seq, schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"),
		&schemas.ClusterHeartbeat{Cluster: "east", Time: back})
	if err := f.p.Handle(t.Context(), beat); err == nil {
		t.Fatal("the heartbeat was handled although the stream refused the Apply it sent")
	}
	f.pub.refuse = map[string]bool{}
	beat.Attempt = 2
	if err := f.p.Handle(t.Context(), beat); err != nil {
		t.Fatal(err)
	}
	if got := f.decisions(mark); !equal(got, []string{"Apply east"}) {
		t.Fatalf("decisions once east is back = %v, want [Apply east]", got)
	}
	again := f.lastDecision()
	if again.Sequence <= given.Sequence || !strings.Contains(string(again.ObjectJSON)+fmt.Sprint(again.Object), "web:2") {
		t.Errorf("the Apply sent again = #%d %v, want a newer one of the edited version", again.Sequence, again.Object)
	}
	mark = len(f.pub.ofType(schemas.TypePlacementDecided))
	f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: back.Add(2 * time.Second)})
	f.heartbeat("east", back.Add(3*time.Second))
	if got := f.decisions(mark); len(got) != 0 {
		t.Errorf("decisions after the Apply was sent again = %v, want none", got)
	}
}

// TestApplyAnApplierGaveUpOnMovesOnceAnotherClusterFits: when no other cluster fits at the time the applier
// gives up, the workload stays, and a later tick moves it once one does.
func TestApplyAnApplierGaveUpOnMovesOnceAnotherClusterFits(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.eastThenWestWith(map[string]any{"rescheduleOnFailure": true})
	web := deployment("web")
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	f.applyGaveUp("east", web, f.lastDecision().Sequence, "the server could not find the requested resource")
	f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: f.now})
	if got := f.decisions(mark); len(got) != 0 {
		t.Fatalf("decisions with nowhere else to go = %v, want none", got)
	}
	f.cluster("west", map[string]any{"name": "west"})
	f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: f.now})
	if got := f.decisions(mark); !equal(got, []string{"Apply west"}) {
		t.Fatalf("decisions once west fits = %v, want [Apply west]", got)
	}
	if f.p.ctrl.Leaving(idOf(web.Ref())) {
		t.Error("the workload is still among those leaving a cluster after it moved")
	}
}

// idOf is the id of the workload ref in the fleet view.
func idOf(ref schemas.ObjectRef) string {
	return structs.WorkloadID(ref.APIVersion, ref.Kind, ref.Namespace, ref.Name)
}

// clusterReady reports whether p's view holds the cluster name as Ready.
func clusterReady(p *Placer, name string) bool {
	c := p.Snapshot().Cluster(name)
	return c != nil && c.Ready
}

// inForce reports whether a policy of that name is in force in p's view.
func inForce(p *Placer, name string) bool {
	return slices.ContainsFunc(p.Snapshot().Policies(), func(pol *policy.Policy) bool { return pol.Name == name })
}

// stateMessage is an event as a rebuilding placer reads it from the state stream.
type stateMessage struct {
	eventType string
	payload   schemas.Payload
}

// readState has the placer read msgs as a rebuild reads the state stream, each at the next sequence, at the
// time of the fixture's clock.
func (f *placerFixture) readState(msgs ...stateMessage) {
	f.t.Helper()
	f.readStateAt(time.Time{}, msgs...)
}

// readStateAt has the placer read msgs as a rebuild reads the state stream, as stored at at (the fixture's
// clock when zero), each at the next sequence; the rebuild began at the fixture's clock.
func (f *placerFixture) readStateAt(at time.Time, msgs ...stateMessage) {
	f.t.Helper()
	f.p.ctrl.BeginRebuild(f.now)
	for _, m := range msgs {
		f.seq++
		ev := lifecycle.Event{Subject: "fleetflow.events.test", Sequence: f.seq, Type: m.eventType, Payload: m.payload, Time: f.now}
		if !at.IsZero() {
			ev.Time, ev.Stored = at, at
		}
		if d, ok := m.payload.(*schemas.PlacementDecided); ok {
			ev.Subject = schemas.DecisionSubject(d.Cluster, d.Workload)
		}
		if err := f.p.ctrl.Restore(ev); err != nil {
			f.t.Fatal(err)
		}
	}
}

// restoreAndPublish ends a rebuild as Rebuild does, with no history to read: it restores the view read and
// publishes what the placer decides of it. It returns how many decisions were published before, for f.decisions.
func (f *placerFixture) restoreAndPublish() int {
	f.t.Helper()
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	if err := f.p.finishRebuild(f.t.Context(), f.now, nil, 0, 0); err != nil {
		f.t.Fatal(err)
	}
	return mark
}

// readStateOfAGivenUpApply has the placer read, as a rebuild does, what the state stream holds of the Deployment
// web after its applier gave up (with error why) on its Apply #5 to east: the workload, the Apply carrying its
// Placed verdict, and the report, that one first when reportFirst (a newer version of the workload took the
// place of its event). It returns the workload and the sequence of the Apply given up on.
func (f *placerFixture) readStateOfAGivenUpApply(reportFirst bool, why string) (*schemas.ObjectChanged, uint64) {
	f.t.Helper()
	web := deployment("web")
	ref := web.Ref()
	const seq = 5
	verdict := &schemas.PlacementVerdict{Workload: ref, Sequence: seq, Status: schemas.VerdictPlaced, Policy: "any",
		Clusters: []string{"east"}}
	state := []stateMessage{
		{schemas.TypeWorkloadChanged, web},
		{schemas.TypePlacementDecided, &schemas.PlacementDecided{DecisionID: "d/5/east", Workload: ref, Cluster: "east",
			Action: schemas.ActionApply, Sequence: seq, Object: web.Object, Policy: "any", Clusters: []string{"east"}, Verdict: verdict}},
		{schemas.TypePlacementFailed, &schemas.PlacementFailed{DecisionID: "d/5/east", Workload: ref, Cluster: "east",
			Action: schemas.ActionApply, Sequence: seq, Error: why, Attempts: 1}},
	}
	if reportFirst {
		state[0], state[2] = state[2], state[0]
	}
	f.readState(state...)
	return web, seq
}

// TestRestoredPlacerMovesOffAnApplyGivenUp: a restarted placer that finds an applier's report that it gave
// up on the Apply its workload runs under moves the workload at its first tick, whether the state stream holds
// the report after the workload's own event or before it (a newer version of the workload took its place).
func TestRestoredPlacerMovesOffAnApplyGivenUp(t *testing.T) {
	for _, reportFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("report read first: %v", reportFirst), func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.eastThenWestWith(map[string]any{"rescheduleOnFailure": true})
			f.cluster("west", map[string]any{"name": "west"})
			f.readStateOfAGivenUpApply(reportFirst, "forbidden")
			f.restoreAndPublish()
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))
			f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: f.now})
			if got := f.decisions(mark); !equal(got, []string{"Apply west"}) {
				t.Fatalf("decisions at the first tick = %v, want [Apply west]", got)
			}
		})
	}
}

// TestRestoredPlacerSendsAgainAnApplyGivenUp: a restarted placer that finds an Apply its applier gave up on,
// for a workload that stays (its policy does not reschedule on failure) on a cluster Ready now, sends the
// Apply again: the cluster may have come back, or gained the missing kind, while no placer ran to see it.
func TestRestoredPlacerSendsAgainAnApplyGivenUp(t *testing.T) {
	for _, reportFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("report read first: %v", reportFirst), func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.eastThenWestWith(nil)
			_, seq := f.readStateOfAGivenUpApply(reportFirst, "connection refused")
			mark := f.restoreAndPublish()
			if got := f.decisions(mark); !equal(got, []string{"Apply east"}) {
				t.Fatalf("decisions of the restored placer = %v, want [Apply east]", got)
			}
			if again := f.lastDecision(); again.Sequence <= seq {
				t.Errorf("the Apply sent again is #%d, want one newer than the #%d given up on", again.Sequence, seq)
			}
		})
	}
}

// TestMoveRedeliveredAfterAFailedFlushIsPublishedAgain: a move is decided once, in the store; when its Apply
// could not be stored, the batch fails and the event that caused the move comes again. Its redelivery finds
// the move in the store and touches nothing, yet it publishes the Apply again, with the same id, since the
// placer keeps what the first handling touched for it.
func TestMoveRedeliveredAfterAFailedFlushIsPublishedAgain(t *testing.T) {
	tests := []struct {
		name string
		// trigger sets the placer up and returns the event that moves web off east.
		trigger func(f *placerFixture, web *schemas.ObjectChanged) bus.Delivery
	}{
		{name: "an Apply its applier gave up on", trigger: func(f *placerFixture, web *schemas.ObjectChanged) bus.Delivery {
			f.seq++
			return delivery(f.t, f.seq, schemas.TypePlacementFailed, schemas.PlacementSubject("east", web.Ref()), &schemas.PlacementFailed{
				DecisionID: "d", Workload: web.Ref(), Cluster: "east", Action: schemas.ActionApply, Sequence: f.lastDecision().Sequence,
				Error: "forbidden", Attempts: 1})
		}},
		{name: "pods pending past the timeout", trigger: func(f *placerFixture, web *schemas.ObjectChanged) bus.Delivery {
			since := f.now.Add(-time.Hour)
			f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", web.Ref()),
				&schemas.WorkloadStatus{Cluster: "east", Workload: web.Ref(), PendingPods: 1, PendingSince: &since})
			f.seq++
			return delivery(f.t, f.seq, schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: f.now})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{PendingTimeout: time.Minute})
			f.eastThenWestWith(map[string]any{"rescheduleOnFailure": true})
			f.cluster("west", map[string]any{"name": "west"})
			web := deployment("web")
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
			f.confirm("east", web)
			event := tt.trigger(f, web)
			ctx := t.Context()
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))
			f.pub.refuseSubject = schemas.DecisionSubject("west", web.Ref())
			if err := f.p.Stage(ctx, event); err != nil {
				t.Fatal(err)
			}
			if err := f.p.Flush(ctx); err == nil {
				t.Fatal("Flush succeeded although the stream refused the move's Apply")
			}
			f.pub.refuseSubject = ""
			event.Attempt = 2
			if err := f.p.Stage(ctx, event); err != nil {
				t.Fatal(err)
			}
			if err := f.p.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if got := f.decisions(mark); !equal(got, []string{"Apply west"}) {
				t.Fatalf("decisions after the event was redelivered = %v, want [Apply west]", got)
			}
			// The id the first handling gave it, derived from the event's sequence, so a copy stored by the
			// first try is dropped as a duplicate.
			if id, want := f.pub.ofType(schemas.TypePlacementDecided)[mark].id, fmt.Sprintf("%s/%d/Apply/west", web.Ref().UID, event.StreamSequence); id != want {
				t.Errorf("the Apply's id = %s, want %s", id, want)
			}
			if n := f.p.ctrl.AwaitingRedelivery(); n != 0 {
				t.Errorf("the placer still keeps %d events to redo after their redelivery", n)
			}
		})
	}
}

// Every pod bound to a node takes one of its allocatable pod slots, whatever it requests (kube-scheduler's
// "Too many pods"): a node at its limit takes no more, one with a slot left does.
func TestNodePodsCountAgainstItsPodLimit(t *testing.T) {
	for _, tt := range []struct {
		podsOnNode int
		want       string
	}{{110, "Apply west"}, {109, "Apply east"}} {
		f := newPlacerFixture(t, PlacerConfig{})
		f.eastThenWest()
		f.deliver(schemas.TypeNodeChanged, schemas.NodeSubject("east", "n1"), &schemas.NodeState{Cluster: "east", Name: "n1", Ready: true,
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")},
			Pods:        tt.podsOnNode})
		web := deployment("web")
		f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
		if got := f.decisions(0); !equal(got, []string{tt.want}) {
			t.Errorf("%d pods on east's only node: decisions %v, want %v", tt.podsOnNode, got, tt.want)
		}
	}
}

// A copy deleted in its cluster, though the placer sent no Delete, is applied there again, once: one deleted
// again right after is left gone, as is one that finished first (a job cleaned up after it ran, which its last
// status or the Gone's own says), and a copy going from a cluster the workload is not placed on changes nothing.
func TestCopyDeletedInItsClusterIsAppliedAgain(t *testing.T) {
	failed := map[string]any{"conditions": []any{map[string]any{"type": "Progressing", "status": "False",
		"reason": "ProgressDeadlineExceeded"}}}
	tests := []struct {
		name     string
		statuses []*schemas.WorkloadStatus // web's ref is filled in
		want     []string
	}{
		{"deleted once", []*schemas.WorkloadStatus{{Cluster: "east", Gone: true}}, []string{"Apply east"}},
		{"deleted twice in a row", []*schemas.WorkloadStatus{{Cluster: "east", Gone: true}, {Cluster: "east", Gone: true}},
			[]string{"Apply east"}},
		{"deleted after it failed", []*schemas.WorkloadStatus{{Cluster: "east", Status: failed}, {Cluster: "east", Gone: true}}, nil},
		{"gone, saying it had failed", []*schemas.WorkloadStatus{{Cluster: "east", Gone: true, Status: failed}}, nil},
		{"gone, saying it ran", []*schemas.WorkloadStatus{{Cluster: "east", Gone: true, Status: map[string]any{"replicas": int64(1)}}},
			[]string{"Apply east"}},
		{"gone from a cluster it is not placed on", []*schemas.WorkloadStatus{{Cluster: "west", Gone: true}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.eastThenWest()
			web, mark := f.placedWebOnEast()
			for _, s := range tt.statuses {
				s.Workload = web.Ref()
				f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject(s.Cluster, web.Ref()), s)
			}
			if got := f.decisions(mark); !equal(got, tt.want) {
				t.Fatalf("decisions = %v, want %v", got, tt.want)
			}
		})
	}
}

// A workload asking for a negative quantity gets an Invalid verdict naming the field, at once: it is not
// retried until its event is dropped, and a placed one keeps running where it is.
func TestNegativeQuantityMakesTheWorkloadInvalid(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.eastThenWest()
	_, mark := f.placedWebOnEast()
	bad := deploymentVersion("web", "2", 1, func(object map[string]any) {
		firstContainer(object)["resources"] = map[string]any{"requests": map[string]any{"cpu": "-4"}}
	})
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(bad.Ref()), bad)
	v := f.lastVerdictSent()
	if v.Status != schemas.VerdictInvalid || !strings.Contains(v.Message, "resources.requests.cpu: -4 is negative") {
		t.Errorf("verdict %s %q, want Invalid naming resources.requests.cpu", v.Status, v.Message)
	}
	if got := f.decisions(mark); len(got) != 0 {
		t.Errorf("decisions %v, want none: the placed copy keeps running", got)
	}
}

// A Cluster object deleted takes the copies on it along: with another cluster that fits the workload moves
// there first; with none it is Unschedulable, but its copy on the cluster that left the fleet is deleted
// all the same, since fleetflow no longer watches it. So is the copy a workload that turned Unschedulable
// kept running there, though the workload is placed nowhere.
func TestClusterDeletedTakesItsCopiesAlong(t *testing.T) {
	for _, tt := range []struct {
		name string
		west bool
		// unschedulable grows the workload past every cluster before the deletion: its copy keeps running on east.
		unschedulable bool
		want          []string
	}{
		{name: "another cluster fits", west: true, want: []string{"Apply west", "Delete east"}},
		{name: "no other cluster", want: []string{"Delete east"}},
		{name: "kept running while unschedulable", west: true, unschedulable: true, want: []string{"Delete east"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			if tt.west {
				f.eastThenWest()
			} else {
				f.eastThenWestWith(nil)
			}
			_, mark := f.placedWebOnEast()
			if tt.unschedulable {
				grown := unschedulableWeb()
				f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(grown.Ref()), grown)
				if v := f.lastVerdictSent(); v.Status != schemas.VerdictUnschedulable {
					t.Fatalf("verdict %s, want Unschedulable", v.Status)
				}
				mark = len(f.pub.ofType(schemas.TypePlacementDecided))
			}
			east := object("fleetflow.io/v1alpha1", "Cluster", "", "east", nil, nil).Ref()
			f.deliver(schemas.TypeClusterDeleted, schemas.ClusterSpecSubject("east"), &schemas.ObjectDeleted{Workload: east})
			if got := f.decisions(mark); !equal(got, tt.want) {
				t.Fatalf("decisions = %v, want %v", got, tt.want)
			}
			if !tt.unschedulable {
				return
			}
			if v := f.lastVerdictSent(); strings.Contains(v.Message, "east") || v.Reasons["east"] != "" {
				t.Errorf("verdict %s %q, reasons %v: want nothing said of east, which left the fleet", v.Status, v.Message, v.Reasons)
			}
		})
	}
}

// A Divide policy over a kind no RI describes is refused, and put in force once an RI for the kind arrives
// after it, without the policy changing.
func TestRefusedPolicyInForceOnceItsKindHasAnRI(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.policy("widget-divide", map[string]any{
		"resourceSelectors": map[string]any{"kinds": []any{map[string]any{"group": "example.com", "kind": "Widget"}}},
		"spreadConstraints": map[string]any{"spreadMode": "Divide", "topologyKey": "region", "percentageSplit": []any{
			map[string]any{"topologyValue": "east", "percentage": int64(50)},
			map[string]any{"topologyValue": "west", "percentage": int64(50)}}}})
	if err := f.p.ctrl.PolicyRefused("widget-divide"); err == nil || inForce(f.p, "widget-divide") {
		t.Fatalf("policy refused: %v, in force: %t; want it refused: no RI describes Widget", err, inForce(f.p, "widget-divide"))
	}
	ri := object("optimization.nvidia.com/v1alpha1", "ResourceInterface", "", "widget-ri", nil, map[string]any{
		"spec": map[string]any{"structureDefinition": map[string]any{"rootComponent": map[string]any{
			"name": "widget", "kind": map[string]any{"group": "example.com", "version": "v1", "kind": "Widget"},
			"specDefinition":  map[string]any{"podTemplateSpecPath": ".spec.template"},
			"scaleDefinition": map[string]any{"replicasPath": ".spec.replicas"}}}}})
	f.deliver(schemas.TypeResourceInterfaceChanged, schemas.ResourceInterfaceSubject(ri.Ref()), ri)
	if err := f.p.ctrl.PolicyRefused("widget-divide"); err != nil || !inForce(f.p, "widget-divide") {
		t.Fatalf("policy refused: %v, in force: %t; want it in force once Widget has an RI", err, inForce(f.p, "widget-divide"))
	}
}

// A placed workload's new version is packed where it runs with that cluster's room for it: what the cluster
// has free plus what the workload's own running pods take there. Grown, it stays while its old pods plus the
// new ones fit, and moves once they no longer do.
func TestGrownWorkloadCountsItsOwnPodsAsRoom(t *testing.T) {
	tests := []struct {
		name      string
		otherCPU  int64 // requested on east's node by pods of no placed workload
		grownTo   int64
		wantAfter []string
	}{
		{name: "still fits with its own pods' room", grownTo: 7, wantAfter: []string{"Apply east"}},
		{name: "fits only where it does not run", otherCPU: 3, grownTo: 6, wantAfter: []string{"Apply west"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.eastThenWest()
			generation := func(g int64) func(map[string]any) {
				return func(o map[string]any) { o["metadata"].(map[string]any)["generation"] = g }
			}
			web := deploymentVersion("web", "1", 4, generation(1))
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
			if got := f.decisions(0); !equal(got, []string{"Apply east"}) {
				t.Fatalf("decisions = %v, want web on east", got)
			}
			f.confirm("east", web)
			// east reports web's four pods running on its node, beside the other pods.
			f.deliver(schemas.TypeNodeChanged, schemas.NodeSubject("east", "n1"), &schemas.NodeState{Cluster: "east", Name: "n1", Ready: true,
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")},
				Requested:   corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(4+tt.otherCPU, resource.DecimalSI)},
				Pods:        4 + int(tt.otherCPU), WorkloadPods: map[string]int{web.Ref().UID: 4},
				WorkloadRequested: map[string]corev1.ResourceList{web.Ref().UID: {corev1.ResourceCPU: resource.MustParse("4")}}})
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))
			grown := deploymentVersion("web", "2", tt.grownTo, generation(2))
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(grown.Ref()), grown)
			if got := f.decisions(mark); !equal(got, tt.wantAfter) {
				t.Errorf("decisions after growing to %d = %v, want %v", tt.grownTo, got, tt.wantAfter)
			}
		})
	}
}

// servesJobs makes the fixture's clusters serve batch/v1 Jobs besides Deployments.
func (f *placerFixture) servesJobs(clusters ...string) {
	f.t.Helper()
	for _, c := range clusters {
		f.deliver(schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject(c), &schemas.ClusterAPIs{Cluster: c,
			APIs: []string{"apps/v1/Deployment", "batch/v1/Job"}})
	}
}

// oneCPUJob is a batch/v1 Job of one pod asking for 1 cpu.
func oneCPUJob(name string) *schemas.ObjectChanged {
	return object("batch/v1", "Job", "team", name, nil, map[string]any{"spec": map[string]any{
		"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never", "containers": []any{map[string]any{
			"name": "job", "resources": map[string]any{"requests": map[string]any{"cpu": "1"}}}}}}}})
}

var (
	jobComplete = map[string]any{"succeeded": int64(1), "conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}
	jobActive   = map[string]any{"active": int64(1)}
	// progressDeadlineExceeded is a Deployment status the built-in RI maps to Failed: a service whose rollout
	// stalled, not a job that ran.
	progressDeadlineExceeded = map[string]any{"conditions": []any{map[string]any{"type": "Progressing", "status": "False",
		"reason": "ProgressDeadlineExceeded"}}}
)

// A job whose copy completed stays where it ran when a policy change would move it: moved, a job that already
// ran would run again, and its result would give way to the new copy's empty status. Running, it moves.
func TestCompletedWorkloadIsNotMoved(t *testing.T) {
	tests := []struct {
		name   string
		status map[string]any
		want   []string
	}{
		{"running: moves", jobActive, []string{"Apply west"}},
		{"completed: stays", jobComplete, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.eastThenWest()
			f.servesJobs("east", "west")
			job := oneCPUJob("train")
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(job.Ref()), job)
			f.confirm("east", job)
			f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", job.Ref()),
				&schemas.WorkloadStatus{Cluster: "east", Workload: job.Ref(), Status: tt.status})
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))
			f.policy("any", map[string]any{"clusterSelector": map[string]any{"matchLabels": map[string]any{"name": "west"}}})
			if got := f.decisions(mark); !equal(got, tt.want) {
				t.Errorf("decisions after the policy left east = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDuplicateCopyIsNotWithdrawnByAMoveOff: a Duplicate copy has nowhere to move, since every eligible cluster
// has one, so a copy that failed (under rescheduleOnFailure), whose Apply its applier gave up on (likewise), or
// whose pods stayed Pending stays on its cluster, as the Duplicate rules say: a copy is withdrawn only when its
// cluster stops matching or leaves the fleet. Before, each of them deleted east's copy for good.
func TestDuplicateCopyIsNotWithdrawnByAMoveOff(t *testing.T) {
	tests := []struct {
		name    string
		trigger func(f *placerFixture, web *schemas.ObjectChanged)
	}{
		{"its copy failed", func(f *placerFixture, web *schemas.ObjectChanged) {
			f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", web.Ref()),
				&schemas.WorkloadStatus{Cluster: "east", Workload: web.Ref(), Status: progressDeadlineExceeded})
		}},
		{"its applier gave up on its Apply", func(f *placerFixture, web *schemas.ObjectChanged) {
			var seq uint64
			for _, d := range f.pub.ofType(schemas.TypePlacementDecided) {
				if dec := d.payload(f.t).(*schemas.PlacementDecided); dec.Cluster == "east" {
					seq = dec.Sequence
				}
			}
			f.applyGaveUp("east", web, seq, "forbidden")
			f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: f.now})
		}},
		{"its pods stayed Pending", func(f *placerFixture, web *schemas.ObjectChanged) {
			since := f.now.Add(-time.Hour)
			f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", web.Ref()),
				&schemas.WorkloadStatus{Cluster: "east", Workload: web.Ref(), PendingPods: 1, PendingSince: &since})
			f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: f.now})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{PendingTimeout: time.Minute})
			f.policy("dup", map[string]any{"rescheduleOnFailure": true, "spreadConstraints": map[string]any{"spreadMode": "Duplicate"}})
			f.cluster("east", map[string]any{"name": "east"})
			f.cluster("west", map[string]any{"name": "west"})
			web := deployment("web")
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
			f.confirm("east", web)
			f.confirm("west", web)
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))
			tt.trigger(f, web)
			if got := f.decisions(mark); len(got) != 0 {
				t.Errorf("decisions = %v, want none: the copy on east stays", got)
			}
		})
	}
}

// A Deployment that last reported Failed (its rollout stalled) on a cluster that goes silent fails over like any
// other: it is a service, not a job that ran.
func TestFailedServiceStillFailsOver(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{HeartbeatTimeout: 10 * time.Second})
	f.eastThenWest()
	web, _ := f.placedWebOnEast()
	f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", web.Ref()),
		&schemas.WorkloadStatus{Cluster: "east", Workload: web.Ref(), Status: progressDeadlineExceeded})
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	if got := f.westAloneBeatsAt(f.now.Add(15*time.Second), mark); !equal(got, []string{"Apply west", "Delete east"}) {
		t.Errorf("decisions after east went silent = %v, want [Apply west Delete east]", got)
	}
}

// A Cluster object deleted takes every workload on it along to other clusters, also a completed job: fleetflow
// no longer watches that cluster, and would otherwise send the copy there again were it registered again.
func TestDeletedClusterTakesACompletedCopyAlong(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.eastThenWest()
	f.servesJobs("east", "west")
	job := oneCPUJob("train")
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(job.Ref()), job)
	f.confirm("east", job)
	f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", job.Ref()),
		&schemas.WorkloadStatus{Cluster: "east", Workload: job.Ref(), Status: jobComplete})
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	east := object("fleetflow.io/v1alpha1", "Cluster", "", "east", nil, nil).Ref()
	f.deliver(schemas.TypeClusterDeleted, schemas.ClusterSpecSubject("east"), &schemas.ObjectDeleted{Workload: east})
	if got := f.decisions(mark); !equal(got, []string{"Apply west", "Delete east"}) {
		t.Errorf("decisions after east's Cluster was deleted = %v, want [Apply west Delete east]", got)
	}
}

// A Duplicate spread follows the fleet whatever its copies did: a cluster that registers later gets its copy
// of a workload whose copies completed.
func TestDuplicateCompletedCopiesStillFollowTheFleet(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.policy("dup", map[string]any{"spreadConstraints": map[string]any{"spreadMode": "Duplicate"}})
	f.cluster("east", map[string]any{"name": "east"})
	f.servesJobs("east")
	job := oneCPUJob("setup")
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(job.Ref()), job)
	f.confirm("east", job)
	f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", job.Ref()),
		&schemas.WorkloadStatus{Cluster: "east", Workload: job.Ref(), Status: jobComplete})
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	f.cluster("west", map[string]any{"name": "west"})
	f.servesJobs("west")
	if got := f.decisions(mark); !equal(got, []string{"Apply west"}) {
		t.Errorf("decisions after west registered = %v, want [Apply west]", got)
	}
}

// A verdict that no cluster takes a running workload says where it still runs, and whether that copy is of an
// earlier version: an edit that made the workload Unschedulable is not carried out until a cluster fits it.
func TestUnschedulableVerdictSaysWhatStillRuns(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.eastThenWest()
	f.placedWebOnEast()
	grown := unschedulableWeb()
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(grown.Ref()), grown)
	v := f.lastVerdictSent()
	if want := "the copy on east keeps running the version applied before"; v.Status != schemas.VerdictUnschedulable ||
		!strings.Contains(v.Message, want) {
		t.Errorf("verdict %s %q, want Unschedulable saying %q", v.Status, v.Message, want)
	}
}

// An edit that makes a running workload Invalid (its RI cannot read it) is not carried out either: the verdict
// says the copy keeps running the version applied before, as for an edit no cluster fits. Before, it gave only
// the analysis error, and nothing said whether the workload still ran.
func TestInvalidVerdictSaysWhatStillRuns(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.eastThenWest()
	f.placedWebOnEast()
	broken := deploymentVersion("web", "2", 1, func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = 1.5 })
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(broken.Ref()), broken)
	v := f.lastVerdictSent()
	want := "the copy on east keeps running the version applied before; this version is applied once it can be analyzed"
	if v.Status != schemas.VerdictInvalid || !strings.Contains(v.Message, "replica count") || !strings.Contains(v.Message, want) {
		t.Errorf("verdict %s %q, want Invalid with the analysis error, saying %q", v.Status, v.Message, want)
	}
}

// An Invalid edit is not carried out later either, by an Apply sent again for another reason (here the namespace's
// new labels, which an Apply carries): the copy keeps the version applied before until the workload can be
// analyzed, and then the fixed version goes. Before, the namespace's relabelling applied the edit the verdict
// said was not applied.
func TestInvalidEditIsNotAppliedByAnApplySentAgain(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.eastThenWest()
	f.placedWebOnEast()
	broken := deploymentVersion("web", "2", 1, func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = 1.5 })
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(broken.Ref()), broken)
	if v := f.lastVerdictSent(); v.Status != schemas.VerdictInvalid {
		t.Fatalf("verdict %s, want Invalid", v.Status)
	}
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	ns := object("v1", "Namespace", "", "team", map[string]any{corev1.LabelMetadataName: "team", "tier": "gold"}, nil)
	f.deliver(schemas.TypeNamespaceChanged, schemas.NamespaceSubject("team"), ns)
	if got := f.decisions(mark); len(got) != 0 {
		t.Fatalf("decisions while the workload is Invalid = %v, want none: the copy keeps the version before", got)
	}
	fixed := deploymentVersion("web", "3", 2, nil)
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(fixed.Ref()), fixed)
	if got := f.decisions(mark); !equal(got, []string{"Apply east"}) {
		t.Fatalf("decisions once the workload is fixed = %v, want [Apply east]", got)
	}
	if d := f.lastDecision(); !strings.Contains(string(d.ObjectJSON)+fmt.Sprint(d.Object), "replicas:2") &&
		!strings.Contains(string(d.ObjectJSON), `"replicas":2`) {
		t.Errorf("the Apply carries %s %v, want the fixed version (2 replicas)", d.ObjectJSON, d.Object)
	}
}

// A workload edited past every cluster keeps its copy running where it was placed, and until the cluster reports
// that copy's pods, its reservation still holds their room: the next workload does not take it. Before, the
// Unschedulable verdict gave the reservation back at once, and a job placed seconds later on the room the
// running copy's pods were about to take over-committed the cluster (seen with a 2-GPU PyTorchJob edited to 4
// GPUs: two 1-GPU services were placed on its 2-GPU cluster). Once the copy is gone, the room is free.
func TestUnschedulableEditKeepsTheRunningCopysReservation(t *testing.T) {
	tests := []struct {
		name string
		// gone: east reports web's copy gone before api comes.
		gone bool
		want []string
	}{
		{name: "the copy keeps running", want: []string{"Apply west"}},
		{name: "the copy is gone", gone: true, want: []string{"Apply east"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.eastThenWest()
			web := deploymentVersion("web", "1", 6, nil)
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
			f.confirm("east", web)
			grown := deploymentVersion("web", "2", 6, func(o map[string]any) {
				firstContainer(o)["resources"] = map[string]any{"requests": map[string]any{"cpu": "100"}}
			})
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(grown.Ref()), grown)
			if v := f.lastVerdictSent(); v.Status != schemas.VerdictUnschedulable || !strings.Contains(v.Message, "the copy on east keeps running") {
				t.Fatalf("verdict %s %q, want Unschedulable with the copy on east running", v.Status, v.Message)
			}
			if tt.gone {
				f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", web.Ref()),
					&schemas.WorkloadStatus{Cluster: "east", Workload: web.Ref(), Gone: true})
			}
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))
			api := deploymentVersion("api", "1", 4, nil)
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(api.Ref()), api)
			if got := f.decisions(mark); !equal(got, tt.want) {
				t.Errorf("api's decisions = %v, want %v (east has 8 cpu, web's copy 6 pods of 1 cpu)", got, tt.want)
			}
		})
	}
}

// A Divide copy's status is judged against its cluster's share, as the copy runs it: a workload whose copies
// each completed their share is left where it ran when its policy changes, which it would not be were each
// copy judged against the whole replica count.
func TestDivideCopyJudgedAgainstItsShare(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	ri := object("optimization.nvidia.com/v1alpha1", "ResourceInterface", "", "widget-ri", nil, map[string]any{
		"spec": map[string]any{"structureDefinition": map[string]any{"rootComponent": map[string]any{
			"name": "widget", "kind": map[string]any{"group": "example.com", "version": "v1", "kind": "Widget"},
			"specDefinition":  map[string]any{"podTemplateSpecPath": ".spec.template"},
			"scaleDefinition": map[string]any{"replicasPath": ".spec.replicas"},
			"statusDefinition": map[string]any{"statusMappings": map[string]any{"completed": []any{map[string]any{
				"byExpression": map[string]any{"expression": "(.status.done // 0) >= .spec.replicas", "expectedResult": "true"}}}}}}}}})
	f.deliver(schemas.TypeResourceInterfaceChanged, schemas.ResourceInterfaceSubject(ri.Ref()), ri)
	divide := func(east, west int64) map[string]any {
		return map[string]any{"resourceSelectors": map[string]any{"kinds": []any{map[string]any{"group": "example.com", "kind": "Widget"}}},
			"spreadConstraints": map[string]any{"spreadMode": "Divide", "topologyKey": "name", "percentageSplit": []any{
				map[string]any{"topologyValue": "east", "percentage": east}, map[string]any{"topologyValue": "west", "percentage": west}}}}
	}
	f.policy("split", divide(50, 50))
	for _, c := range []string{"east", "west"} {
		f.cluster(c, map[string]any{"name": c})
		f.deliver(schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject(c), &schemas.ClusterAPIs{Cluster: c, APIs: []string{"example.com/v1/Widget"}})
	}
	widget := object("example.com/v1", "Widget", "team", "w", nil, map[string]any{"spec": map[string]any{"replicas": int64(4),
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "w",
			"resources": map[string]any{"requests": map[string]any{"cpu": "1"}}}}}}}})
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(widget.Ref()), widget)
	if got := f.decisions(0); !equal(got, []string{"Apply east", "Apply west"}) {
		t.Fatalf("decisions = %v, want the widget divided over east and west", got)
	}
	// Each share names the object it was cut from, for the copy's observedGeneration to be judged against.
	for _, s := range f.pub.ofType(schemas.TypePlacementDecided) {
		if d := s.payload(t).(*schemas.PlacementDecided); d.SourceContent != objects.ContentOf(widget.Object) {
			t.Errorf("the share on %s names source content %q, want the widget's %q", d.Cluster, d.SourceContent, objects.ContentOf(widget.Object))
		}
	}
	for _, c := range []string{"east", "west"} {
		f.confirm(c, widget)
		f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject(c, widget.Ref()),
			&schemas.WorkloadStatus{Cluster: c, Workload: widget.Ref(), Status: map[string]any{"done": int64(2)}})
	}
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	f.policy("split", divide(100, 0))
	if got := f.decisions(mark); len(got) != 0 {
		t.Errorf("decisions after the split changed = %v, want none: each copy completed its share of 2", got)
	}
}

// A grown workload whose new pods each ask for more (4 pods of 1 cpu, then 4 of 2 cpu) is kept where it runs,
// its old pods counted as room, and its reservation holds the 4 cpu the old pods do not take:
//   - while only the old pods run, though they are as many as were packed, so the next workload does not take
//     the room the new pods need;
//   - until the new pods run, also when they request less than was packed (lowered at admission by a VPA or a
//     webhook), so the room they leave is free for the next workload rather than held until the TTL.
func TestGrownReservationHoldsUntilItsNewPodsRun(t *testing.T) {
	tests := []struct {
		name      string
		running   string // what each of web's 4 pods on east's node requests after the rollout
		otherCPU  string
		wantOther []string
	}{
		{name: "old pods only", running: "1", otherCPU: "4", wantOther: []string{"Apply west"}},
		{name: "new pods smaller than packed", running: "1500m", otherCPU: "2", wantOther: []string{"Apply east"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.eastThenWest()
			version := func(g int64, cpu string) func(map[string]any) {
				return func(o map[string]any) {
					o["metadata"].(map[string]any)["generation"] = g
					firstContainer(o)["resources"] = map[string]any{"requests": map[string]any{"cpu": cpu}}
				}
			}
			web := deploymentVersion("web", "1", 4, version(1, "1"))
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
			f.confirm("east", web)
			node := func(each string) *schemas.NodeState {
				q := resource.MustParse(each)
				total := *resource.NewMilliQuantity(q.MilliValue()*4, resource.DecimalSI)
				return &schemas.NodeState{Cluster: "east", Name: "n1", Ready: true,
					Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")},
					Requested:   corev1.ResourceList{corev1.ResourceCPU: total},
					Pods:        4, WorkloadPods: map[string]int{web.Ref().UID: 4},
					WorkloadRequested: map[string]corev1.ResourceList{web.Ref().UID: {corev1.ResourceCPU: total}}}
			}
			f.deliver(schemas.TypeNodeChanged, schemas.NodeSubject("east", "n1"), node("1"))
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))
			bigger := deploymentVersion("web", "2", 4, version(2, "2"))
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(bigger.Ref()), bigger)
			if got := f.decisions(mark); !equal(got, []string{"Apply east"}) {
				t.Fatalf("decisions for the bigger version = %v, want it kept on east (4 cpu free + its own 4)", got)
			}
			f.confirm("east", bigger)
			f.deliver(schemas.TypeNodeChanged, schemas.NodeSubject("east", "n1"), node(tt.running))
			mark = len(f.pub.ofType(schemas.TypePlacementDecided))
			other := deploymentVersion("other", "1", 1, version(1, tt.otherCPU))
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(other.Ref()), other)
			if got := f.decisions(mark); !equal(got, tt.wantOther) {
				t.Errorf("decisions for other (%s cpu) = %v, want %v", tt.otherCPU, got, tt.wantOther)
			}
		})
	}
}

// TestApplyCarriesItsNamespaceLabels: an Apply carries the labels of the workload's control-plane namespace as
// they are when it is decided, but the name label every cluster sets itself; a namespace without other labels
// adds nothing to it.
func TestApplyCarriesItsNamespaceLabels(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.policy("any", map[string]any{})
	f.cluster("east", nil)
	namespace := func(labels map[string]any) {
		ns := object("v1", "Namespace", "", "team", labels, nil)
		f.deliver(schemas.TypeNamespaceChanged, schemas.NamespaceSubject("team"), ns)
	}
	namespace(map[string]any{corev1.LabelMetadataName: "team"})
	web := deployment("web")
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
	if got := f.lastDecision().NamespaceLabels; got != nil {
		t.Errorf("namespace labels = %v, want none beside the name label", got)
	}

	namespace(map[string]any{corev1.LabelMetadataName: "team", "pod-security.kubernetes.io/enforce": "restricted"})
	web = deployment("web")
	web.Object["metadata"].(map[string]any)["resourceVersion"] = "2"
	firstContainer(web.Object)["image"] = "web:2"
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
	want := map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	if got := f.lastDecision(); got.Action != schemas.ActionApply || !maps.Equal(got.NamespaceLabels, want) {
		t.Errorf("the next Apply (%s) carries namespace labels %v, want %v", got.Action, got.NamespaceLabels, want)
	}

	// A change of the namespace's labels alone reaches the cluster: one Apply into the namespace is sent again,
	// however many workloads run there; a change of labels its copies do not carry sends nothing.
	api := deployment("api")
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(api.Ref()), api)
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	namespace(map[string]any{corev1.LabelMetadataName: "team", "pod-security.kubernetes.io/enforce": "baseline"})
	if got := f.decisions(mark); !equal(got, []string{"Apply east"}) {
		t.Fatalf("decisions after the namespace was relabelled = %v, want one Apply east", got)
	}
	want = map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}
	if got := f.lastDecision(); !maps.Equal(got.NamespaceLabels, want) {
		t.Errorf("the Apply sent again carries namespace labels %v, want %v", got.NamespaceLabels, want)
	}
	mark = len(f.pub.ofType(schemas.TypePlacementDecided))
	namespace(map[string]any{corev1.LabelMetadataName: "team", "pod-security.kubernetes.io/enforce": "baseline"})
	if got := f.decisions(mark); len(got) != 0 {
		t.Errorf("decisions after the same labels came again = %v, want none", got)
	}
}

// A job whose copy finished before its pods were ever reported running (completed at once, or failed at
// admission) gives back the capacity its reservation held on that cluster, and a workload waiting for that
// room is placed at once rather than when the reservation's TTL runs out.
func TestFinishedCopyReleasesItsReservation(t *testing.T) {
	jobFailed := map[string]any{"failed": int64(1), "conditions": []any{map[string]any{"type": "Failed", "status": "True"}}}
	for name, status := range map[string]map[string]any{"completed": jobComplete, "failed": jobFailed} {
		t.Run(name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{ReservationTTL: time.Hour})
			f.eastThenWestWith(nil)
			f.servesJobs("east")
			sixCPUs := func(name string) *schemas.ObjectChanged {
				job := oneCPUJob(name)
				firstContainer(job.Object)["resources"] = map[string]any{"requests": map[string]any{"cpu": "6"}}
				return job
			}
			first, second := sixCPUs("first"), sixCPUs("second")
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(first.Ref()), first)
			f.confirm("east", first)
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(second.Ref()), second)
			if got := f.decisions(mark); len(got) != 0 {
				t.Fatalf("decisions for the second job while the first holds east = %v, want none", got)
			}
			f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", first.Ref()),
				&schemas.WorkloadStatus{Cluster: "east", Workload: first.Ref(), Status: status})
			if got := f.decisions(mark); !equal(got, []string{"Apply east"}) {
				t.Errorf("decisions once the first job %s = %v, want the second placed on east", name, got)
			}
		})
	}
}

// TestPendingTimeoutIsMeasuredOnOneClock: how long a workload's pods pended is taken from the producer's report
// (their age when it reported) and measured on by the streams' server's clock, so a server clock an hour behind
// the workload cluster's neither hides the wait nor invents one.
func TestPendingTimeoutIsMeasuredOnOneClock(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{PendingTimeout: time.Minute, HeartbeatTimeout: time.Hour})
	f.eastThenWest()
	web, mark := f.placedWebOnEast()
	serverNow := f.now.Add(-time.Hour)
	since := f.now.Add(-2 * time.Minute)
	f.deliverStored(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", web.Ref()),
		&schemas.WorkloadStatus{Cluster: "east", Workload: web.Ref(), PendingPods: 1, PendingSince: &since}, serverNow)
	for _, c := range []string{"east", "west"} {
		f.deliverStored(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject(c),
			&schemas.ClusterHeartbeat{Cluster: c, Time: f.now}, serverNow.Add(time.Second))
	}
	f.deliverStored(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: f.now}, serverNow.Add(2*time.Second))
	if got := f.decisions(mark); !equal(got, []string{"Apply west"}) {
		t.Fatalf("decisions once the pods pended 2 minutes = %v, want [Apply west]", got)
	}
}

// TestNamespaceRelabelSkipsFinishedAndLeavingCopies: the Apply a namespace's new labels ride with is one of a
// copy that runs there: not a job that finished there (sent again, it would run again once its TTL removed it),
// nor one that is leaving the cluster.
func TestNamespaceRelabelSkipsFinishedAndLeavingCopies(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.policy("any", map[string]any{})
	f.cluster("east", nil)
	f.servesJobs("east")
	job := oneCPUJob("done")
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(job.Ref()), job)
	f.confirm("east", job)
	f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", job.Ref()),
		&schemas.WorkloadStatus{Cluster: "east", Workload: job.Ref(), Status: jobComplete})
	f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", job.Ref()),
		&schemas.WorkloadStatus{Cluster: "east", Workload: job.Ref(), Status: jobComplete, Gone: true})
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	ns := object("v1", "Namespace", "", "team", map[string]any{"pod-security.kubernetes.io/enforce": "restricted"}, nil)
	f.deliver(schemas.TypeNamespaceChanged, schemas.NamespaceSubject("team"), ns)
	if got := f.decisions(mark); len(got) != 0 {
		t.Errorf("decisions after the namespace of a finished job was relabelled = %v, want none", got)
	}
}

// TestRestoredPlacerRelabelsNamespacesChangedMeanwhile: a namespace relabelled while no placer ran gets its new
// labels to the clusters whose newest Apply into it carried the old ones, once a placer restores; one whose
// newest Apply carried the current labels gets nothing.
func TestRestoredPlacerRelabelsNamespacesChangedMeanwhile(t *testing.T) {
	restricted := map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	for name, carried := range map[string]map[string]string{
		"relabelled meanwhile": {"pod-security.kubernetes.io/enforce": "baseline"},
		"unchanged":            restricted,
	} {
		t.Run(name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.eastThenWestWith(nil)
			web := deployment("web")
			ref := web.Ref()
			verdict := &schemas.PlacementVerdict{Workload: ref, Sequence: 5, Status: schemas.VerdictPlaced, Policy: "any",
				Clusters: []string{"east"}}
			ns := object("v1", "Namespace", "", "team", map[string]any{"pod-security.kubernetes.io/enforce": "restricted"}, nil)
			f.readState(
				stateMessage{schemas.TypeNamespaceChanged, ns},
				stateMessage{schemas.TypeWorkloadChanged, web},
				stateMessage{schemas.TypePlacementDecided, &schemas.PlacementDecided{DecisionID: "d/5/east", Workload: ref,
					Cluster: "east", Action: schemas.ActionApply, Sequence: 5, Object: web.Object, Policy: "any",
					Clusters: []string{"east"}, Verdict: verdict, NamespaceLabels: carried}})
			got := f.decisions(f.restoreAndPublish())
			if maps.Equal(carried, restricted) {
				if len(got) != 0 {
					t.Errorf("decisions of the restored placer = %v, want none", got)
				}
				return
			}
			if !equal(got, []string{"Apply east"}) || !maps.Equal(f.lastDecision().NamespaceLabels, restricted) {
				t.Errorf("decisions of the restored placer = %v (last carrying %v), want an Apply east carrying %v", got,
					f.lastDecision().NamespaceLabels, restricted)
			}
		})
	}
}

// A copy kept running while its workload is placed nowhere (an edit no cluster fits, or one its RI cannot read),
// then deleted in its cluster, is not applied again (an Invalid edit would go with it), but no longer counts as
// applied: the verdict is sent again without saying it runs there, and once the workload fits again, or can be
// analyzed, the copy is applied, rather than the workload shown placed where nothing runs. Before, for an Invalid
// workload the placer logged that it applied the copy again, sent nothing, and the verdict went on saying the
// copy on east kept running the version applied before.
func TestCopyGoneWhilePlacedNowhereIsNotSaidToRun(t *testing.T) {
	tests := []struct {
		name   string
		edit   *schemas.ObjectChanged
		status schemas.VerdictStatus
		// says is also in the verdict once the copy is gone (the analysis error).
		says  string
		fixed *schemas.ObjectChanged
	}{
		{"edited past every cluster", unschedulableWeb(), schemas.VerdictUnschedulable, "", deploymentVersion("web", "3", 1, nil)},
		{"edited so its RI cannot read it",
			deploymentVersion("web", "2", 1, func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = 1.5 }),
			schemas.VerdictInvalid, "replica count", deploymentVersion("web", "3", 2, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.eastThenWest()
			web, _ := f.placedWebOnEast()
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(tt.edit.Ref()), tt.edit)
			if v := f.lastVerdictSent(); v.Status != tt.status || !strings.Contains(v.Message, "the copy on east keeps running") {
				t.Fatalf("verdict %s %q, want %s with the copy on east running", v.Status, v.Message, tt.status)
			}
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))
			f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", web.Ref()),
				&schemas.WorkloadStatus{Cluster: "east", Workload: web.Ref(), Gone: true})
			if got := f.decisions(mark); len(got) != 0 {
				t.Fatalf("decisions after the copy went = %v, want none: the workload is placed nowhere", got)
			}
			if v := f.lastVerdictSent(); v.Status != tt.status || strings.Contains(v.Message, "keeps running") ||
				!strings.Contains(v.Message, tt.says) {
				t.Errorf("verdict once the copy is gone: %s %q, want %s saying %q, not that a copy keeps running",
					v.Status, v.Message, tt.status, tt.says)
			}
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(tt.fixed.Ref()), tt.fixed)
			if got := f.decisions(mark); !equal(got, []string{"Apply east"}) {
				t.Errorf("decisions once it can be placed again = %v, want [Apply east]", got)
			}
		})
	}
}

// A copy kept running while its workload is Unschedulable, then deleted in its cluster, no longer keeps the workload
// on that cluster: a NoSchedule taint put there meanwhile keeps it off once it fits again, as it does any workload
// not running there, and a restarted placer, which finds no copy there, judges it alike.
func TestCopyGoneWhileUnschedulableNoLongerKeepsItsCluster(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.eastThenWest()
	web, _ := f.placedWebOnEast()
	grown := unschedulableWeb()
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(grown.Ref()), grown)
	if v := f.lastVerdictSent(); v.Status != schemas.VerdictUnschedulable {
		t.Fatalf("verdict %s %q, want Unschedulable", v.Status, v.Message)
	}
	f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", web.Ref()),
		&schemas.WorkloadStatus{Cluster: "east", Workload: web.Ref(), Gone: true})
	if wl := f.p.Snapshot().Workload(idOf(web.Ref())); len(wl.Kept) != 0 {
		t.Errorf("workload kept on %v once its copy is gone, want no cluster", wl.Kept)
	}
	f.deliver(schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), object("fleetflow.io/v1alpha1", "Cluster", "", "east",
		map[string]any{"name": "east"}, map[string]any{"spec": map[string]any{
			"kubeconfigSecretRef": map[string]any{"name": "east", "namespace": "fleetflow-system"},
			"taints":              []any{map[string]any{"key": "maintenance", "value": "true", "effect": "NoSchedule"}}}}))
	mark := len(f.pub.ofType(schemas.TypePlacementDecided))
	shrunk := deploymentVersion("web", "3", 1, nil)
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(shrunk.Ref()), shrunk)
	if got := f.decisions(mark); !equal(got, []string{"Apply west"}) {
		t.Errorf("decisions once it fits again = %v, want [Apply west]: east is tainted and runs no copy", got)
	}
}

// A restarted placer that reads, after the Apply of a workload placed nowhere since, that its copy went from its
// cluster, keeps it there no more than a running placer would: nor does its verdict say the copy runs there.
func TestRestoredPlacerDoesNotKeepAWorkloadWhereItsCopyWent(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.eastThenWest()
	web := deploymentVersion("web", "1", 1, nil)
	ref := web.Ref()
	grown := unschedulableWeb()
	placed := &schemas.PlacementVerdict{Workload: ref, Sequence: 5, Status: schemas.VerdictPlaced, Policy: "any", Clusters: []string{"east"}}
	f.readState(
		stateMessage{schemas.TypeWorkloadChanged, web},
		stateMessage{schemas.TypePlacementDecided, &schemas.PlacementDecided{DecisionID: "d/5/east", Workload: ref, Cluster: "east",
			Action: schemas.ActionApply, Sequence: 5, Object: web.Object, Policy: "any", Clusters: []string{"east"}, Verdict: placed}},
		stateMessage{schemas.TypeWorkloadChanged, grown},
		stateMessage{schemas.TypePlacementVerdict, &schemas.PlacementVerdict{Workload: ref, Sequence: 7,
			Status: schemas.VerdictUnschedulable, Policy: "any"}},
		stateMessage{schemas.TypeWorkloadStatus, &schemas.WorkloadStatus{Cluster: "east", Workload: ref, Gone: true}},
	)
	f.restoreAndPublish()
	if wl := f.p.Snapshot().Workload(idOf(ref)); wl.Placement != nil || len(wl.Kept) != 0 {
		t.Errorf("after the restart placement %+v, kept %v: want placed nowhere, kept nowhere", wl.Placement, wl.Kept)
	}
	for _, c := range f.p.ctrl.Copies(idOf(ref)) {
		if c.Cluster == "east" {
			t.Errorf("the Apply to east still stands after the restart, though its copy went: %+v", c)
		}
	}
}

// A workload that turns Unschedulable while it moves (its new copy applied, the old one kept until the new one is
// confirmed) keeps both copies running, and is kept on both clusters, as a placer restarted then finds it from the
// Applies it published: the running placer and the restarted one judge it alike.
func TestWorkloadUnschedulableWhileItMovesIsKeptWhereBothCopiesRun(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{PendingTimeout: time.Minute})
	f.eastThenWest()
	web, mark := f.placedWebOnEast()
	since := f.now.Add(-2 * time.Minute)
	f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", web.Ref()),
		&schemas.WorkloadStatus{Cluster: "east", Workload: web.Ref(), PendingPods: 1, PendingSince: &since})
	f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: f.now})
	if got := f.decisions(mark); !equal(got, []string{"Apply west"}) {
		t.Fatalf("decisions after its pods pended on east = %v, want [Apply west] (east deleted once west confirms)", got)
	}
	grown := unschedulableWeb()
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(grown.Ref()), grown)
	if v := f.lastVerdictSent(); v.Status != schemas.VerdictUnschedulable || !strings.Contains(v.Message, "the copy on east, west keeps running") {
		t.Fatalf("verdict %s %q, want Unschedulable with the copies on east and west running", v.Status, v.Message)
	}
	if wl := f.p.Snapshot().Workload(idOf(web.Ref())); !equal(wl.Kept, []string{"east", "west"}) {
		t.Errorf("workload kept on %v, want [east west]: both copies run", wl.Kept)
	}
}

// A workload placed nowhere for a while (a policy edit left it no cluster) keeps its copy running where it was,
// and once a cluster fits it again it is judged with that copy's pods as its own room and stays where it kept
// running, as a placed workload would: not Unschedulable against its own pods, nor moved (started again) to
// another cluster.
func TestWorkloadKeptRunningWhileUnschedulableStaysOnceItFitsAgain(t *testing.T) {
	tiers := func(first, second string) map[string]any {
		return map[string]any{"orderedClusterSelector": map[string]any{"tiers": []any{
			map[string]any{"matchLabels": map[string]any{"name": first}},
			map[string]any{"matchLabels": map[string]any{"name": second}},
		}}}
	}
	tests := []struct {
		name string
		// otherCPU is requested on east's node by pods of no placed workload.
		otherCPU int64
		// restored is the policy's spec once a cluster fits the workload again.
		restored map[string]any
	}{
		{name: "its pods are its own room", otherCPU: 2, restored: tiers("east", "west")},
		{name: "it stays where it kept running", restored: tiers("west", "east")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.eastThenWest()
			web := deploymentVersion("web", "1", 6, nil)
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
			if got := f.decisions(0); !equal(got, []string{"Apply east"}) {
				t.Fatalf("decisions = %v, want web on east", got)
			}
			f.confirm("east", web)
			// east reports web's six pods running on its node, beside the other pods.
			f.deliver(schemas.TypeNodeChanged, schemas.NodeSubject("east", "n1"), &schemas.NodeState{Cluster: "east", Name: "n1", Ready: true,
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")},
				Requested:   corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(6+tt.otherCPU, resource.DecimalSI)},
				Pods:        6 + int(tt.otherCPU), WorkloadPods: map[string]int{web.Ref().UID: 6},
				WorkloadRequested: map[string]corev1.ResourceList{web.Ref().UID: {corev1.ResourceCPU: resource.MustParse("6")}}})
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))
			f.policy("any", map[string]any{"clusterSelector": map[string]any{"matchLabels": map[string]any{"name": "nowhere"}}})
			if v := f.lastVerdictSent(); v.Status != schemas.VerdictUnschedulable || !strings.Contains(v.Message, "the copy on east keeps running") {
				t.Fatalf("verdict %s %q, want Unschedulable with the copy on east running", v.Status, v.Message)
			}
			f.policy("any", tt.restored)
			if got := f.decisions(mark); len(got) != 0 {
				t.Errorf("decisions once a cluster fits again = %v, want none: the copy on east runs this version", got)
			}
			if v := f.lastVerdictSent(); v.Status != schemas.VerdictPlaced || !equal(v.Clusters, []string{"east"}) {
				t.Errorf("verdict %s on %v (%q, reasons %v), want Placed on east", v.Status, v.Clusters, v.Message, v.Reasons)
			}
		})
	}
}

// A workload that fills the one cluster it fits, which stops answering for a while, is Unschedulable meanwhile (its
// copy keeps running there), and Placed there again once the cluster is back: its own pods are its room, and a
// NoSchedule taint put on the cluster meanwhile keeps new workloads off, not the one already there.
func TestWorkloadOnAClusterBackFromSilenceIsPlacedThereAgain(t *testing.T) {
	for _, tt := range []struct {
		name    string
		tainted bool
	}{{name: "untainted"}, {name: "tainted NoSchedule meanwhile", tainted: true}} {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{HeartbeatTimeout: 10 * time.Second})
			f.eastThenWestWith(nil)
			web := deploymentVersion("web", "1", 6, nil)
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
			f.confirm("east", web)
			f.deliver(schemas.TypeNodeChanged, schemas.NodeSubject("east", "n1"), &schemas.NodeState{Cluster: "east", Name: "n1", Ready: true,
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")},
				Requested:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
				Pods:        8, WorkloadPods: map[string]int{web.Ref().UID: 6},
				WorkloadRequested: map[string]corev1.ResourceList{web.Ref().UID: {corev1.ResourceCPU: resource.MustParse("6")}}})
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))

			silent := f.now.Add(15 * time.Second)
			f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: silent})
			if v := f.lastVerdictSent(); v.Status != schemas.VerdictUnschedulable {
				t.Fatalf("verdict while east is silent %s %q, want Unschedulable", v.Status, v.Message)
			}
			if tt.tainted {
				f.deliver(schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), object("fleetflow.io/v1alpha1", "Cluster", "", "east",
					map[string]any{"name": "east"}, map[string]any{"spec": map[string]any{
						"kubeconfigSecretRef": map[string]any{"name": "east", "namespace": "fleetflow-system"},
						"taints":              []any{map[string]any{"key": "maintenance", "value": "true", "effect": "NoSchedule"}}}}))
			}
			back := silent.Add(time.Second)
			f.heartbeat("east", back)
			f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: back})
			if got := f.decisions(mark); len(got) != 0 {
				t.Errorf("decisions = %v, want none: the copy on east runs this version", got)
			}
			if v := f.lastVerdictSent(); v.Status != schemas.VerdictPlaced || !equal(v.Clusters, []string{"east"}) {
				t.Errorf("verdict once east is back %s on %v (%q, reasons %v), want Placed on east", v.Status, v.Clusters, v.Message, v.Reasons)
			}
		})
	}
}

// A restarted placer finds a workload placed nowhere whose copy kept running from the Apply it published there,
// and judges it with that copy's pods as its own room, as the placer before it would have: once a cluster fits
// it again, it stays where it runs.
func TestRestoredPlacerKeepsAnUnschedulableWorkloadWhereItRuns(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.eastThenWest()
	web := deploymentVersion("web", "1", 6, nil)
	ref := web.Ref()
	placed := &schemas.PlacementVerdict{Workload: ref, Sequence: 5, Status: schemas.VerdictPlaced, Policy: "any", Clusters: []string{"east"}}
	f.readState(
		stateMessage{schemas.TypeWorkloadChanged, web},
		stateMessage{schemas.TypePlacementDecided, &schemas.PlacementDecided{DecisionID: "d/5/east", Workload: ref, Cluster: "east",
			Action: schemas.ActionApply, Sequence: 5, Object: web.Object, Policy: "any", Clusters: []string{"east"}, Verdict: placed}},
		stateMessage{schemas.TypePlacementVerdict, &schemas.PlacementVerdict{Workload: ref, Sequence: 7,
			Status: schemas.VerdictUnschedulable, Policy: "any"}},
		stateMessage{schemas.TypeNodeChanged, &schemas.NodeState{Cluster: "east", Name: "n1", Ready: true,
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")},
			Requested:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
			Pods:        8, WorkloadPods: map[string]int{ref.UID: 6},
			WorkloadRequested: map[string]corev1.ResourceList{ref.UID: {corev1.ResourceCPU: resource.MustParse("6")}}}},
	)
	mark := f.restoreAndPublish()
	if got := f.decisions(mark); len(got) != 0 {
		t.Errorf("decisions after the restart = %v, want none: the copy on east runs this version", got)
	}
	if wl := f.p.Snapshot().Workload(idOf(ref)); wl.Placement == nil || !equal(wl.Placement.Clusters, []string{"east"}) {
		t.Errorf("placement after the restart %+v, want east", wl.Placement)
	}
}

// A workload moved off a cluster where its pods pended, then on a cluster that goes silent, fails over back to
// the first one when no other cluster takes it, rather than stay on the silent cluster for good; placed there
// again, it no longer keeps off it, so its pods pending there move it again.
func TestWorkloadMovedOffFailsOverBackWhenNothingElseFits(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{PendingTimeout: time.Minute, HeartbeatTimeout: 10 * time.Second})
	f.eastThenWest()
	web, mark := f.placedWebOnEast()
	since := f.now.Add(-2 * time.Minute)
	f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", web.Ref()),
		&schemas.WorkloadStatus{Cluster: "east", Workload: web.Ref(), PendingPods: 1, PendingSince: &since})
	f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: f.now})
	f.confirm("west", web)
	if got := f.decisions(mark); !equal(got, []string{"Apply west", "Delete east"}) {
		t.Fatalf("decisions after its pods pended on east = %v, want [Apply west Delete east]", got)
	}
	f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", web.Ref()),
		&schemas.WorkloadStatus{Cluster: "east", Workload: web.Ref(), Gone: true})
	mark = len(f.pub.ofType(schemas.TypePlacementDecided))

	later := f.now.Add(15 * time.Second)
	f.heartbeat("east", later)
	f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: later})
	if got := f.decisions(mark); !equal(got, []string{"Apply east", "Delete west"}) {
		t.Fatalf("decisions after west went silent = %v, want [Apply east Delete west]", got)
	}
	if v := f.pub.ofType(schemas.TypePlacementDecided)[mark].payload(t).(*schemas.PlacementDecided).Verdict; v == nil ||
		!strings.Contains(v.Message, "goes back to east") {
		t.Errorf("verdict carried by the Apply to east %+v, want it to say the workload goes back to east", v)
	}
	if wl := f.p.Snapshot().Workload(idOf(web.Ref())); len(wl.Avoid) != 0 {
		t.Errorf("workload keeps off %v, want no cluster once it runs on east again", wl.Avoid)
	}
}

// A workload deleted while its cluster is down, and created again under its name before the cluster is back,
// still has the copy of the deleted one deleted there once the cluster answers: the Delete sent again names the
// deleted workload's uid, whose copy it is. Named after the new workload, the applier left the copy alone (not
// its workload's), and it ran on for good. The new workload placed on that cluster is applied there, not taken
// for applied by the deleted one's Apply.
func TestCopyOfAWorkloadDeletedWhileItsClusterWasDownGoesThoughItsNameIsTaken(t *testing.T) {
	for _, tt := range []struct {
		name string
		// westToo registers a second cluster, which takes the new workload while east is down.
		westToo bool
		// createdFirst creates the new workload before the applier gives up on the Delete.
		createdFirst bool
		// unschedulable has the new workload ask for more than any cluster has.
		unschedulable bool
		want          []string
	}{
		{name: "the new workload elsewhere", westToo: true, want: []string{"Delete east"}},
		{name: "the new workload elsewhere before the Delete was given up on", westToo: true, createdFirst: true, want: []string{"Delete east"}},
		{name: "the new workload on the same cluster", want: []string{"Apply east"}},
		// The new workload fits no cluster: the deleted one's copy is deleted all the same, not kept running as
		// the new one's.
		{name: "the new workload placed nowhere", westToo: true, unschedulable: true, want: []string{"Delete east"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{HeartbeatTimeout: 10 * time.Second})
			f.policy("any", map[string]any{})
			f.cluster("east", nil)
			if tt.westToo {
				f.cluster("west", nil)
			}
			web := deployment("web")
			ref := web.Ref()
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(ref), web)
			f.confirm("east", web)

			silent := f.now.Add(15 * time.Second)
			if tt.westToo {
				f.heartbeat("west", silent)
			}
			f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: silent})
			mark := len(f.pub.ofType(schemas.TypePlacementDecided))
			f.deliver(schemas.TypeWorkloadDeleted, schemas.WorkloadSubject(ref), &schemas.ObjectDeleted{Workload: ref})
			deleteSeq := f.pub.ofType(schemas.TypePlacementDecided)[mark].payload(t).(*schemas.PlacementDecided).Sequence
			gaveUp := func() {
				f.deliver(schemas.TypePlacementFailed, schemas.PlacementSubject("east", ref), &schemas.PlacementFailed{
					DecisionID: "delete", Workload: ref, Cluster: "east", Action: schemas.ActionDelete, Sequence: deleteSeq,
					Error: "the cluster did not answer", Attempts: schemas.MaxDeliver})
			}
			if !tt.createdFirst {
				gaveUp()
			}
			again := deployment("web")
			if tt.unschedulable {
				firstContainer(again.Object)["resources"] = map[string]any{"requests": map[string]any{"cpu": "100"}}
			}
			again.Object["metadata"].(map[string]any)["uid"] = "uid-web-again"
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(again.Ref()), again)
			if tt.westToo && !tt.unschedulable {
				f.confirm("west", again)
			}
			if tt.createdFirst {
				gaveUp()
			}
			if tt.unschedulable {
				if got := f.decisions(mark + 1); len(got) != 0 {
					t.Errorf("decisions while east is down = %v, want none", got)
				}
				if v := f.lastVerdictSent(); v.Status != schemas.VerdictUnschedulable || strings.Contains(v.Message, "keeps running") {
					t.Errorf("verdict of the new workload %s %q, want Unschedulable saying no copy of it runs", v.Status, v.Message)
				}
			}
			mark = len(f.pub.ofType(schemas.TypePlacementDecided))

			back := silent.Add(time.Second)
			f.heartbeat("east", back)
			if tt.westToo {
				f.heartbeat("west", back)
			}
			f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: back})
			if got := f.decisions(mark); !equal(got, tt.want) {
				t.Fatalf("decisions once east is back = %v, want %v", got, tt.want)
			}
			d := f.pub.ofType(schemas.TypePlacementDecided)[mark].payload(t).(*schemas.PlacementDecided)
			wantUID := again.Ref().UID
			if d.Action == schemas.ActionDelete {
				wantUID = ref.UID
			}
			if d.Workload.UID != wantUID {
				t.Errorf("%s on east names uid %s, want %s", d.Action, d.Workload.UID, wantUID)
			}
		})
	}
}

// A restarted placer that reads, after a workload's object, the Delete of the copy an earlier workload of its name
// left on a cluster that was down (sent again once the cluster was back, naming that workload's uid), keeps the
// entry the current workload's: its statuses, reports and decisions go by its own uid.
func TestRestoredPlacerKeepsTheWorkloadOfANameThroughAnEarlierOnesDelete(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.eastThenWest()
	earlier := deployment("web").Ref()
	web := deployment("web")
	web.Object["metadata"].(map[string]any)["uid"] = "uid-web-again"
	ref := web.Ref()
	placed := &schemas.PlacementVerdict{Workload: ref, Sequence: 5, Status: schemas.VerdictPlaced, Policy: "any", Clusters: []string{"west"}}
	f.readState(
		stateMessage{schemas.TypeWorkloadChanged, web},
		stateMessage{schemas.TypePlacementDecided, &schemas.PlacementDecided{DecisionID: "d/5/west", Workload: ref, Cluster: "west",
			Action: schemas.ActionApply, Sequence: 5, Object: web.Object, Policy: "any", Clusters: []string{"west"}, Verdict: placed}},
		stateMessage{schemas.TypePlacementDecided, &schemas.PlacementDecided{DecisionID: "d/7/east", Workload: earlier, Cluster: "east",
			Action: schemas.ActionDelete, Sequence: 7}},
	)
	mark := f.restoreAndPublish()
	if got := f.decisions(mark); len(got) != 0 {
		t.Errorf("decisions after the restart = %v, want none", got)
	}
	id, ok := f.p.ctrl.WorkloadOfUID(ref.UID)
	if !ok || id != idOf(ref) {
		t.Fatalf("the workload of uid %s is not tracked by it after the restart (tracked as %q)", ref.UID, id)
	}
	if wl := f.p.Snapshot().Workload(id); wl.Placement == nil || !equal(wl.Placement.Clusters, []string{"west"}) {
		t.Errorf("placement after the restart %+v, want west", wl.Placement)
	}
}

// A workload moved off a cluster (its pods pended there) keeps off it while its spec stays the same, through a
// change of labels too; a new version (a new generation: fewer replicas, smaller pods, a fix) may go back, and
// its verdict no longer says it keeps off the cluster.
func TestNewVersionMayGoBackToAClusterItWasMovedOff(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{PendingTimeout: time.Minute})
	f.eastThenWest()
	web, mark := f.placedWebOnEast()
	since := f.now.Add(-2 * time.Minute)
	f.deliver(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", web.Ref()),
		&schemas.WorkloadStatus{Cluster: "east", Workload: web.Ref(), PendingPods: 1, PendingSince: &since})
	f.deliver(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: f.now})
	f.confirm("west", web)
	if got := f.decisions(mark); !equal(got, []string{"Apply west", "Delete east"}) {
		t.Fatalf("decisions after its pods pended on east = %v, want [Apply west Delete east]", got)
	}
	id := idOf(web.Ref())
	version := func(rv string, generation int64, labels map[string]any) *schemas.ObjectChanged {
		return deploymentVersion("web", rv, 1, func(o map[string]any) {
			meta := o["metadata"].(map[string]any)
			meta["generation"] = generation
			if labels != nil {
				meta["labels"] = labels
			}
		})
	}
	steps := []struct {
		name      string
		change    *schemas.ObjectChanged
		wantAvoid bool
	}{
		{"its first version seen", version("2", 1, nil), true},
		{"its labels changed", version("3", 1, map[string]any{"team": "web"}), true},
		{"a new generation", version("4", 2, map[string]any{"team": "web"}), false},
	}
	for _, step := range steps {
		f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(step.change.Ref()), step.change)
		stored := f.p.Snapshot().Workload(id)
		if avoided := stored.Avoid["east"] != ""; avoided != step.wantAvoid {
			t.Errorf("%s: keeps off east = %t (%q), want %t", step.name, avoided, stored.Avoid["east"], step.wantAvoid)
		}
	}
	if v := f.lastVerdictSent(); v.ReasonCodes["east"] == string(structs.RejectAvoided) {
		t.Errorf("verdict of the new version still keeps off east: %q", v.Reasons["east"])
	}
}

// A verdict saying where a workload placed nowhere keeps running names no cluster that refused its only Apply
// there (its applier gave up, none confirmed before): nothing of this workload runs there. One whose earlier
// version was applied there, and whose update was refused, still runs that version. Before, a workload whose
// Apply a cluster's admission refused, then edited so its RI could not read it (or past every cluster), was said
// to keep running the version applied before on the cluster that had refused it.
func TestVerdictDoesNotSayARefusedCopyRuns(t *testing.T) {
	unreadable := func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = 1.5 }
	tooBig := func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = int64(1000) }
	tests := []struct {
		name          string
		ranBefore     bool // an earlier version was applied on east, and the refused Apply was an update
		edit          func(o map[string]any)
		want          schemas.VerdictStatus
		saysItRunsOne bool
	}{
		{"refused, then an edit its RI cannot read", false, unreadable, schemas.VerdictInvalid, false},
		{"refused, then an edit no cluster fits", false, tooBig, schemas.VerdictUnschedulable, false},
		{"update refused, then an edit its RI cannot read", true, unreadable, schemas.VerdictInvalid, true},
		{"update refused, then an edit no cluster fits", true, tooBig, schemas.VerdictUnschedulable, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlacerFixture(t, PlacerConfig{})
			f.eastThenWest()
			web := deployment("web")
			if tt.ranBefore {
				f.placedWebOnEast()
				web = deploymentVersion("web", "2", 1, func(o map[string]any) { firstContainer(o)["image"] = "web:2" })
			}
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
			f.applyGaveUp("east", web, f.lastDecision().Sequence, "admission refused it")
			edited := deploymentVersion("web", "3", 1, tt.edit)
			f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(edited.Ref()), edited)
			v := f.lastVerdictSent()
			if says := strings.Contains(v.Message, "the copy on east keeps running"); v.Status != tt.want || says != tt.saysItRunsOne {
				t.Errorf("verdict %s %q, want %s, saying the copy on east keeps running: %v", v.Status, v.Message, tt.want, tt.saysItRunsOne)
			}
		})
	}
}

// TestFleetStatsCountWhatIsNotPlacedAndWhy: /metrics counts a workload that fits nowhere under the reason its
// last verdict gave, and leaves it out once it is placed; each cluster's capacity is in base units (CPU in
// cores) and its free amount falls by what the placed workload asks.
func TestFleetStatsCountWhatIsNotPlacedAndWhy(t *testing.T) {
	f := newPlacerFixture(t, PlacerConfig{})
	f.policy("any", map[string]any{})
	f.cluster("east", nil)
	cpuOf := func(stats observe.FleetStats) (allocatable, free float64) {
		t.Helper()
		for _, c := range stats.Capacity {
			if c.Cluster == "east" && c.Resource == "cpu" {
				return c.Allocatable, c.Free
			}
		}
		t.Fatalf("capacity %+v has no cpu entry for east", stats.Capacity)
		return 0, 0
	}

	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(deployment("web").Ref()), eventtest.Deployment("web", "100"))
	stats := f.p.FleetStats()
	if want := map[string]int{"Capacity": 1}; !reflect.DeepEqual(stats.UnplacedByReason, want) || stats.Unplaced != 1 {
		t.Errorf("unplaced %d by reason %v, want 1 by %v", stats.Unplaced, stats.UnplacedByReason, want)
	}
	if allocatable, free := cpuOf(stats); allocatable != 8 || free != 8 {
		t.Errorf("east cpu allocatable %v free %v, want 8 and 8", allocatable, free)
	}

	shrunk := eventtest.Deployment("web", "1500m")
	shrunk.Object["metadata"].(map[string]any)["resourceVersion"] = "2"
	f.deliver(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(shrunk.Ref()), shrunk)
	stats = f.p.FleetStats()
	if len(stats.UnplacedByReason) != 0 || stats.Placed != 1 {
		t.Errorf("placed %d, unplaced by reason %v; want the workload placed and no reason left", stats.Placed, stats.UnplacedByReason)
	}
	if _, free := cpuOf(stats); free != 6.5 {
		t.Errorf("east cpu free %v, want 6.5 (8 less the 1.5 the placed workload reserves)", free)
	}
}
