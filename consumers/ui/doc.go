// Package ui is the browser fleet view (`fleetflow ui`, `fleetflow run --ui`): a read-only web app fed only by
// the streams, so it needs no Kubernetes credentials. Its read model (package model) follows the state stream
// and the history; the pages are:
//
//   - Fleet (/): every cluster with Ready, heartbeat age and bars of requested against allocatable cpu, memory
//     and each GPU kind, and a heat map of its GPU nodes by free GPUs (/heatmap.svg, an SVG image drawn here:
//     the page holds one image per cluster, not one element per node).
//   - Workloads (/workloads): every workload, filtered by any column and paged on the server; a workload's page
//     (/workload?key=) shows its verdict and reasons, its analysis, its story per cluster, the explanation
//     `fleetflow explain` gives, and its audit trail.
//   - Live (/live): decisions, verdicts and applier reports as they are stored, as server-sent events
//     (/live/events), with a pause button.
//   - What-if (/whatif): a SchedulePolicy pasted or uploaded, run as `fleetflow replay --policy` runs it.
//
// It is safe by default: it listens on localhost, answers only GET (and the what-if's and the login's POST,
// which change nothing), html/template escapes every value from the streams, the script and style are files
// embedded in the binary (no CDN, no inline script: the Content-Security-Policy allows only this origin's
// files), and with a token (--token-file or $FLEETFLOW_UI_TOKEN) every request must carry it, as a bearer
// token or the cookie the login form sets.
package ui
