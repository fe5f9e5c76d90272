package structs

import (
	"math"
	"math/rand/v2"
	"slices"
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

// TestNodeVectorsConvertAsCapacityAndRequest: NodeVectors gives what Capacity and Request give for the same
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
			wantReq, _ := rt.Request(tc.requested)
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
