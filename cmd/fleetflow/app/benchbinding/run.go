package benchbinding

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// fieldManager owns what the bench writes to the control plane.
const fieldManager = "fleetflow-bench-binding"

// Result is one run: the fleet and the gangs, and what each mode measured.
type Result struct {
	Seed            int64        `json:"seed"`
	Clusters        int          `json:"clusters"`
	NodesPerCluster int          `json:"nodesPerCluster"`
	FreeGPUs        int          `json:"freeGPUs"`
	Workloads       int          `json:"workloads"`
	SubmitWorkers   int          `json:"submitWorkers"`
	MaxPods         int          `json:"maxPods"`
	MaxGPUs         int          `json:"maxGPUs"`
	Kinds           []string     `json:"kinds"`
	BindTimeout     string       `json:"bindTimeout"`
	Modes           []ModeResult `json:"modes"`
}

// Run measures every configured mode, one fleet each, one after another.
func Run(ctx context.Context, cfg Config) (_ *Result, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if err := checkOperators(&cfg); err != nil {
		return nil, err
	}
	base := cfg.Dir
	if base == "" {
		tmp, err := os.MkdirTemp("", "fleetflow-bench-binding-")
		if err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, os.RemoveAll(tmp)) }()
		base = tmp
	}
	spec := fleetSpec(&cfg)
	res := &Result{Seed: cfg.Seed, Clusters: cfg.Clusters, NodesPerCluster: cfg.NodesPerCluster, FreeGPUs: freeGPUs(spec),
		Workloads: cfg.Workloads, SubmitWorkers: cfg.SubmitWorkers, MaxPods: cfg.MaxPods, MaxGPUs: cfg.MaxGPUs, Kinds: cfg.Kinds, BindTimeout: cfg.BindTimeout.String()}
	for _, name := range cfg.Modes {
		mode := modeNamed(name)
		mr, err := runMode(ctx, &cfg, mode, filepath.Join(base, mode.Name))
		if err != nil {
			return res, fmt.Errorf("mode %s: %w", mode.Name, err)
		}
		res.Modes = append(res.Modes, *mr)
	}
	return res, nil
}

func (c *Config) progress(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, "bench binding: "+format+"\n", args...)
	}
}

// runMode starts a fleet for one mode, places the gangs through the pipeline and measures their binding.
func runMode(parent context.Context, cfg *Config, mode Mode, dir string) (_ *ModeResult, err error) {
	ctx, cancel := context.WithTimeout(parent, cfg.Timeout)
	defer cancel()
	spec := fleetSpec(cfg)
	names := make([]string, len(spec.Clusters))
	expected := map[string]int{}
	for i, c := range spec.Clusters {
		names[i] = c.Name
		expected[c.Name] = len(c.AllNodes())
	}
	cfg.progress("%s: starting %d workload clusters with kube-scheduler (%s scoring), controller manager and kwok in %s",
		mode.Name, len(names), scoringName(mode.Scoring), dir)
	fleet, err := localfleet.Start(ctx, localfleet.Options{Dir: dir, Clusters: names, BinDir: cfg.BinDir, Logger: cfg.Log,
		StartTimeout: cfg.Timeout, RunPods: true, SchedulerScoring: mode.Scoring})
	if err != nil {
		return nil, err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(parent), time.Minute)
		defer cancel()
		err = errors.Join(err, fleet.Stop(stopCtx))
	}()
	if err := localfleet.Seed(ctx, fleet, spec); err != nil {
		return nil, err
	}
	controlPlane, err := kube.NewClients(fleet.ControlPlane.RESTConfig())
	if err != nil {
		return nil, err
	}
	clusters := map[string]*kube.Clients{}
	for _, c := range fleet.Workloads {
		if clusters[c.Name], err = kube.NewClients(c.RESTConfig()); err != nil {
			return nil, err
		}
	}
	if err := register(ctx, controlPlane, fleet, cfg, mode.Pin); err != nil {
		return nil, err
	}

	b, err := app.OpenBus(ctx, app.BusOptions{DataDir: filepath.Join(dir, "nats"), Listen: "127.0.0.1:0",
		Streams: streams.DefaultOptions()}, fieldManager, cfg.Log)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	// Pods pending past the bind timeout count as lost; the placer must not move their workloads meanwhile.
	all := &app.AllInOne{ControlPlane: controlPlane, Kinds: gvks(cfg), SkippedNamespaces: app.DefaultSkipped(),
		Placer: placer.PlacerConfig{PendingTimeout: time.Hour, Fit: mode.Fit}}
	pipelineCtx, stopPipeline := context.WithCancel(ctx)
	pipelineDone := make(chan error, 1)
	go func() { pipelineDone <- all.Run(pipelineCtx, b, cfg.Log) }()
	defer func() {
		stopPipeline()
		err = errors.Join(err, <-pipelineDone)
	}()
	if err := app.WaitObserved(ctx, b, expected); err != nil {
		return nil, err
	}
	if ops := operatorsOf(cfg); len(ops) > 0 {
		cfg.progress("%s: fleetflow copies the CRDs of %v to every cluster; starting the operators once they are served", mode.Name, ops)
		if err := fleet.StartOperatorsEverywhere(ctx, ops...); err != nil {
			return nil, err
		}
	}
	if err := waitServed(ctx, b, names, gvks(cfg)); err != nil {
		return nil, err
	}

	gs := gangs(cfg)
	objs := make([]*unstructured.Unstructured, len(gs))
	for i, g := range gs {
		objs[i] = g.object()
	}
	cfg.progress("%s: fleet observed; submitting %d gangs", mode.Name, len(gs))
	submitted := time.Now()
	if err := submit(ctx, controlPlane, objs, cfg.SubmitWorkers); err != nil {
		return nil, err
	}
	m := &measurer{cfg: cfg, controlPlane: controlPlane, clusters: clusters, gangs: gs, submitted: submitted}
	mr, err := m.run(ctx, fleet, pipelineDone)
	if err != nil {
		return nil, err
	}
	mr.Mode = mode
	cfg.progress("%s: %d placed, %d fully bound, %d pods pending", mode.Name, mr.Placed, mr.FullyBound, mr.PodsPending)
	return mr, nil
}

