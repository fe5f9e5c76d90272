package browser

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/consumers/ui"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/schemas"
)

var pytorchJobKind = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}

// chromium finds Debian's chromium; without it the test skips, but under CI=true, where .ci/run installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (apt-get install -y chromium); CI must run the browser test")
	}
	t.Skip("chromium is not installed: apt-get install -y chromium to run the browser test")
	return ""
}

// pytorchJob is a PyTorchJob in team-a of one master and workers workers of gpus GPUs each.
func pytorchJob(name string, workers, gpus int) string {
	return fmt.Sprintf(`apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: %s, namespace: team-a}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, image: example.com/mnist:1, resources: {requests: {cpu: "1", memory: 1Gi}}}]
    Worker:
      replicas: %d
      template:
        spec:
          containers: [{name: pytorch, image: example.com/mnist:1, resources: {limits: {nvidia.com/gpu: "%d"}}}]
`, name, workers, gpus)
}

// browser is a headless Chromium on the view at base.
type browser struct {
	t     *testing.T
	ctx   context.Context
	base  string
	shots string
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(chromium(t)), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.WindowSize(1400, 1000)}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// A dialog is a script the page did not mean to run (alert(1) from a value that became markup).
	if err := chromedp.Listen(ctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			t.Errorf("a dialog opened: %q: a value from the streams ran as script", d.Message)
		}
	}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx, base: base, shots: t.ArtifactDir()}
}

// run runs steps with a bound, failing the test on error.
func (b *browser) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, e2eenv.Settle)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// value runs one action that returns a value, failing the test on error.
func value[T any](b *browser, what string, action chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, e2eenv.Settle)
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// until polls check (which runs actions of its own) until it returns nil, failing with its last error.
func (b *browser) until(what string, check func(ctx context.Context) error) {
	b.t.Helper()
	deadline := time.Now().Add(e2eenv.Settle)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		err := check(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out after %s waiting for %s: %v", e2eenv.Settle, what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pageText opens path and waits until the text of selector holds every want.
func (b *browser) pageText(path, selector string, want ...string) string {
	b.t.Helper()
	var text string
	b.until(path+" showing "+strings.Join(want, ", "), func(ctx context.Context) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS(selector))); err != nil {
			return err
		}
		var err error
		if text, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(selector))); err != nil {
			return err
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				return fmt.Errorf("%s holds %q, not %q", selector, text, w)
			}
		}
		return nil
	})
	return text
}

