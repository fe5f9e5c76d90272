package scheduler

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"

	"github.com/fleetflow/fleetflow/placement/structs"
)

// refPacker is the straightforward packer the optimized one must agree with: no memos, no chunk summaries in
// diagnose, every node's adjustment read through maps.
type refPacker struct {
	rt       *structs.ResourceTable
	c        *structs.ClusterCapacity
	g        *gang
	ownTotal structs.Vector
	used     map[nodeKey]structs.Vector
}

func (p *refPacker) pack() ([]ownedAssignment, string) {
	for _, v := range p.g.own {
		p.ownTotal = p.ownTotal.Add(v)
	}
	items := slices.Clone(p.g.items)
	size := func(it item) float64 {
		var share float64
		for i, want := range it.group.Request {
			if i == structs.ResourcePods || want == 0 {
				continue
			}
			if alloc := p.c.Allocatable.Get(i); alloc > 0 {
				share = max(share, float64(want)/float64(alloc))
			}
		}
		return share
	}
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(size(b), size(a)) })
	var out []ownedAssignment
	for _, it := range items {
		pos := nodeKey{}
		placed := int64(0)
		for placed < it.count {
			var ok bool
			if pos, ok = p.next(pos, it.group); !ok {
				return nil, p.diagnose(it, placed)
			}
			n := int64(0)
			for placed < it.count && p.fits(pos, it.group) {
				p.take(pos, it.group.Request)
				n++
				placed++
			}
			out = append(out, ownedAssignment{owner: it.owner, Assignment: structs.Assignment{
				Cluster: p.c.Name, Node: p.c.Chunks[pos.chunk].Nodes[pos.node].Node.Name, Component: it.group.Component,
				Pods: n, PodRequest: it.group.Request}})
		}
	}
	return out, ""
}

func (p *refPacker) next(pos nodeKey, g *structs.PodGroup) (nodeKey, bool) {
	for ; pos.chunk < len(p.c.Chunks); pos = (nodeKey{chunk: pos.chunk + 1}) {
		ch := p.c.Chunks[pos.chunk]
		mayFit := true
		for r, want := range g.Request {
			if want > 0 && want > ch.MaxFree.Get(r)+p.ownTotal.Get(r) {
				mayFit = false
			}
		}
		if !mayFit {
			continue
		}
		for ; pos.node < len(ch.Nodes); pos.node++ {
			if p.fits(pos, g) {
				return pos, true
			}
		}
	}
	return pos, false
}

func (p *refPacker) fits(k nodeKey, g *structs.PodGroup) bool {
	nc := p.c.Chunks[k.chunk].Nodes[k.node]
	if !isAllowed(nc.Node, g) {
		return false
	}
	plus, minus := p.g.own[nc.Node.Name], p.used[k]
	for r, want := range g.Request {
		if want > 0 && want > nc.Free.Get(r)+plus.Get(r)-minus.Get(r) {
			return false
		}
	}
	return true
}

func (p *refPacker) take(k nodeKey, req structs.Vector) {
	if p.used == nil {
		p.used = map[nodeKey]structs.Vector{}
	}
	if p.used[k] == nil {
		p.used[k] = make(structs.Vector, p.rt.Len())
	}
	p.used[k].AddInPlace(req, 1)
}

// diagnose scans every node of the cluster.
func (p *refPacker) diagnose(it item, placed int64) string {
	g := it.group
	who := "pod " + g.Component
	if placed > 0 {
		who = fmt.Sprintf("pod %s (%d of %d placed)", g.Component, placed, it.count)
	}
	rejected := map[string]int{}
	var rejectOrder []string
	allowedNodes := 0
	largest := make(structs.Vector, len(g.Request))
	largestNode := make([]string, len(g.Request))
	for ci, ch := range p.c.Chunks {
		for j, nc := range ch.Nodes {
			if !isAllowed(nc.Node, g) {
				why := allowed(nc.Node, g)
				if rejected[why] == 0 {
					rejectOrder = append(rejectOrder, why)
				}
				rejected[why]++
				continue
			}
			allowedNodes++
			plus, minus := p.g.own[nc.Node.Name], p.used[nodeKey{ci, j}]
			for r := range g.Request {
				free := nc.Free.Get(r) + plus.Get(r) - minus.Get(r)
				if free > largest[r] || largestNode[r] == "" {
					largest[r], largestNode[r] = free, nc.Node.Name
				}
			}
		}
	}
	parts := make([]string, len(rejectOrder))
	for i, why := range rejectOrder {
		parts[i] = fmt.Sprintf("%d %s", rejected[why], rejectPhrase(why, rejected[why]))
	}
	notAllowed := strings.Join(parts, ", ")
	if allowedNodes == 0 {
		if p.c.NodeCount == 0 {
			return who + " fits no node: the cluster has no nodes"
		}
		return who + " fits no node: " + notAllowed
	}
	others := ""
	if len(rejectOrder) > 0 {
		others = "; " + notAllowed
	}
	for r, want := range g.Request {
		if want > 0 && want > largest[r] {
			return fmt.Sprintf("%s (%s %s) fits no node: largest free %s on %s%s", who, p.rt.Name(r),
				p.rt.Quantity(r, want), p.rt.Quantity(r, max(0, largest[r])), largestNode[r], others)
		}
	}
	return fmt.Sprintf("%s (%s) fits no node: none of the %d allowed nodes has all of it free at once%s",
		who, p.rt.Format(g.Request), allowedNodes, others)
}