// register registers the clusters on the control plane and applies one BinPack policy for the bench's kinds,
// which pins pods when pin is set.
func register(ctx context.Context, controlPlane *kube.Clients, fleet *localfleet.Fleet, cfg *Config, pin bool) error {
	if err := app.InstallControlPlaneCRDs(ctx, controlPlane, fieldManager); err != nil {
		return err
	}
	for _, c := range fleet.Workloads {
		kubeconfig, err := os.ReadFile(c.KubeconfigPath)
		if err != nil {
			return err
		}
		if err := app.RegisterCluster(ctx, controlPlane, c.Name, kubeconfig, map[string]string{"fleetflow.io/bench": "binding"},
			nil, fieldManager); err != nil {
			return err
		}
	}
	if err := controlPlane.EnsureNamespace(ctx, benchNamespace, fieldManager, nil); err != nil {
		return err
	}
	kinds := make([]any, 0, len(cfg.Kinds))
	for _, gvk := range gvks(cfg) {
		kinds = append(kinds, map[string]any{"group": gvk.Group, "kind": gvk.Kind})
	}
	var objs []*unstructured.Unstructured
	if ops := operatorsOf(cfg); len(ops) > 0 {
		crds, err := operatorCRDs(ops)
		if err != nil {
			return err
		}
		objs = append(objs, crds...)
		objs = append(objs, propagatePolicy())
	}
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fleetflow.io/v1alpha1", "kind": "SchedulePolicy",
		"metadata": map[string]any{"name": "bench-binding"},
		"spec":     map[string]any{"resourceSelectors": map[string]any{"kinds": kinds}, "scoring": "BinPack", "pinPods": pin},
	}}
	return controlPlane.Apply(ctx, fieldManager, append(objs, policy)...)
}

func gvks(cfg *Config) []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, len(cfg.Kinds))
	for i, name := range cfg.Kinds {
		out[i] = kindNamed(name).GVK
	}
	return out
}

func scoringName(scoring string) string {
	if scoring == localfleet.ScoringDefault {
		return "LeastAllocated, the default"
	}
	return scoring
}

// submit applies the gangs to the control plane, workers at a time, in order within each worker.
func submit(ctx context.Context, controlPlane *kube.Clients, objs []*unstructured.Unstructured, workers int) error {
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(objs); i += workers {
				if err := controlPlane.Apply(ctx, fieldManager, objs[i]); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