func (b *browser) screenshot(name string) {
	b.t.Helper()
	png := value(b, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// TestFleetViewInTheBrowser walks every page as a person would: the clusters, a placed workload on its cluster
// and an unschedulable one with its reason, the live feed (paused and resumed), and the what-if.
func TestFleetViewInTheBrowser(t *testing.T) {
	chromium(t)
	e := e2eenv.New(t, e2eenv.Options{FleetFile: fleetFile, CRDFiles: []string{"../testdata/crds/pytorchjobs.yaml"},
		PolicyFiles: []string{"../testdata/policies/a-then-b.yaml"}, CleanKinds: []schema.GroupVersionKind{pytorchJobKind}})
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- ui.Run(ctx, e.Bus.JetStream, ui.RunOptions{Listen: "127.0.0.1:0", Ready: func(a string) { addr <- a }}, e.Log)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("the view ended with %v", err)
		}
	})
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-served:
		t.Fatalf("the view did not start: %v", err)
	}
	apply := func(yaml string) {
		t.Helper()
		if err := e.ControlPlane.Apply(t.Context(), e2eenv.FieldManager, e2eenv.ParseObjects(t, yaml)...); err != nil {
			t.Fatal(err)
		}
	}
	apply(pytorchJob("fits", 2, 1))
	apply(pytorchJob("too-big", 1, 16)) // no node has 16 GPUs
	b := newBrowser(t, base)

	// Fleet: both clusters, Ready, with their GPU bars and heat maps.
	fleet := b.pageText("/", "main", "2 clusters, 2 Ready.", "cluster-a", "cluster-b", "nvidia.com/gpu", "Free GPUs per node")
	if !strings.Contains(fleet, "2 of 8 requested") && !strings.Contains(fleet, "0 of 8 requested") {
		t.Errorf("the fleet page shows no GPU bar of 8 GPUs per cluster:\n%s", fleet)
	}
	var maps int
	b.until("the heat maps drawn", func(ctx context.Context) error {
		var err error
		maps, err = chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll("img.heatmap")].filter(i => i.complete && i.naturalWidth > 0).length`))
		if err == nil && maps != 2 {
			err = fmt.Errorf("%d heat maps drawn", maps)
		}
		return err
	})
	if maps != 2 {
		t.Errorf("%d heat maps drawn, want one per cluster", maps)
	}
	b.screenshot("fleet")

	// Workloads: filtered by name in the form, the placed job on cluster-a.
	b.run("filter the workloads", chromedp.Navigate(base+"/workloads"), chromedp.SendKeys(chromedp.CSS(`input[name=name]`), "fits"),
		chromedp.Submit(chromedp.CSS(`input[name=name]`)), chromedp.WaitVisible(chromedp.CSS(`#workload-rows`)))
	rows := b.pageText("/workloads?name=fits", "#workload-rows", "fits", "Placed", "cluster-a")
	if strings.Contains(rows, "too-big") {
		t.Errorf("the name filter lets too-big through: %s", rows)
	}
	b.pageText("/workloads?verdict=Unschedulable", "#workload-rows", "too-big", "Unschedulable")
	b.screenshot("workloads")

	// The unschedulable workload's page: its reasons, its explanation and its audit trail.
	b.run("open too-big", chromedp.Click(chromedp.CSS(`#workload-rows a`)), chromedp.WaitVisible(chromedp.CSS(`#verdict`)))
	verdict := value(b, "verdict", chromedp.Text(chromedp.CSS(`#verdict`)))
	reasons := value(b, "reasons", chromedp.Text(chromedp.CSS(`#reasons`)))
	trail := value(b, "trail", chromedp.Text(chromedp.CSS(`#trail`)))
	if !strings.Contains(verdict, "Unschedulable") || !strings.Contains(reasons, "cluster-a") || !strings.Contains(reasons, "cluster-b") {
		t.Errorf("too-big shows verdict %q, reasons %q; want Unschedulable with a reason per cluster", verdict, reasons)
	}
	if !strings.Contains(trail, "Unschedulable") {
		t.Errorf("the audit trail lacks the verdict: %q", trail)
	}
	key := schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "team-a", Name: "too-big"}.Key()
	b.pageText("/workload?key="+url.QueryEscape(key), "#explain-clusters", "cluster-a", "FAIL")
	b.screenshot("workload")

	// A reason holding markup is shown as text: published as the placer would publish a verdict.
	const markup = `<img src=x onerror=alert(1)>`
	e.Publish(t, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref(t, e, "too-big")), "e2e-markup-verdict",
		&schemas.PlacementVerdict{Workload: ref(t, e, "too-big"), Sequence: 1 << 40, Status: schemas.VerdictUnschedulable,
			Reasons: map[string]string{"cluster-a": markup}})
	b.pageText("/workload?key="+url.QueryEscape(key), "#reasons", markup)
	images := value(b, "count images", chromedp.Evaluate[int](`document.querySelectorAll("#reasons img").length`))
	if images != 0 {
		t.Errorf("the reason became %d img elements", images)
	}

	// Live: a decision made now appears; paused, the next one is held until resumed.
	b.run("open live", chromedp.Navigate(base+"/live"), chromedp.WaitVisible(chromedp.CSS(`#feed`)))
	b.until("the live feed connected", func(ctx context.Context) error { return textIs(ctx, "#live-state", "live") })
	apply(pytorchJob("live-one", 1, 1))
	made := time.Now()
	b.until("live-one in the live feed", func(ctx context.Context) error { return textHas(ctx, "#feed", "live-one") })
	t.Logf("live-one reached the live feed %s after it was submitted", time.Since(made).Round(10*time.Millisecond))
	b.screenshot("live")
	b.run("pause", chromedp.Click(chromedp.CSS(`#pause`)))
	apply(pytorchJob("live-two", 1, 1))
	b.until("live-two held while paused", func(ctx context.Context) error { return textHas(ctx, "#held", "new while paused") })
	feed := value(b, "read the paused feed", chromedp.Text(chromedp.CSS(`#feed`)))
	if strings.Contains(feed, "live-two") {
		t.Error("the paused feed shows live-two")
	}
	b.run("resume", chromedp.Click(chromedp.CSS(`#pause`)))
	b.until("live-two after resuming", func(ctx context.Context) error { return textHas(ctx, "#feed", "live-two") })

	// What-if: a policy that keeps team-a off cluster-a moves fits to cluster-b.
	const policy = `apiVersion: fleetflow.io/v1alpha1
kind: SchedulePolicy
metadata: {name: a-then-b}
spec:
  resourceSelectors:
    kinds: [{group: kubeflow.org, kind: PyTorchJob}]
  orderedClusterSelector:
    tiers:
    - matchLabels: {fleetflow.io/name: cluster-b}
`
	b.run("run the what-if", chromedp.Navigate(base+"/whatif"), chromedp.SetValue(chromedp.CSS(`textarea[name=policy]`), policy),
		chromedp.Click(chromedp.CSS(`#whatif button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#whatif-summary`)))
	summary := value(b, "what-if summary", chromedp.Text(chromedp.CSS(`#whatif-summary`)))
	changes := value(b, "what-if workloads", chromedp.Text(chromedp.CSS(`#whatif-workloads`)))
	if !strings.Contains(summary, "move") || !strings.Contains(changes, "PyTorchJob/team-a/fits") || !strings.Contains(changes, "Placed on cluster-b") {
		t.Errorf("what-if summary %q, changes %q; want fits moving to cluster-b", summary, changes)
	}
	b.screenshot("whatif")
}

// ref is the reference of a PyTorchJob of team-a as the control plane has it.
func ref(t *testing.T, e *e2eenv.Env, name string) schemas.ObjectRef {
	t.Helper()
	obj := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-a", name)
	if obj == nil {
		t.Fatalf("PyTorchJob team-a/%s is not on the control plane", name)
	}
	return schemas.ObjectRef{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: "team-a", Name: name, UID: string(obj.GetUID())}
}

func textHas(ctx context.Context, selector, want string) error {
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(selector)))
	if err != nil {
		return err
	}
	if !strings.Contains(text, want) {
		return fmt.Errorf("%s holds %q", selector, text)
	}
	return nil
}

func textIs(ctx context.Context, selector, want string) error {
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(selector)))
	if err != nil {
		return err
	}
	if text != want {
		return errors.New(selector + " holds " + text)
	}
	return nil
}
