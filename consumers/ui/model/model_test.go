package model_test

import (
	"slices"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/consumers/ui/model"
	"github.com/fleetflow/fleetflow/consumers/ui/model/modeltest"
	"github.com/fleetflow/fleetflow/schemas"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func resource(t *testing.T, c model.Cluster, name string) model.Resource {
	t.Helper()
	for _, r := range c.Resources {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("cluster %s has no %s bar: %+v", c.Name, name, c.Resources)
	return model.Resource{}
}

func TestClustersSumNodesAndTellReadiness(t *testing.T) {
	f := modeltest.New(now).Cluster("east", 5*time.Second).Cluster("west", 2*time.Minute).
		Node("east", "g1", 64, 512, 8, 2).Node("east", "g2", 64, 512, 8, 8).Node("east", "c1", 32, 128, 0, 0)
	// A node that changes replaces what it counted; one that goes counts no more.
	f.Node("east", "g2", 64, 512, 8, 4)
	f.Node("west", "g9", 64, 512, 8, 0)
	f.Apply(schemas.TypeNodeDeleted, &schemas.NodeDeleted{Cluster: "west", Name: "g9"}, false)

	clusters := f.Model.Clusters()
	if got := []string{clusters[0].Name, clusters[1].Name}; !slices.Equal(got, []string{"east", "west"}) {
		t.Fatalf("clusters %v, want east, west", got)
	}
	east, west := clusters[0], clusters[1]
	if !east.Ready || east.HeartbeatAge != 5*time.Second {
		t.Errorf("east: Ready %v, heartbeat age %s; want Ready, 5s", east.Ready, east.HeartbeatAge)
	}
	if west.Ready {
		t.Errorf("west beat 2m ago, past the 30s timeout, and is shown Ready")
	}
	if east.Nodes != 3 || east.GPUNodes != 2 || west.Nodes != 0 {
		t.Errorf("nodes: east %d (%d GPU), west %d; want 3 (2), 0", east.Nodes, east.GPUNodes, west.Nodes)
	}
	gpu := resource(t, east, modeltest.GPU)
	if gpu.Allocatable != 16 || gpu.Requested != 6 {
		t.Errorf("east GPUs: %d of %d requested, want 6 of 16", gpu.Requested, gpu.Allocatable)
	}
	cpu := resource(t, east, "cpu")
	if cpu.Allocatable != 160_000 || cpu.Requested != 36_000 || cpu.Format(cpu.Allocatable) != "160" {
		t.Errorf("east cpu: %d of %d millicores (%s), want 36000 of 160000 (160)", cpu.Requested, cpu.Allocatable, cpu.Format(cpu.Allocatable))
	}
	if mem := resource(t, east, "memory"); mem.Format(mem.Allocatable) != "1152.0Gi" {
		t.Errorf("east memory allocatable %s, want 1152.0Gi", mem.Format(mem.Allocatable))
	}
	if names := []string{east.Resources[0].Name, east.Resources[1].Name, east.Resources[2].Name}; !slices.Equal(names, []string{"cpu", "memory", modeltest.GPU}) {
		t.Errorf("bars in order %v, want cpu, memory, then GPUs", names)
	}
	nodes, ok := f.Model.GPUNodes("east")
	want := []model.GPUNode{{Name: "g1", GPUs: 8, Free: 6}, {Name: "g2", GPUs: 8, Free: 4}}
	if !ok || !slices.Equal(nodes, want) {
		t.Errorf("east GPU nodes %+v, want %+v", nodes, want)
	}
	if _, ok := f.Model.GPUNodes("nowhere"); ok {
		t.Error("an unknown cluster has GPU nodes")
	}
}

func TestHeartbeatCopiedLateCountsFromItsOwnTime(t *testing.T) {
	m := model.New(model.Options{Now: func() time.Time { return now }})
	// The state stream copied a heartbeat of 40s ago just now: the cluster is silent, not fresh.
	m.Apply(model.Input{Type: schemas.TypeClusterHeartbeat, Stored: now,
		Payload: &schemas.ClusterHeartbeat{Cluster: "east", Time: now.Add(-40 * time.Second)}})
	if c := m.Clusters()[0]; c.Ready || c.HeartbeatAge != 40*time.Second {
		t.Errorf("Ready %v, age %s; want NotReady, 40s", c.Ready, c.HeartbeatAge)
	}
}

func TestWorkloadsKeepTheNewestVerdict(t *testing.T) {
	f := modeltest.New(now)
	// The state stream may hold the verdict before the workload's own, newer, message.
	f.Apply(schemas.TypePlacementVerdict, modeltest.Verdict("team-a", "train", 2, 4, 8, []string{"east"}, nil), false)
	f.Workload("team-a", "train", time.Hour)
	f.Apply(schemas.TypePlacementVerdict, modeltest.Verdict("team-a", "train", 1, 4, 8, nil, map[string]string{"east": "full"}), false)
	f.Apply(schemas.TypeWorkloadStatus, &schemas.WorkloadStatus{Cluster: "east", Workload: modeltest.Ref("team-a", "train"),
		Status: map[string]any{"conditions": []any{map[string]any{"type": "Running", "status": "True"}}}}, false)

	d, ok := f.Model.Workload(modeltest.Ref("team-a", "train").Key())
	if !ok {
		t.Fatal("the workload is unknown")
	}
	if d.Verdict.Sequence != 2 || d.Workload.Verdict != "Placed" || !slices.Equal(d.Clusters, []string{"east"}) {
		t.Errorf("verdict %d %s on %v, want the newer one, 2 Placed on east", d.Verdict.Sequence, d.Workload.Verdict, d.Clusters)
	}
	if d.Pods != 4 || d.GPUs != 8 || d.Phase != "Running" || d.Age != time.Hour {
		t.Errorf("pods %d, GPUs %d, phase %q, age %s; want 4, 8, Running, 1h", d.Pods, d.GPUs, d.Phase, d.Age)
	}
}

func TestDeletedWorkloadStaysGone(t *testing.T) {
	f := modeltest.New(now).Workload("team-a", "gone", time.Minute)
	f.Apply(schemas.TypeWorkloadDeleted, &schemas.ObjectDeleted{Workload: modeltest.Ref("team-a", "gone")}, false)
	// A decision the state stream still holds of it comes after its deletion.
	f.Apply(schemas.TypePlacementDecided, &schemas.PlacementDecided{DecisionID: "d", Workload: modeltest.Ref("team-a", "gone"),
		Cluster: "east", Action: schemas.ActionDelete, Sequence: 3}, false)
	if _, ok := f.Model.Workload(modeltest.Ref("team-a", "gone").Key()); ok {
		t.Error("a deleted workload is shown")
	}
	if p, _ := f.Model.Workloads(model.Filter{}, 1, 10); p.Total != 0 {
		t.Errorf("%d workloads listed, want none", p.Total)
	}
}

func TestWorkloadsFilterAndPage(t *testing.T) {
	f := modeltest.New(now)
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		f.Workload("team-x", name, time.Duration(i+1)*time.Minute)
		var clusters []string
		if i%2 == 0 {
			clusters = []string{"east"}
		}
		f.Apply(schemas.TypePlacementVerdict, modeltest.Verdict("team-x", name, 1, int64(i+1), int64(2*i), clusters, nil), false)
	}
	f.Workload("team-y", "pending", 10*time.Minute)
	for _, tc := range []struct {
		name   string
		filter model.Filter
		want   []string
	}{
		{"all", model.Filter{}, []string{"a", "b", "c", "d", "e", "pending"}},
		{"namespace, any case", model.Filter{Namespace: "TEAM-X"}, []string{"a", "b", "c", "d", "e"}},
		{"verdict", model.Filter{Verdict: "unsched"}, []string{"b", "d"}},
		{"pending", model.Filter{Verdict: model.VerdictPending}, []string{"pending"}},
		{"cluster", model.Filter{Cluster: "east"}, []string{"a", "c", "e"}},
		{"pods at least", model.Filter{Pods: ">=4"}, []string{"d", "e"}},
		{"GPUs exactly", model.Filter{GPUs: "2"}, []string{"b"}},
		{"younger than", model.Filter{Age: "<150s"}, []string{"a", "b"}},
		{"kind and name", model.Filter{Kind: "pytorch", Name: "c"}, []string{"c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := f.Model.Workloads(tc.filter, 1, 50)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range p.Rows {
				got = append(got, r.Name)
			}
			if !slices.Equal(got, tc.want) || p.Total != len(tc.want) {
				t.Errorf("got %v (total %d), want %v", got, p.Total, tc.want)
			}
		})
	}
	p, err := f.Model.Workloads(model.Filter{}, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	if p.Number != 2 || p.Pages != 2 || len(p.Rows) != 2 || p.Rows[0].Name != "e" {
		t.Errorf("page 2 of size 4: number %d of %d, %d rows from %q; want 2 of 2, 2 rows from e", p.Number, p.Pages, len(p.Rows), p.Rows[0].Name)
	}
	if p, _ := f.Model.Workloads(model.Filter{}, 9, 4); p.Number != 2 {
		t.Errorf("page 9 of 2 shows page %d, want the last", p.Number)
	}
}

func TestBadFilterNamesItsColumn(t *testing.T) {
	m := model.New(model.Options{})
	for _, f := range []model.Filter{{Pods: ">=many"}, {GPUs: "x"}, {Age: "<yesterday"}} {
		if _, err := m.Workloads(f, 1, 10); err == nil {
			t.Errorf("filter %+v accepted", f)
		}
	}
	_, err := m.Workloads(model.Filter{Age: "<soon"}, 1, 10)
	if err == nil || err.Error()[:10] != "filter age" {
		t.Errorf("error %v does not start with the column", err)
	}
}

func TestLiveFeedGetsLiveEntriesOnce(t *testing.T) {
	f := modeltest.New(now).Workload("team-a", "train", time.Minute)
	entries, stop := f.Model.Subscribe()
	defer stop()
	decided := &schemas.PlacementDecided{DecisionID: "d1", Workload: modeltest.Ref("team-a", "train"), Cluster: "east",
		Action: schemas.ActionApply, Sequence: 1, Object: map[string]any{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
			"metadata": map[string]any{"name": "train", "namespace": "team-a"}}}
	f.Model.Apply(model.Input{ID: "x1", Type: schemas.TypePlacementDecided, Payload: decided, Stored: now}) // from the state stream
	f.Model.Apply(model.Input{ID: "x1", Type: schemas.TypePlacementDecided, Payload: decided, Stored: now, Live: true})
	f.Model.Apply(model.Input{ID: "x2", Type: schemas.TypePlacementApplied, Stored: now.Add(time.Second), Live: true,
		Payload: &schemas.PlacementApplied{DecisionID: "d1", Workload: modeltest.Ref("team-a", "train"), Cluster: "east",
			Action: schemas.ActionApply, Sequence: 1}})
	select {
	case e := <-entries:
		if e.ID != "x2" || e.What != "Applied" || e.Cluster != "east" || e.Workload != "PyTorchJob.kubeflow.org/team-a/train" {
			t.Errorf("live entry %+v, want x2 Applied on east", e)
		}
	default:
		t.Fatal("no live entry")
	}
	select {
	case e := <-entries:
		t.Errorf("a second live entry %+v: the decision read from the state stream was handed out again", e)
	default:
	}
	recent := f.Model.Recent(10)
	if len(recent) != 2 || recent[0].ID != "x2" || recent[1].ID != "x1" {
		t.Errorf("recent %+v, want x2 then x1", recent)
	}
	d, _ := f.Model.Workload(modeltest.Ref("team-a", "train").Key())
	if len(d.OnClusters) != 1 || d.OnClusters[0].Outcome != "applied" || d.OnClusters[0].Action != "Apply" {
		t.Errorf("on clusters %+v, want east: Apply, applied", d.OnClusters)
	}
}
