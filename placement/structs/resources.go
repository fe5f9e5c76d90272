package structs

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/placement/karta"
)

// Vector is an amount of every resource of a ResourceTable, indexed by the table's positions.
// CPU is in millicores; every other resource is in whole units (bytes, pods, devices), rounded up for requests
// and down for capacity, as kube-scheduler does. A Vector shorter than its table means 0 for the missing entries,
// so vectors built before a new resource name was seen stay valid.
type Vector []int64

// Get returns entry i, 0 past the end.
func (v Vector) Get(i int) int64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// FitsIn reports whether v is no larger than free in every resource.
func (v Vector) FitsIn(free Vector) bool {
	for i, want := range v {
		if want > 0 && want > free.Get(i) {
			return false
		}
	}
	return true
}

// Add returns v + w as a new vector.
func (v Vector) Add(w Vector) Vector {
	out := make(Vector, max(len(v), len(w)))
	copy(out, v)
	for i, x := range w {
		out[i] += x
	}
	return out
}

// Sub returns v − w as a new vector.
func (v Vector) Sub(w Vector) Vector {
	out := make(Vector, max(len(v), len(w)))
	copy(out, v)
	for i, x := range w {
		out[i] -= x
	}
	return out
}

// Scale returns v × n as a new vector.
func (v Vector) Scale(n int64) Vector {
	out := make(Vector, len(v))
	for i, x := range v {
		out[i] = x * n
	}
	return out
}

// MaxDemand is the most of one resource a workload may ask for in all, in the units of a Vector: 64 times
// karta.CountableLimit, so a fleet's worth of such workloads still sums without overflow.
const MaxDemand = 64 * karta.CountableLimit

// DemandOverflows reports the first entry for which demand + w × n would pass MaxDemand.
func DemandOverflows(demand, w Vector, n int64) (int, bool) {
	for i, x := range w {
		if x > 0 && n > 0 && n > (MaxDemand-demand.Get(i))/x {
			return i, true
		}
	}
	return 0, false
}

// AddInPlace adds w × n to v, which must be at least as long as w.
func (v Vector) AddInPlace(w Vector, n int64) {
	for i, x := range w {
		v[i] += x * n
	}
}

// IsZero reports whether every entry is 0.
func (v Vector) IsZero() bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// Well-known positions of every ResourceTable.
const (
	ResourceCPU = iota
	ResourceMemory
	ResourceEphemeralStorage
	ResourcePods
	numWellKnownResources
)

// ResourceTable maps resource names to vector positions. It is immutable: With returns a new table when a name
// is new, so a snapshot keeps the table its vectors were built with.
type ResourceTable struct {
	names []corev1.ResourceName
	index map[corev1.ResourceName]int
}

// NewResourceTable returns a table holding the well-known resources.
func NewResourceTable() *ResourceTable {
	t := &ResourceTable{index: map[corev1.ResourceName]int{}}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory,
		corev1.ResourceEphemeralStorage, corev1.ResourcePods} {
		t.index[name] = len(t.names)
		t.names = append(t.names, name)
	}
	return t
}

// Len is the number of resources.
func (t *ResourceTable) Len() int { return len(t.names) }

// Name returns the name at position i.
func (t *ResourceTable) Name(i int) corev1.ResourceName { return t.names[i] }

// Index returns the position of name.
func (t *ResourceTable) Index(name corev1.ResourceName) (int, bool) {
	i, ok := t.index[name]
	return i, ok
}

// With returns a table that also holds every name of lists; t itself when none is new.
func (t *ResourceTable) With(lists ...corev1.ResourceList) *ResourceTable {
	var added []corev1.ResourceName
	for _, list := range lists {
		for name := range list {
			if _, ok := t.index[name]; !ok && !slices.Contains(added, name) {
				added = append(added, name)
			}
		}
	}
	if len(added) == 0 {
		return t
	}
	slices.Sort(added)
	next := &ResourceTable{names: slices.Clip(append(slices.Clone(t.names), added...)),
		index: make(map[corev1.ResourceName]int, len(t.names)+len(added))}
	for i, name := range next.names {
		next.index[name] = i
	}
	return next
}

// Request converts a request list, rounding up. Names missing from the table, and quantities larger than
// karta.Largest, are reported in the error.
func (t *ResourceTable) Request(list corev1.ResourceList) (Vector, error) {
	return t.convert(list, true, true)
}

// Observed converts what a cluster reports its pods request, rounding up; a quantity larger than karta.Largest
// counts as that much. A cluster's report is what runs there, and refusing it would leave the node's view stale.
func (t *ResourceTable) Observed(list corev1.ResourceList) (Vector, error) {
	return t.convert(list, true, false)
}

// Capacity converts a capacity list, rounding down; a quantity larger than karta.Largest counts as that much.
func (t *ResourceTable) Capacity(list corev1.ResourceList) (Vector, error) {
	return t.convert(list, false, false)
}

