package karta

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Report is the JSON form of an Analysis printed by `fleetflow analyze -o json`. Field order is the
// key order of the output.
type Report struct {
	APIVersion        string            `json:"apiVersion"`
	Kind              string            `json:"kind"`
	Namespace         string            `json:"namespace"`
	Name              string            `json:"name"`
	GenerateName      string            `json:"generateName,omitempty"`
	ResourceInterface string            `json:"resourceInterface"`
	Components        []ComponentReport `json:"components"`
	TotalPods         int64             `json:"totalPods"`
	TotalRequests     map[string]string `json:"totalRequests"`
	GangGroups        []GangReport      `json:"gangGroups"`
	// ExclusiveUnits are the sets of pods that each need a topology domain of their own; omitted when none.
	ExclusiveUnits []ExclusiveUnitReport `json:"exclusiveUnits,omitempty"`
	Status         Phase                 `json:"status"`
}

// ExclusiveUnitReport is one exclusive-topology unit: its pods by "component" or "component/instance".
type ExclusiveUnitReport struct {
	TopologyKey string           `json:"topologyKey"`
	Pods        map[string]int64 `json:"pods"`
	// Alone: the object's pods outside its units may not run in the unit's domain.
	Alone bool `json:"alone,omitempty"`
	// AllNamespaces: the unit keeps out of the domains of the kind's objects in every namespace.
	AllNamespaces bool `json:"allNamespaces,omitempty"`
}

// ComponentReport is one component instance; counts are null when the RI's paths leave them unset.
type ComponentReport struct {
	Name         string              `json:"name"`
	Instance     string              `json:"instance"`
	Replicas     *int64              `json:"replicas"`
	MinReplicas  *int64              `json:"minReplicas"`
	MaxReplicas  *int64              `json:"maxReplicas"`
	Pods         int64               `json:"pods"`
	PodRequests  map[string]string   `json:"podRequests"`
	NodeSelector map[string]string   `json:"nodeSelector"`
	Tolerations  []corev1.Toleration `json:"tolerations"`
	// PodConstraints, filled by whoever knows the scheduler (the CLI), are the template's required constraints
	// between pods; omitted when it has none.
	PodConstraints *PodConstraints `json:"podConstraints,omitempty"`
}

// PodConstraints are a pod template's required constraints between pods: those placement applies, and those
// it leaves out (they name pods fleetflow does not see).
type PodConstraints struct {
	Applied []string `json:"applied"`
	Ignored []string `json:"ignored"`
}

// GangReport is one gang group.
type GangReport struct {
	Name    string             `json:"name"`
	Members []GangMemberReport `json:"members"`
}

// GangMemberReport is one member component of a gang group.
type GangMemberReport struct {
	ComponentName   string   `json:"componentName"`
	GroupByKeyPaths []string `json:"groupByKeyPaths"`
	Filters         []string `json:"filters"`
}

