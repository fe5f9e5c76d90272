package localfleet

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// OperatorWebhook is one admission webhook an operator serves, as its own manifests declare it.
type OperatorWebhook struct {
	// Name is the webhook's name in the operator's manifests, e.g. "mpod.kb.io".
	Name     string
	Path     string
	Mutating bool
	// Group, Version and Resource select the objects it admits on create and update (pods: create only).
	Group, Version, Resource string
	// LabelKey, if set, limits it to objects carrying that label, so that a stopped operator blocks only
	// its own pods, not every pod of the cluster.
	LabelKey string
}

var (
	mutatingWebhooksGVR   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	validatingWebhooksGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
)

// webhookConfigName is the name of the Mutating- and ValidatingWebhookConfiguration of an operator.
func webhookConfigName(op Operator) string { return "fleetflow-local-" + op.Name }

// registerWebhooks copies the cluster's serving certificate to env.Dir/tls.{crt,key}, the names
// controller-runtime's webhook server reads, and applies the operator's webhook configurations with URLs on
// env.WebhookPort. The certificate is self-signed, so it is its own caBundle.
func registerWebhooks(ctx context.Context, cfg *rest.Config, op Operator, env OperatorEnv) error {
	certPEM, err := os.ReadFile(filepath.Join(env.CertDir, "apiserver.crt"))
	if err != nil {
		return fmt.Errorf("webhook certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(env.CertDir, "apiserver.key"))
	if err != nil {
		return fmt.Errorf("webhook certificate: %w", err)
	}
	if err := os.WriteFile(filepath.Join(env.Dir, "tls.crt"), certPEM, 0o644); err != nil {
		return fmt.Errorf("webhook certificate: %w", err)
	}
	if err := os.WriteFile(filepath.Join(env.Dir, "tls.key"), keyPEM, 0o600); err != nil {
		return fmt.Errorf("webhook certificate: %w", err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, mutating := range []bool{true, false} {
		obj := webhookConfiguration(op, env.WebhookPort, certPEM, mutating)
		if obj == nil {
			continue
		}
		gvr := validatingWebhooksGVR
		if mutating {
			gvr = mutatingWebhooksGVR
		}
		if _, err := client.Resource(gvr).Apply(ctx, obj.GetName(), obj,
			metav1.ApplyOptions{FieldManager: "fleetflow-localfleet", Force: true}); err != nil {
			return fmt.Errorf("register webhooks: %w", err)
		}
	}
	return nil
}

// webhookConfiguration returns the Mutating- or ValidatingWebhookConfiguration of op's webhooks of that kind,
// or nil when it has none.
func webhookConfiguration(op Operator, port int, caPEM []byte, mutating bool) *unstructured.Unstructured {
	var webhooks []any
	for _, w := range op.Webhooks {
		if w.Mutating != mutating {
			continue
		}
		operations := []any{"CREATE", "UPDATE"}
		if w.Group == "" && w.Resource == "pods" {
			operations = []any{"CREATE"}
		}
		hook := map[string]any{
			"name": w.Name,
			"clientConfig": map[string]any{
				"url":      fmt.Sprintf("https://127.0.0.1:%d%s", port, w.Path),
				"caBundle": base64.StdEncoding.EncodeToString(caPEM),
			},
			"rules": []any{map[string]any{
				"apiGroups": []any{w.Group}, "apiVersions": []any{w.Version}, "resources": []any{w.Resource},
				"operations": operations,
			}},
			"admissionReviewVersions": []any{"v1"},
			"sideEffects":             "None",
			"failurePolicy":           "Fail",
		}
		if w.LabelKey != "" {
			hook["objectSelector"] = map[string]any{"matchExpressions": []any{
				map[string]any{"key": w.LabelKey, "operator": "Exists"},
			}}
		}
		webhooks = append(webhooks, hook)
	}
	if len(webhooks) == 0 {
		return nil
	}
	kind := "ValidatingWebhookConfiguration"
	if mutating {
		kind = "MutatingWebhookConfiguration"
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       kind,
		"metadata":   map[string]any{"name": webhookConfigName(op)},
		"webhooks":   webhooks,
	}}
	return obj
}
