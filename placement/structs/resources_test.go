package structs

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestQuantityRendering checks Quantity, cached or not, against Kubernetes' own rendering of the same amount:
// millicores for CPU, binary suffixes for memory, storage and hugepages, decimal suffixes for the rest. It
// renders every amount twice, and amounts that share a cache slot, so hits and evictions are both exercised.
func TestQuantityRendering(t *testing.T) {
	rt := NewResourceTable().With(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"),
		"hugepages-2Mi": resource.MustParse("1")})
	gpu, _ := rt.Index("nvidia.com/gpu")
	hugepages, _ := rt.Index("hugepages-2Mi")
	want := func(i int, amount int64) string {
		switch i {
		case ResourceCPU:
			return resource.NewMilliQuantity(amount, resource.DecimalSI).String()
		case ResourceMemory, ResourceEphemeralStorage, hugepages:
			return resource.NewQuantity(amount, resource.BinarySI).String()
		default:
			return resource.NewQuantity(amount, resource.DecimalSI).String()
		}
	}
	amounts := []int64{0, 1, 999, 1000, 1024, 1536, 250, 500, 16000, 64 << 30, 1 << 40, math.MaxInt64, -1, -1024}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		amounts = append(amounts, r.Int64N(1<<20), r.Int64N(1<<45), int64(r.IntN(4096))<<30, int64(r.IntN(200))*250)
	}
	for _, i := range []int{ResourceCPU, ResourceMemory, ResourceEphemeralStorage, ResourcePods, gpu, hugepages} {
		for _, amount := range amounts {
			for range 2 {
				if got, want := rt.Quantity(i, amount), want(i, amount); got != want {
					t.Fatalf("Quantity(%s, %d) = %q, want %q", rt.Name(i), amount, got, want)
				}
			}
		}
	}
}

// TestNodeVectorsConvertAsCapacityAndRequest: NodeVectors gives what Capacity and Observed give for the same
// lists (capacity rounded down, requests up), in two vectors that share an allocation without overlapping.
func TestNodeVectorsConvertAsCapacityAndRequest(t *testing.T) {
	rt := NewResourceTable().With(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")})
	cases := []struct {
		name                   string
		allocatable, requested corev1.ResourceList
		wantErr                bool
	}{
		{"both", corev1.ResourceList{"cpu": resource.MustParse("15500m"), "memory": resource.MustParse("1500m"),
			"nvidia.com/gpu": resource.MustParse("8")}, corev1.ResourceList{"memory": resource.MustParse("1500m")}, false},
		{"nothing requested", corev1.ResourceList{"cpu": resource.MustParse("4")}, nil, false},
		{"unknown resource", corev1.ResourceList{"example.com/fpga": resource.MustParse("1")}, nil, true},
		{"negative request", nil, corev1.ResourceList{"cpu": resource.MustParse("-1")}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			alloc, req, err := rt.NodeVectors(tc.allocatable, tc.requested)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			wantAlloc, _ := rt.Capacity(tc.allocatable)
			wantReq, _ := rt.Observed(tc.requested)
			if !slices.Equal(alloc, wantAlloc) || !slices.Equal(req, wantReq) {
				t.Fatalf("NodeVectors = %v, %v; want %v, %v", alloc, req, wantAlloc, wantReq)
			}
			// An append to the allocatable vector must not grow into the requested one.
			if cap(alloc) != len(alloc) {
				t.Fatalf("the allocatable vector has room for %d more entries, which are the requested one's", cap(alloc)-len(alloc))
			}
			alloc[len(alloc)-1]++
			if !slices.Equal(req, wantReq) {
				t.Fatalf("writing the allocatable vector changed the requested one: %v", req)
			}
		})
	}
}

// TestQuantitiesBeyondWhatIsCountedNeverCountAsRoom: a quantity past karta.Largest (which would wrap around to
// a negative or zero amount) is refused in a pod's request, naming the resource, and counted as the limit in
// what a node has or what its pods take; one at the limit counts as itself.
func TestQuantitiesBeyondWhatIsCountedNeverCountAsRoom(t *testing.T) {
	rt := NewResourceTable()
	cases := []struct {
		name     string
		resource corev1.ResourceName
		quantity string
		want     int64 // as a capacity or an observed request, and as a request unless refused
		refused  bool
	}{
		{"cpu wrapping to negative", "cpu", "9223372036854775807k", 1e15, true},
		{"cpu in pebi", "cpu", "10Pi", 1e15, true},
		{"cpu wrapping to zero", "cpu", "1e19", 1e15, true},
		{"cpu past float64", "cpu", "1e400", 1e15, true},
		{"memory wrapping to negative", "memory", "9223372036854775807k", 1 << 50, true},
		{"memory in exbi", "memory", "2Ei", 1 << 50, true},
		{"memory past float64", "memory", "1e400", 1 << 50, true},
		{"cpu at the limit", "cpu", "1T", 1e15, false},
		{"memory at the limit", "memory", "1Pi", 1 << 50, false},
		{"a large real node's memory", "memory", "24Ti", 24 << 40, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			i, _ := rt.Index(tc.resource)
			list := corev1.ResourceList{tc.resource: resource.MustParse(tc.quantity)}
			for what, convert := range map[string]func(corev1.ResourceList) (Vector, error){
				"capacity": rt.Capacity, "observed": rt.Observed} {
				if v, err := convert(list); err != nil || v[i] != tc.want {
					t.Errorf("%s of %s = %v, %v; want %d", what, tc.quantity, v, err, tc.want)
				}
			}
			v, err := rt.Request(list)
			q := list[tc.resource]
			switch {
			case tc.refused && (err == nil || !strings.Contains(err.Error(), "resource "+string(tc.resource)+": "+
				q.String()+" is more than fleetflow counts")):
				t.Errorf("request of %s = %v, %v; want an error naming the resource and the quantity", tc.quantity, v, err)
			case !tc.refused && (err != nil || v[i] != tc.want):
				t.Errorf("request of %s = %v, %v; want %d", tc.quantity, v, err, tc.want)
			}
		})
	}
}

// TestDemandOverflows: a workload's total demand may reach MaxDemand and not pass it, whatever its pod count.
func TestDemandOverflows(t *testing.T) {
	cases := []struct {
		name    string
		demand  Vector
		request Vector
		pods    int64
		want    int
		over    bool
	}{
		{"small", Vector{0, 0}, Vector{1000, 1 << 30}, 8, 0, false},
		{"exactly the most", Vector{0}, Vector{MaxDemand / 4}, 4, 0, false},
		{"one past", Vector{1}, Vector{MaxDemand / 4}, 4, 0, true},
		{"many pods of a large request", Vector{0, 0}, Vector{1, 1 << 50}, 1 << 20, 1, true},
		{"pod count alone past int64", Vector{0, 0}, Vector{1, 1}, 1 << 62, 0, true},
		{"no pods", Vector{0}, Vector{1 << 50}, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			i, over := DemandOverflows(tc.demand, tc.request, tc.pods)
			if over != tc.over || (over && i != tc.want) {
				t.Errorf("DemandOverflows = %d, %v; want %d, %v", i, over, tc.want, tc.over)
			}
		})
	}
}