// NewReport renders a into its JSON form. resourceInterface overrides a.ResourceInterface when not
// empty (the CLI shows the RI file in Karta compatibility mode). Empty collections render as {} and
// [] rather than null, so consumers need not special-case them.
func NewReport(a *Analysis, resourceInterface string) Report {
	r := Report{
		APIVersion:        a.APIVersion,
		Kind:              a.Kind,
		Namespace:         a.Namespace,
		Name:              a.Name,
		GenerateName:      a.GenerateName,
		ResourceInterface: a.ResourceInterface,
		Components:        []ComponentReport{},
		TotalPods:         a.TotalPods,
		TotalRequests:     Quantities(a.TotalRequests),
		GangGroups:        []GangReport{},
		Status:            a.Status,
	}
	if resourceInterface != "" {
		r.ResourceInterface = resourceInterface
	}
	if r.Status == "" {
		r.Status = PhaseUndefined
	}
	for _, ci := range a.Components {
		cr := ComponentReport{
			Name: ci.Name, Instance: ci.Instance,
			Replicas: ci.Replicas, MinReplicas: ci.MinReplicas, MaxReplicas: ci.MaxReplicas,
			Pods: ci.Pods, PodRequests: Quantities(ci.PodRequests),
			NodeSelector: ci.NodeSelector, Tolerations: ci.Tolerations,
		}
		if cr.NodeSelector == nil {
			cr.NodeSelector = map[string]string{}
		}
		if cr.Tolerations == nil {
			cr.Tolerations = []corev1.Toleration{}
		}
		r.Components = append(r.Components, cr)
	}
	for _, g := range a.GangGroups {
		gr := GangReport{Name: g.Name, Members: []GangMemberReport{}}
		for _, m := range g.Members {
			gr.Members = append(gr.Members, GangMemberReport{
				ComponentName:   m.ComponentName,
				GroupByKeyPaths: nonNil(m.GroupByKeyPaths),
				Filters:         nonNil(m.Filters),
			})
		}
		r.GangGroups = append(r.GangGroups, gr)
	}
	for _, u := range a.ExclusiveUnits {
		ur := ExclusiveUnitReport{TopologyKey: u.TopologyKey, Pods: make(map[string]int64, len(u.Pods)), Alone: u.Alone,
			AllNamespaces: u.AllNamespaces}
		for _, p := range u.Pods {
			ur.Pods[ComponentKey(p.Component, p.Instance)] = p.Pods
		}
		r.ExclusiveUnits = append(r.ExclusiveUnits, ur)
	}
	return r
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// WriteJSON writes the report of a as indented JSON.
func WriteJSON(w io.Writer, a *Analysis, resourceInterface string) error {
	data, err := json.MarshalIndent(NewReport(a, resourceInterface), "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}

// gpuResourceSuffix picks out accelerator resources (nvidia.com/gpu, amd.com/gpu, ...) for the GPU column.
const gpuResourceSuffix = "/gpu"

// WriteTable writes the human view: one row per component instance with pods, per-pod GPUs, CPU and
// memory, then a total row with the totals over all pods.
func WriteTable(w io.Writer, a *Analysis, resourceInterface string) error {
	ri := a.ResourceInterface
	if resourceInterface != "" {
		ri = resourceInterface
	}
	name := shownName(a)
	if a.Namespace != "" {
		name = a.Namespace + "/" + name
	}
	fmt.Fprintf(w, "%s %s via %s, status %s\n", a.Kind, name, ri, a.Status)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tINSTANCE\tPODS\tGPU/POD\tCPU/POD\tMEMORY/POD")
	for _, ci := range a.Components {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", ci.Name, dash(ci.Instance), ci.Pods,
			gpus(ci.PodRequests), quantity(ci.PodRequests, corev1.ResourceCPU), readableBytes(ci.PodRequests, corev1.ResourceMemory))
	}
	fmt.Fprintf(tw, "TOTAL\t\t%d\t%s\t%s\t%s\n", a.TotalPods, gpus(a.TotalRequests),
		quantity(a.TotalRequests, corev1.ResourceCPU), readableBytes(a.TotalRequests, corev1.ResourceMemory))
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range exclusiveLines(a.ExclusiveUnits) {
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	if others := otherResources(a.TotalRequests); others != "" {
		_, err := fmt.Fprintf(w, "other resources in total: %s\n", others)
		return err
	}
	return nil
}

// shownName is how the table names the object: the apiserver completes a generateName with a random suffix.
func shownName(a *Analysis) string {
	switch {
	case a.Name != "":
		return a.Name
	case a.GenerateName != "":
		return a.GenerateName + "<generated>"
	default:
		return "<no name>"
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func quantity(rl corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := rl[name]
	if !ok || q.IsZero() {
		return "-"
	}
	return q.String()
}

// readableBytes shows an amount of bytes as quantity does, unless the sum of decimal and binary amounts
// (3G + 1536Mi) left it with no suffix that divides it: then it is shown rounded in the largest binary unit
// it reaches, marked with "~", rather than as a string of digits.
func readableBytes(rl corev1.ResourceList, name corev1.ResourceName) string {
	exact := quantity(rl, name)
	q := rl[name]
	bytes := q.Value()
	if strings.TrimLeft(exact, "0123456789") != "" || bytes < 1<<10 {
		return exact
	}
	units := []string{"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	unit, scaled := 0, float64(bytes)/(1<<10)
	for scaled >= 1<<10 && unit < len(units)-1 {
		unit, scaled = unit+1, scaled/(1<<10)
	}
	return "~" + strconv.FormatFloat(scaled, 'f', 2, 64) + units[unit]
}

func gpus(rl corev1.ResourceList) string {
	var sum resource.Quantity
	for name, q := range rl {
		if strings.HasSuffix(string(name), gpuResourceSuffix) {
			sum.Add(q)
		}
	}
	if sum.IsZero() {
		return "-"
	}
	return sum.String()
}

func otherResources(rl corev1.ResourceList) string {
	var parts []string
	for name, q := range rl {
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory || strings.HasSuffix(string(name), gpuResourceSuffix) || q.IsZero() {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%s", name, q.String()))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// exclusiveLines says what the exclusive units need, alike units on one line in first-seen order:
// "3 units, each in a cloud.google.com/gke-nodepool of its own: leader 1 + worker 3".
func exclusiveLines(units []ExclusiveUnit) []string {
	var lines []string
	var counts []int
	seen := map[string]int{}
	for _, u := range units {
		topologyKey := u.TopologyKey
		if u.Alone {
			topologyKey += " of its own, which no other pod of the object shares"
		} else {
			topologyKey += " of its own"
		}
		key := topologyKey + "\x00" + u.String()
		if i, ok := seen[key]; ok {
			counts[i]++
			continue
		}
		seen[key] = len(lines)
		lines = append(lines, key)
		counts = append(counts, 1)
	}
	for i, key := range lines {
		topologyKey, pods, _ := strings.Cut(key, "\x00")
		noun := "unit"
		if counts[i] > 1 {
			noun = "units"
		}
		lines[i] = fmt.Sprintf("exclusive topology: %d %s, each in a %s: %s", counts[i], noun, topologyKey, pods)
	}
	return lines
}
