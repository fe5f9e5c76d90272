package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/consumers/replay"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/e2e/scenarios"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/schemas"
)

const ns = "replay"

var (
	deploymentKind = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	jobKind        = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
)

// workload is one object the test submits.
type workload struct {
	gvk  schema.GroupVersionKind
	name string
}

// key names it as replay and explain do.
func (w workload) key() string { return w.gvk.Kind + "/" + ns + "/" + w.name }

func podTemplate(cpu, restart string) map[string]any {
	return map[string]any{"spec": map[string]any{"restartPolicy": restart, "containers": []any{map[string]any{
		"name": "main", "image": "example.com/app:1",
		"resources": map[string]any{"requests": map[string]any{"cpu": cpu, "memory": "1Gi"}}}}}}
}

func deployment(name string) *unstructured.Unstructured {
	d := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(1),
		"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
		"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}},
			"spec": podTemplate("1", "Always")["spec"]}}}}
	d.SetGroupVersionKind(deploymentKind)
	d.SetNamespace(ns)
	d.SetName(name)
	return d
}

func batchJob(name string) *unstructured.Unstructured {
	j := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"parallelism": int64(1),
		"template": podTemplate("1", "Never")}}}
	j.SetGroupVersionKind(jobKind)
	j.SetNamespace(ns)
	j.SetName(name)
	return j
}

// placement reads the verdict and cluster the status writer annotated on a control-plane workload.
func placement(t *testing.T, e *e2eenv.Env, w workload) (status, cluster string) {
	obj := e2eenv.Get(t, e.ControlPlane, w.gvk, ns, w.name)
	if obj == nil {
		return "", ""
	}
	a := obj.GetAnnotations()
	return a[schemas.AnnotationPlacement], a[schemas.AnnotationCluster]
}

// waitPlaced waits until each workload is annotated Placed on the cluster want names and its copy is there.
func waitPlaced(t *testing.T, e *e2eenv.Env, what string, ws []workload, want func(workload) string) {
	t.Helper()
	var pending []string
	e2eenv.Eventually(t, 2*e2eenv.Settle, what, func() bool {
		pending = pending[:0]
		for _, w := range ws {
			status, cluster := placement(t, e, w)
			if status != string(schemas.VerdictPlaced) || cluster != want(w) ||
				e2eenv.Get(t, e.Clusters[cluster], w.gvk, ns, w.name) == nil {
				pending = append(pending, fmt.Sprintf("%s is %s on %q", w.key(), status, cluster))
			}
		}
		return len(pending) == 0
	})
}

// fleetflowBinary builds the command under test.
func fleetflowBinary(t *testing.T) string {
	t.Helper()
	root, err := localfleettest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(t.TempDir(), "fleetflow")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", binary, "./cmd/fleetflow")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build fleetflow: %v\n%s", err, out)
	}
	return binary
}