// NodeVectors converts a node's allocatable capacity (rounding down) and requested resources (rounding up) into
// two vectors sharing one allocation: a fleet view holds both for every node, and every allocation is one more
// object for each garbage collection to mark.
func (t *ResourceTable) NodeVectors(allocatable, requested corev1.ResourceList) (alloc, req Vector, err error) {
	n := t.Len()
	both := make(Vector, 2*n)
	alloc, req = both[:n:n], both[n:]
	if err := t.convertInto(alloc, allocatable, false, false); err != nil {
		return nil, nil, fmt.Errorf("allocatable: %w", err)
	}
	if err := t.convertInto(req, requested, true, false); err != nil {
		return nil, nil, fmt.Errorf("requested: %w", err)
	}
	return alloc, req, nil
}

func (t *ResourceTable) convert(list corev1.ResourceList, roundUp, refuseUncountable bool) (Vector, error) {
	v := make(Vector, t.Len())
	if err := t.convertInto(v, list, roundUp, refuseUncountable); err != nil {
		return nil, err
	}
	return v, nil
}

// convertInto writes list into v, which has an entry for every resource of the table. A quantity larger than
// karta.Largest is refused, or counted as karta.Largest: past it, MilliValue and Value wrap around to
// negative or zero amounts, which would count as room.
func (t *ResourceTable) convertInto(v Vector, list corev1.ResourceList, roundUp, refuseUncountable bool) error {
	for name, q := range list {
		i, ok := t.index[name]
		if !ok {
			return fmt.Errorf("resource %s is not in the resource table", name)
		}
		if q.Sign() < 0 {
			return fmt.Errorf("resource %s: negative quantity %s", name, q.String())
		}
		if largest := karta.Largest(name); q.Cmp(largest) > 0 {
			if refuseUncountable {
				return fmt.Errorf("resource %s: %s is more than fleetflow counts (%s)", name, q.String(), largest.String())
			}
			q = largest
		}
		v[i] = canonical(i, q, roundUp)
	}
	return nil
}

// canonical is q, at most karta.Largest, in the units the table counts entry i in.
func canonical(i int, q resource.Quantity, roundUp bool) int64 {
	milli := q.MilliValue()
	if i == ResourceCPU {
		return milli
	}
	whole := milli / 1000
	if roundUp && milli%1000 != 0 {
		whole++
	}
	return whole
}

// BaseAmount is entry i of a vector in the resource's base unit, as Prometheus counts it: CPU in cores (the
// table counts millicores), every other resource in the units the table counts it in.
func (t *ResourceTable) BaseAmount(i int, amount int64) float64 {
	if i == ResourceCPU {
		return float64(amount) / 1000
	}
	return float64(amount)
}

// Quantity renders entry i of a vector in the resource's usual form (4, 500m, 16Gi).
func (t *ResourceTable) Quantity(i int, amount int64) string {
	form := decimalForm
	switch {
	case i == ResourceCPU:
		form = milliForm
	case i == ResourceMemory || i == ResourceEphemeralStorage || strings.HasPrefix(string(t.names[i]), "hugepages-"):
		form = binaryForm
	}
	slot := &renderedQuantities[(uint64(amount)*0x9e3779b97f4a7c15+uint64(form))>>(64-renderedQuantityBits)]
	if r := slot.Load(); r != nil && r.amount == amount && r.form == form {
		return r.text
	}
	text := form.render(amount)
	slot.Store(&renderedQuantity{form: form, amount: amount, text: text})
	return text
}

// quantityForm is how a resource's amounts are written.
type quantityForm uint8

const (
	decimalForm quantityForm = iota // units with SI suffixes: 110, 2k
	milliForm                       // millicores: 500m, 4
	binaryForm                      // bytes with binary suffixes: 16Gi
)

func (f quantityForm) render(amount int64) string {
	switch f {
	case milliForm:
		return resource.NewMilliQuantity(amount, resource.DecimalSI).String()
	case binaryForm:
		return resource.NewQuantity(amount, resource.BinarySI).String()
	default:
		return resource.NewQuantity(amount, resource.DecimalSI).String()
	}
}

// renderedQuantities remembers recent renderings: reasons write the same few amounts (a pod's request, what a
// full cluster has left) for every cluster a cycle rejects, and rendering a Quantity allocates. It is a
// direct-mapped, lock-free cache shared by every table, since a rendering depends only on form and amount; two
// amounts that share a slot only cost renderings.
var renderedQuantities [1 << renderedQuantityBits]atomic.Pointer[renderedQuantity]

const renderedQuantityBits = 12

type renderedQuantity struct {
	form   quantityForm
	amount int64
	text   string
}

// Format renders the non-zero entries of v as "name amount, ...", in table order except that the
// implicit pod count is left out.
func (t *ResourceTable) Format(v Vector) string {
	var b strings.Builder
	for i, x := range v {
		if x == 0 || i == ResourcePods || i >= t.Len() {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(t.names[i]))
		b.WriteByte(' ')
		b.WriteString(t.Quantity(i, x))
	}
	return b.String()
}

// List converts v back to a ResourceList, for status fields.
func (t *ResourceTable) List(v Vector) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i, x := range v {
		if i >= t.Len() {
			break
		}
		out[t.names[i]] = resource.MustParse(t.Quantity(i, x))
	}
	return out
}
