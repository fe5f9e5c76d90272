package benchbinding

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/frameworkcrds"
	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// builtinOperator is what creates a built-in kind's pods: no operator to start.
const builtinOperator = "kube-controller-manager"

// operatorsOf are the catalog operators the configured kinds need, each once.
func operatorsOf(cfg *Config) []string { return OperatorsOf(cfg.Kinds) }

// OperatorsOf lists the local fleet's operators the named kinds need, each once, in the kinds' order; an
// unknown kind needs none (Config.validate refuses it).
func OperatorsOf(kinds []string) []string {
	var ops []string
	for _, name := range kinds {
		if k := kindNamed(name); k != nil && k.Operator != builtinOperator && !slices.Contains(ops, k.Operator) {
			ops = append(ops, k.Operator)
		}
	}
	return ops
}

// checkOperators fails when a kind's operator is not in the local fleet's catalog or its binary is missing.
func checkOperators(cfg *Config) error {
	for _, name := range cfg.Kinds {
		k := kindNamed(name)
		if k.Operator == builtinOperator {
			continue
		}
		if _, err := localfleet.LookupOperator(k.Operator); err != nil {
			return fmt.Errorf("--kinds %s: the local fleet cannot run %s, which creates its pods: %w", name, k.Operator, err)
		}
		if err := localfleet.CheckOperatorBinaries(cfg.BinDir, k.Operator); err != nil {
			return fmt.Errorf("--kinds %s: %w", name, err)
		}
	}
	return nil
}

// operatorCRDs are the CRDs the operators need, labelled for the Duplicate policy.
func operatorCRDs(ops []string) ([]*unstructured.Unstructured, error) {
	crds, err := frameworkcrds.Objects()
	if err != nil {
		return nil, err
	}
	// Two files define mpijobs.kubeflow.org; the first, mpijobs-v1.yaml, is the version the training operator
	// serves.
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range crds {
		if byName[o.GetName()] == nil {
			byName[o.GetName()] = o
		}
	}
	var out []*unstructured.Unstructured
	for _, name := range ops {
		op, err := localfleet.LookupOperator(name)
		if err != nil {
			return nil, err
		}
		for _, crd := range op.CRDs {
			obj := byName[crd]
			if obj == nil {
				return nil, fmt.Errorf("operator %s needs CRD %s, which the bench does not carry", name, crd)
			}
			out = append(out, obj)
		}
	}
	return frameworkcrds.Propagated(out), nil
}

// propagatePolicy is level 1: a Duplicate policy that copies the labelled CRDs to every workload cluster.
func propagatePolicy() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fleetflow.io/v1alpha1", "kind": "SchedulePolicy",
		"metadata": map[string]any{"name": "bench-binding-propagate-crds"},
		"spec": map[string]any{
			"resourceSelectors": map[string]any{
				"kinds":          []any{map[string]any{"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition"}},
				"labelSelectors": []any{map[string]any{"matchLabels": map[string]any{frameworkcrds.PropagateLabel: "true"}}},
			},
			"spreadConstraints": map[string]any{"spreadMode": "Duplicate"},
		},
	}}
}

// waitServed waits until every cluster's latest installed-APIs event in the stream the placer reads lists
// every kind, so that no gang is judged against a cluster not yet known to serve it.
func waitServed(ctx context.Context, b *app.Bus, clusters []string, kinds []schema.GroupVersionKind) error {
	stream, err := b.JetStream.Stream(ctx, schemas.StreamEvents)
	if err != nil {
		return err
	}
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		missing := ""
		for _, cluster := range clusters {
			if m := unserved(ctx, stream, cluster, kinds); m != "" {
				missing = cluster + " does not report " + m
				break
			}
		}
		if missing == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", missing, ctx.Err())
		case <-ticker.C:
		}
	}
}

// unserved returns the first kind the cluster's latest installed-APIs event lacks, "" when it lists all.
func unserved(ctx context.Context, stream jetstream.Stream, cluster string, kinds []schema.GroupVersionKind) string {
	msg, err := stream.GetLastMsgForSubject(ctx, schemas.ClusterAPIsSubject(cluster))
	if err != nil {
		return "its APIs"
	}
	event, err := bus.Decode(msg.Header, msg.Data)
	if err != nil {
		return "its APIs"
	}
	payload, err := codec.DecodePayload(event)
	if err != nil {
		return "its APIs"
	}
	apis, ok := payload.(*schemas.ClusterAPIs)
	if !ok {
		return "its APIs"
	}
	for _, gvk := range kinds {
		if api := gvk.GroupVersion().String() + "/" + gvk.Kind; !slices.Contains(apis.APIs, api) {
			return api
		}
	}
	return ""
}
