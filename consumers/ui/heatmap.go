package ui

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/fleetflow/fleetflow/consumers/ui/model"
)

// Heat map geometry: a grid of cells, one per GPU node in name order, heatColumns to a row.
const (
	heatColumns = 50
	heatCell    = 10
)

// heatColors shade a node by the share of its GPUs that is free, from none (full: dark) to all (idle: pale).
var heatColors = [...]string{"#7f1d1d", "#c2410c", "#f59e0b", "#a3e635", "#bbf7d0"}

// heatLevel is the shade of a node: 0 when no GPU is free, the last when all are, in between by quarters.
func heatLevel(n model.GPUNode) int {
	switch {
	case n.Free <= 0:
		return 0
	case n.Free >= n.GPUs:
		return len(heatColors) - 1
	}
	return 1 + int(min(n.Free*3/n.GPUs, 2))
}

// heatMapSize is the size in pixels of the map of n nodes.
func heatMapSize(n int) (width, height int) {
	rows := max((n+heatColumns-1)/heatColumns, 1)
	return heatColumns * heatCell, rows * heatCell
}

// heatMap is the SVG of the nodes: a row's neighbours of one shade are one rectangle, and a pattern laid over
// the grid draws the cell borders, so a map of 1,000 nodes is a few hundred elements at most.
func heatMap(nodes []model.GPUNode) []byte {
	width, height := heatMapSize(len(nodes))
	ws, hs := strconv.Itoa(width), strconv.Itoa(height)
	buf := make([]byte, 0, 4096)
	buf = append(buf, `<svg xmlns="http://www.w3.org/2000/svg" width="`+ws+`" height="`+hs+`" viewBox="0 0 `+ws+" "+hs+
		`" role="img"><defs><pattern id="g" width="10" height="10" patternUnits="userSpaceOnUse">`+
		`<path d="M10 0V10H0" fill="none" stroke="#fff" stroke-width="2"/></pattern></defs>`...)
	if len(nodes) == 0 {
		buf = append(buf, `<rect width="100%" height="100%" fill="#eee"/>`...)
	}
	for start := 0; start < len(nodes); {
		row, col := start/heatColumns, start%heatColumns
		level := heatLevel(nodes[start])
		end := start + 1
		for end < len(nodes) && end%heatColumns != 0 && heatLevel(nodes[end]) == level {
			end++
		}
		buf = append(buf, `<rect x="`...)
		buf = strconv.AppendInt(buf, int64(col*heatCell), 10)
		buf = append(buf, `" y="`...)
		buf = strconv.AppendInt(buf, int64(row*heatCell), 10)
		buf = append(buf, `" width="`...)
		buf = strconv.AppendInt(buf, int64((end-start)*heatCell), 10)
		buf = append(buf, `" height="10" fill="`...)
		buf = append(buf, heatColors[level]...)
		buf = append(buf, `"/>`...)
		start = end
	}
	return append(buf, `<rect width="100%" height="100%" fill="url(#g)"/></svg>`...)
}

func (s *Server) heatMapImage(w http.ResponseWriter, r *http.Request) {
	nodes, ok := s.model.GPUNodes(r.URL.Query().Get("cluster"))
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(heatMap(nodes)) // a client gone is no error of the view
}

// freeCount is how many GPU nodes have Free GPUs free.
type freeCount struct {
	Free  int64
	Nodes int
	// Of is how many GPUs those nodes have, when they all have the same; 0 when they differ.
	Of int64
}

// histogram counts the nodes per number of free GPUs, fewest free first: the fragmentation in numbers.
func histogram(nodes []model.GPUNode) []freeCount {
	byFree := map[int64]*freeCount{}
	for _, n := range nodes {
		c := byFree[n.Free]
		if c == nil {
			c = &freeCount{Free: n.Free, Of: n.GPUs}
			byFree[n.Free] = c
		}
		c.Nodes++
		if c.Of != n.GPUs {
			c.Of = 0
		}
	}
	out := make([]freeCount, 0, len(byFree))
	for _, c := range byFree {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b freeCount) int { return int(a.Free - b.Free) })
	return out
}