var (
	gpuTaint   = corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}
	maintTaint = corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}
)

// drawVector draws a free amount or a request: CPU in steps of 500m, memory in GiB, pods and GPUs in units.
func drawVector(t *rapid.T, rt *structs.ResourceTable, label string, pods int) structs.Vector {
	v := make(structs.Vector, rt.Len())
	v[structs.ResourceCPU] = int64(rapid.IntRange(0, 8).Draw(t, label+"CPU")) * 500
	v[structs.ResourceMemory] = int64(rapid.IntRange(0, 4).Draw(t, label+"Mem")) << 30
	v[structs.ResourcePods] = int64(pods)
	gpu, _ := rt.Index("nvidia.com/gpu")
	v[gpu] = int64(rapid.IntRange(0, 8).Draw(t, label+"GPU"))
	return v
}

// drawCluster draws a cluster of nodes that differ in zone, GPU taint, maintenance taint and cordoning, cut into
// chunks of a drawn size so that even small clusters have several chunks. Every chunk's eligibility memo for
// each constraint of constraints is filled, then the chunks are copied over the same Node objects with new free
// amounts, as a write that reserves capacity does, so the memos the packer reads are inherited ones.
func drawCluster(t *rapid.T, rt *structs.ResourceTable, constraints []*structs.PodGroup) *structs.ClusterCapacity {
	n := rt.Len()
	count := rapid.IntRange(0, 60).Draw(t, "nodes")
	nodes := make([]*structs.NodeCapacity, count)
	for i := range nodes {
		node := &structs.Node{Cluster: "c", Name: fmt.Sprintf("n%03d", i),
			Labels:        structs.NewNodeLabels(map[string]string{"zone": rapid.SampledFrom([]string{"a", "b"}).Draw(t, "zone")}),
			Unschedulable: rapid.IntRange(0, 9).Draw(t, "cordon") == 0}
		if rapid.Bool().Draw(t, "gpuNode") {
			node.Taints = append(node.Taints, gpuTaint)
		}
		if rapid.IntRange(0, 9).Draw(t, "maint") == 0 {
			node.Taints = append(node.Taints, maintTaint)
		}
		node.Allocatable = drawVector(t, rt, "alloc", rapid.IntRange(0, 4).Draw(t, "allocPods"))
		nodes[i] = &structs.NodeCapacity{Node: node, Free: drawVector(t, rt, "free", rapid.IntRange(0, 4).Draw(t, "freePods"))}
	}
	size := rapid.IntRange(1, 16).Draw(t, "chunkSize")
	c := &structs.ClusterCapacity{Name: "c"}
	for part := range slices.Chunk(nodes, size) {
		old := &structs.NodeChunk{Nodes: part}
		old.Summarize(n)
		for _, g := range constraints {
			if el := eligibilityOf(old, g, memoKey(g)); el.count > 0 {
				freeOf(old, el, memoKey(g))
			}
		}
		ch := &structs.NodeChunk{Nodes: make([]*structs.NodeCapacity, len(part))}
		for j, nc := range part {
			ch.Nodes[j] = &structs.NodeCapacity{Node: nc.Node, Free: drawVector(t, rt, "newFree", rapid.IntRange(0, 4).Draw(t, "newFreePods"))}
		}
		ch.InheritNodeMemos(old)
		ch.Summarize(n)
		c.Chunks = append(c.Chunks, ch)
	}
	c.Summarize(n)
	return c
}

// drawGang draws up to three pod groups, each with or without a zone selector and a GPU toleration.
func drawGang(t *rapid.T, rt *structs.ResourceTable) *gang {
	g := &gang{demand: make(structs.Vector, rt.Len())}
	for i := range rapid.IntRange(1, 3).Draw(t, "groups") {
		pg := &structs.PodGroup{Component: fmt.Sprintf("comp%d", i), Count: int64(rapid.IntRange(1, 6).Draw(t, "count")),
			Request: drawVector(t, rt, "req", 1)}
		if rapid.Bool().Draw(t, "selector") {
			pg.NodeSelector = map[string]string{"zone": "a"}
		}
		if rapid.Bool().Draw(t, "tolerates") {
			pg.Tolerations = []corev1.Toleration{{Key: gpuTaint.Key, Operator: corev1.TolerationOpExists}}
		}
		pg.ConstraintKey = fmt.Sprintf("selector=%v tolerations=%d", pg.NodeSelector, len(pg.Tolerations))
		g.items = append(g.items, item{owner: i, group: pg, count: pg.Count})
		g.demand.AddInPlace(pg.Request, pg.Count)
	}
	return g
}

