package simulate

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/fleetflow/fleetflow/internal/jsonenc"
)

// ReasonGroup is one reason a workload was not placed on clusters, with every cluster it was not placed on for
// that reason. On a big fleet most clusters are passed over for the same few reasons (no GPU free, a taint):
// naming each reason once keeps the output in proportion to the reasons, not to the clusters times the reasons.
type ReasonGroup struct {
	Reason   string   `json:"reason"`
	Clusters []string `json:"clusters"`
}

// GroupReasons groups a per-cluster reason map by reason text: the reason passing over the most clusters first,
// ties by reason text; the clusters of a reason by name.
func GroupReasons(reasons map[string]string) []ReasonGroup {
	at := map[string]int{}
	groups := []ReasonGroup{}
	for _, cluster := range slices.Sorted(maps.Keys(reasons)) {
		reason := reasons[cluster]
		i, ok := at[reason]
		if !ok {
			i = len(groups)
			at[reason] = i
			groups = append(groups, ReasonGroup{Reason: reason})
		}
		groups[i].Clusters = append(groups[i].Clusters, cluster)
	}
	slices.SortStableFunc(groups, func(a, b ReasonGroup) int {
		if c := cmp.Compare(len(b.Clusters), len(a.Clusters)); c != 0 {
			return c
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	return groups
}

// JSONClusters bounds how many clusters -o json names for one reason of one workload. A reason such as "needs
// nvidia.com/gpu 8 in total, 0 free" can pass over most of a big fleet, for each of thousands of workloads:
// named in full, those lists were most of the output.
const JSONClusters = 5

// WriteJSON prints a JSON array with one object per workload:
//
//   - workload, policy, status, clusters: what `check` and other tools read; replicas for a divided workload.
//   - reasons: reason text -> the clusters it passed over (GroupReasons order; at most JSONClusters named).
//   - moreClusters: reason text -> how many more clusters it passed over than reasons names; only reasons
//     that name fewer than all, and only present when one does.
//   - message, and pods: "cluster/node" -> {"component": pods}.
//
// A workload is a few lines: one per field, one per reason and one per node it has pods on. Each entry is written
// as soon as it is encoded, so a run of many workloads holds no second copy of its output.
func WriteJSON(w io.Writer, results []Result) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	buf := []byte("[")
	for i, r := range results {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendResult(append(buf, "\n  "...), r)
		if _, err := bw.Write(buf); err != nil {
			return err
		}
		buf = buf[:0]
	}
	if len(results) > 0 {
		buf = append(buf, '\n')
	}
	buf = append(buf, "]\n"...)
	if _, err := bw.Write(buf); err != nil {
		return err
	}
	return bw.Flush()
}

func appendResult(buf []byte, r Result) []byte {
	field := func(name string) {
		buf = append(buf, ",\n    "...)
		buf = jsonenc.AppendString(buf, name)
		buf = append(buf, ": "...)
	}
	buf = append(buf, "{\n    \"workload\": "...)
	buf = jsonenc.AppendString(buf, r.Workload)
	field("policy")
	if r.Policy == nil {
		buf = append(buf, "null"...)
	} else {
		buf = jsonenc.AppendString(buf, *r.Policy)
	}
	field("status")
	buf = jsonenc.AppendString(buf, r.Status)
	field("clusters")
	buf = appendStrings(buf, r.Clusters)
	if len(r.Replicas) > 0 {
		field("replicas")
		buf = appendCounts(buf, r.Replicas)
	}
	field("reasons")
	groups := GroupReasons(r.Reasons)
	buf = append(buf, '{')
	for i, g := range groups {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, "\n      "...)
		buf = jsonenc.AppendString(buf, g.Reason)
		buf = append(buf, ": "...)
		buf = appendStrings(buf, g.Clusters[:min(len(g.Clusters), JSONClusters)])
	}
	if len(groups) > 0 {
		buf = append(buf, "\n    "...)
	}
	buf = append(buf, '}')
	if more := slices.ContainsFunc(groups, func(g ReasonGroup) bool { return len(g.Clusters) > JSONClusters }); more {
		field("moreClusters")
		buf = append(buf, '{')
		first := true
		for _, g := range groups {
			if len(g.Clusters) <= JSONClusters {
				continue
			}
			if !first {
				buf = append(buf, ", "...)
			}
			first = false
			buf = jsonenc.AppendString(buf, g.Reason)
			buf = append(buf, ": "...)
			buf = strconv.AppendInt(buf, int64(len(g.Clusters)-JSONClusters), 10)
		}
		buf = append(buf, '}')
	}
	if r.Message != "" {
		field("message")
		buf = jsonenc.AppendString(buf, r.Message)
	}
	if len(r.Pods) > 0 {
		field("pods")
		buf = append(buf, '{')
		for i, node := range slices.Sorted(maps.Keys(r.Pods)) {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, "\n      "...)
			buf = jsonenc.AppendString(buf, node)
			buf = append(buf, ": "...)
			buf = appendCounts(buf, r.Pods[node])
		}
		buf = append(buf, "\n    }"...)
	}
	return append(buf, "\n  }"...)
}

func appendStrings(buf []byte, values []string) []byte {
	buf = append(buf, '[')
	for i, v := range values {
		if i > 0 {
			buf = append(buf, ", "...)
		}
		buf = jsonenc.AppendString(buf, v)
	}
	return append(buf, ']')
}

// appendCounts writes a map of counts on one line, keys sorted.
func appendCounts(buf []byte, counts map[string]int64) []byte {
	buf = append(buf, '{')
	for i, k := range slices.Sorted(maps.Keys(counts)) {
		if i > 0 {
			buf = append(buf, ", "...)
		}
		buf = jsonenc.AppendString(buf, k)
		buf = append(buf, ": "...)
		buf = strconv.AppendInt(buf, counts[k], 10)
	}
	return append(buf, '}')
}

// tableClusters bounds how many clusters a reason names in the table; -o json names them all.
const tableClusters = 8

// WriteTable prints the results for people: one row per workload, then its reasons, one line per reason: the
// clusters it passed over (the first tableClusters of them, and how many more), a colon, the reason.
func WriteTable(w io.Writer, results []Result) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tPOLICY\tSTATUS\tCLUSTERS")
	for _, r := range results {
		policy := "-"
		if r.Policy != nil {
			policy = *r.Policy
		}
		clusters := "-"
		if len(r.Clusters) > 0 {
			parts := make([]string, len(r.Clusters))
			for i, c := range r.Clusters {
				parts[i] = c
				if n, ok := r.Replicas[c]; ok {
					parts[i] = fmt.Sprintf("%s(%d)", c, n)
				}
			}
			clusters = strings.Join(parts, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Workload, policy, r.Status, clusters)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range results {
		if len(r.Reasons) == 0 && r.Message == "" {
			continue
		}
		fmt.Fprintf(bw, "\n%s (%s):\n", r.Workload, r.Status)
		if r.Message != "" {
			fmt.Fprintf(bw, "  %s\n", r.Message)
		}
		for _, g := range GroupReasons(r.Reasons) {
			fmt.Fprintf(bw, "  %s: %s\n", nameSome(g.Clusters), g.Reason)
		}
	}
	return bw.Flush()
}

// nameSome lists clusters, at most tableClusters of them and then how many more.
func nameSome(clusters []string) string {
	if len(clusters) <= tableClusters {
		return strings.Join(clusters, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(clusters[:tableClusters], ", "), len(clusters)-tableClusters)
}