// run runs the binary and returns its standard output; a non-zero exit fails the test unless mayFail.
func run(t *testing.T, binary string, mayFail bool, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && !mayFail {
		t.Fatalf("fleetflow %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// replayed runs `fleetflow replay` and fails the test on any divergence.
func replayed(t *testing.T, binary string, from ...string) *replay.Result {
	t.Helper()
	out := run(t, binary, true, append([]string{"replay", "-o", "json"}, from...)...)
	var res replay.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("replay %v: %v\n%s", from, err, out)
	}
	if len(res.Divergences) > 0 || res.Reproduced == 0 {
		t.Fatalf("replay %v reproduced %d of %d recorded verdicts and decisions; divergences:\n%s", from, res.Reproduced,
			res.Recorded, out)
	}
	return &res
}

// TestReplayReproducesARecordedRunAndPredictsAPolicyChange records a run on the local fleet (25 workloads of
// three kinds, a policy change that moves the web services, a cluster whose apiserver stops so its jobs fail
// over), asks `fleetflow replay` what dropping cluster-b from the jobs' policy would do, applies that policy
// and checks the run did just that, then replays the whole history from the streams and from an exported
// file with NATS stopped: every recorded verdict and decision is reproduced. `fleetflow explain` names the
// node shape too small for the one job no node can hold.
func TestReplayReproducesARecordedRunAndPredictsAPolicyChange(t *testing.T) {
	binary := fleetflowBinary(t)
	e := e2eenv.New(t, e2eenv.Options{FleetFile: fleetFile, CRDFiles: []string{"../testdata/crds/pytorchjobs.yaml"},
		PolicyFiles: []string{"testdata/policies/jobs-a-then-b.yaml", "testdata/policies/web-a-then-b.yaml",
			"testdata/policies/huge-on-c.yaml"},
		CleanKinds: []schema.GroupVersionKind{scenarios.PyTorchJobKind, deploymentKind, jobKind},
		Placer:     placer.PlacerConfig{HeartbeatTimeout: 6 * time.Second}})
	ctx := t.Context()

	var trains, batches, webs []workload
	var objects []*unstructured.Unstructured
	for i := range 8 {
		train := scenarios.PyTorchJob(ns, fmt.Sprintf("train-%d", i), scenarios.Replicas{Count: 1, CPU: "1", Memory: "2Gi"},
			scenarios.Replicas{Count: 1, CPU: "1", Memory: "2Gi", GPUs: 1})
		objects = append(objects, train, deployment(fmt.Sprintf("web-%d", i)), batchJob(fmt.Sprintf("batch-%d", i)))
		trains = append(trains, workload{scenarios.PyTorchJobKind, train.GetName()})
		webs = append(webs, workload{deploymentKind, fmt.Sprintf("web-%d", i)})
		batches = append(batches, workload{jobKind, fmt.Sprintf("batch-%d", i)})
	}
	huge := scenarios.PyTorchJob(ns, "huge", scenarios.Replicas{Count: 1, CPU: "1", Memory: "2Gi"},
		scenarios.Replicas{Count: 1, CPU: "2", Memory: "8Gi", GPUs: 4})
	huge.SetLabels(map[string]string{"size": "huge"})
	objects = append(objects, huge)
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, objects...); err != nil {
		t.Fatal(err)
	}
	jobs := slices.Concat(trains, batches)
	all := slices.Concat(jobs, webs)
	on := func(cluster string) func(workload) string { return func(workload) string { return cluster } }
	waitPlaced(t, e, "every workload on cluster-a, the first tier", all, on("cluster-a"))

	// The policy change: the web services move to cluster-c.
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, e2eenv.ReadObjects(t, "testdata/policies/web-c.yaml")...); err != nil {
		t.Fatal(err)
	}
	waitPlaced(t, e, "the web services moved to cluster-c", webs, on("cluster-c"))

	// The failover: cluster-a's apiserver stops, its jobs go to cluster-b; it comes back and its copies go.
	if err := e.Fleet.StopCluster(ctx, "cluster-a"); err != nil {
		t.Fatal(err)
	}
	waitPlaced(t, e, "the jobs failed over to cluster-b", jobs, on("cluster-b"))
	if err := e.Fleet.StartCluster(ctx, "cluster-a"); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, 3*e2eenv.Settle, "the copies on cluster-a deleted once it is back", func() bool {
		for _, w := range jobs {
			if e2eenv.Get(t, e.Clusters["cluster-a"], w.gvk, ns, w.name) != nil {
				return false
			}
		}
		return true
	})
	if status, _ := placement(t, e, workload{scenarios.PyTorchJobKind, "huge"}); status != string(schemas.VerdictUnschedulable) {
		t.Fatalf("the huge job is %q, want Unschedulable", status)
	}

	// What-if: the jobs' policy drops cluster-b. Asked of the running system once its placer has seen
	// cluster-a Ready again (its copies there may go before that: its applier retries the Deletes on its own),
	// then done for real.
	url := "--nats-url=" + e.Bus.URL
	e2eenv.Eventually(t, e2eenv.Settle, "the placer seeing cluster-a Ready again", func() bool {
		floor, err := replay.PlacerFloor(ctx, e.Bus.JetStream)
		if err != nil {
			t.Fatal(err)
		}
		h, err := replay.ReadStreams(ctx, e.Bus.JetStream, replay.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = h.Close() }()
		s := replay.NewSession(replay.Options{Through: floor})
		if _, err := s.Run(ctx, h); err != nil {
			t.Fatal(err)
		}
		c := s.Snapshot().Cluster("cluster-a")
		return c != nil && c.Ready
	})
	out := run(t, binary, false, "replay", url, "--policy", "testdata/policies/jobs-a-only.yaml", "--all", "-o", "json")
	var whatIf replay.WhatIfReport
	if err := json.Unmarshal(out, &whatIf); err != nil {
		t.Fatalf("what-if: %v\n%s", err, out)
	}
	predicted := map[string]replay.Outcome{}
	for _, c := range whatIf.Workloads {
		predicted[c.Workload] = c.WhatIf
	}
	for _, w := range all {
		p, ok := predicted[w.key()]
		if !ok {
			t.Fatalf("the what-if does not list %s; it lists:\n%s", w.key(), out)
		}
		want := "cluster-c"
		if slices.Contains(jobs, w) {
			want = "cluster-a"
		}
		if p.Status != schemas.VerdictPlaced || !slices.Equal(p.Clusters, []string{want}) {
			t.Errorf("what-if for %s: %s on %v, want Placed on %s", w.key(), p.Status, p.Clusters, want)
		}
	}
	if got, want := whatIf.Summary.Move, len(jobs); got != want {
		t.Errorf("the what-if moves %d workloads, want the %d jobs on cluster-b:\n%s", got, want, out)
	}
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, e2eenv.ReadObjects(t, "testdata/policies/jobs-a-only.yaml")...); err != nil {
		t.Fatal(err)
	}
	// Reality: every workload ends as predicted (placed where it said, or not placed).
	var differ []string
	e2eenv.Eventually(t, 2*e2eenv.Settle, "every workload as the what-if said", func() bool {
		differ = differ[:0]
		for _, w := range all {
			p := predicted[w.key()]
			status, cluster := placement(t, e, w)
			want := ""
			if p.Status == schemas.VerdictPlaced {
				want = p.Clusters[0]
			}
			if status != string(p.Status) || (want != "" && (cluster != want || e2eenv.Get(t, e.Clusters[want], w.gvk, ns, w.name) == nil)) {
				differ = append(differ, fmt.Sprintf("%s: %s on %q, predicted %s on %q", w.key(), status, cluster, p.Status, want))
			}
		}
		return len(differ) == 0
	})

	// Replay: from the streams, with the pipeline stopped so the history is complete.
	e.StopPipeline()
	fromStreams := replayed(t, binary, url)
	if fromStreams.Events == 0 || fromStreams.Reproduced < len(all) {
		t.Errorf("replayed %d events, reproduced %d outputs", fromStreams.Events, fromStreams.Reproduced)
	}
	// Exported, and replayed with NATS stopped.
	history := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(history, run(t, binary, false, "audit", "export", url), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Bus.Close()
	fromFile := replayed(t, binary, "--from", history)
	if fromFile.Reproduced != fromStreams.Reproduced || fromFile.Events != fromStreams.Events {
		t.Errorf("from the file: %d events, %d reproduced; from the streams: %d, %d", fromFile.Events, fromFile.Reproduced,
			fromStreams.Events, fromStreams.Reproduced)
	}

	// Explain the job no node holds: cluster-c has the GPUs in total, not on one node.
	explained := string(run(t, binary, false, "explain", "PyTorchJob/"+ns+"/huge", "--from", history))
	for _, want := range []string{"NodeFit", "FAIL", "LargestFreeNode", "nvidia.com/gpu 2 free", "nvidia.com/gpu 4", "Unschedulable"} {
		if !strings.Contains(explained, want) {
			t.Errorf("explain does not say %q:\n%s", want, explained)
		}
	}
}