// TestPackMatchesReference packs random gangs on random clusters, with and without reservations of the gang's
// own, and checks the assignments and the reason a gang does not fit against the reference packer, which reads
// every node of the cluster.
func TestPackMatchesReference(t *testing.T) {
	rt := structs.NewResourceTable().With(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")})
	rapid.Check(t, func(t *rapid.T) {
		g := drawGang(t, rt)
		var constraints []*structs.PodGroup
		for _, it := range g.items {
			constraints = append(constraints, it.group)
		}
		c := drawCluster(t, rt, constraints)
		if c.NodeCount > 0 && rapid.IntRange(0, 2).Draw(t, "hasOwn") == 0 {
			g.own = map[string]structs.Vector{}
			for range rapid.IntRange(1, 3).Draw(t, "ownNodes") {
				// Names past the last node stand for reserved nodes that have gone away since.
				name := fmt.Sprintf("n%03d", rapid.IntRange(0, c.NodeCount+2).Draw(t, "ownNode"))
				g.own[name] = drawVector(t, rt, "own", 1)
			}
		}
		got, gotReason := (&packer{rt: rt, c: c, g: g}).pack()
		want, wantReason := (&refPacker{rt: rt, c: c, g: g}).pack()
		if gotReason != wantReason {
			t.Fatalf("reason = %q, want %q", gotReason, wantReason)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("assignments = %+v, want %+v", got, want)
		}
	})
}

// TestBoundCheckReasons pins the texts of the cluster-level bound check, written by hand from its rules: the
// gang's total against the cluster's free first, naming every resource it lacks, then each pod against the
// largest free on one node.
func TestBoundCheckReasons(t *testing.T) {
	rt := structs.NewResourceTable().With(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")})
	gpu, _ := rt.Index("nvidia.com/gpu")
	vec := func(gpus, memGi int64) structs.Vector {
		v := make(structs.Vector, rt.Len())
		v[gpu], v[structs.ResourceMemory] = gpus, memGi<<30
		return v
	}
	worker := &structs.PodGroup{Component: "worker", Count: 2, Request: vec(4, 8)}
	g := &gang{items: []item{{group: worker, count: 2}}, demand: vec(8, 16)}
	// Cordoned nodes are left out of the sums, so a reason drawn from them says how many there are: a cluster
	// drained for maintenance is not full. A cluster with no node says so.
	cases := []struct {
		name                  string
		nodes, cordoned       int
		free, most, freeMemGi int64
		mostOn                string
		want                  string
	}{
		{"fits", 3, 0, 8, 4, 64, "n1", ""},
		{"total short", 3, 0, 6, 4, 64, "n1", "needs nvidia.com/gpu 8 in total, 6 free"},
		{"total short of two resources", 3, 0, 0, 0, 10, "n1", "needs memory 16Gi in total, 10Gi free, and nvidia.com/gpu 8 in total, 0 free"},
		{"total short with a node cordoned", 3, 1, 6, 4, 64, "n1", "needs nvidia.com/gpu 8 in total, 6 free (1 node cordoned)"},
		{"every node cordoned", 3, 3, 0, 0, 0, "", "needs memory 16Gi in total, 0 free, and nvidia.com/gpu 8 in total, 0 free (3 nodes cordoned)"},
		{"no node", 0, 0, 0, 0, 0, "", "has no nodes"},
		{"no node big enough", 3, 0, 12, 2, 64, "n1", "pod worker (nvidia.com/gpu 4) fits no node: largest free 2 on n1"},
		{"no node big enough, others cordoned", 5, 2, 12, 2, 64, "n1",
			"pod worker (nvidia.com/gpu 4) fits no node: largest free 2 on n1 (2 nodes cordoned)"},
		{"no node named", 3, 0, 12, 0, 64, "", "pod worker (nvidia.com/gpu 4) fits no node: no node has nvidia.com/gpu free"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cc := &structs.ClusterCapacity{Name: "c", NodeCount: tc.nodes, Cordoned: tc.cordoned, Free: vec(tc.free, tc.freeMemGi),
				MaxFree:     vec(tc.most, tc.freeMemGi),
				MaxFreeNode: make([]string, rt.Len())}
			cc.MaxFreeNode[gpu], cc.MaxFreeNode[structs.ResourceMemory] = tc.mostOn, tc.mostOn
			c := &cycle{rt: rt}
			if got := c.boundCheck(cc, g); got != tc.want {
				t.Errorf("boundCheck = %q, want %q", got, tc.want)
			}
			// Asked again within the cycle, a total reason comes back the same.
			if got := c.boundCheck(cc, g); got != tc.want {
				t.Errorf("second boundCheck = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPodOfNamesAComponentOnce: reasons name a pod by its component, except the one component of a Deployment or
// a Job, named pod, which would read "pod pod".
func TestPodOfNamesAComponentOnce(t *testing.T) {
	for component, want := range map[string]string{"worker": "pod worker", "pod": "pod", "": "pod", "pod-a": "pod pod-a"} {
		if got := podOf(component); got != want {
			t.Errorf("podOf(%q) = %q, want %q", component, got, want)
		}
	}
}
