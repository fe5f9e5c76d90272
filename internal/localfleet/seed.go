package localfleet

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fleetflow/fleetflow/internal/fleetspec"
)

const (
	// SeedFieldManager owns every field seeding writes, with server-side apply.
	SeedFieldManager = "fleetflow-seed"
	// DefaultKWOKPods is the pod capacity of a KWOK node whose description gives none: the scheduler binds
	// no pod to a node without one. It is a kubelet's default.
	DefaultKWOKPods = 110
	// SeedNamespace holds the pods that stand for the requests already running on seeded nodes.
	SeedNamespace = "fleetflow-seed"
	// SeedPodLabel marks those pods; its value is the node name.
	SeedPodLabel = "fleetflow.io/seed-requested-on"
	// SeedReadyReason is the reason of the Ready condition on seeded nodes.
	SeedReadyReason = "FleetflowSeeded"

	seedPodImage = "registry.k8s.io/pause:3.10"
)

// SeedPodName is the name of the pod that carries a seeded node's requested resources.
func SeedPodName(nodeName string) string { return "requested-" + nodeName }

// SeedNodes makes the cluster's nodes exist as plain Node objects (no kubelet runs): labels, taints and
// unschedulable from the fleet description, status capacity and allocatable, and condition Ready=True. A
// node with requested resources gets a pod bound to it, phase Running, in SeedNamespace that requests exactly
// those resources, because running pods are what a capacity reader subtracts from allocatable.
//
// Everything is written with server-side apply, so a second call with the same cluster changes nothing
// (no resourceVersion moves). Nodes that the description no longer lists are left alone.
func SeedNodes(ctx context.Context, config *rest.Config, cluster fleetspec.Cluster) error {
	return SeedNodesWith(ctx, config, cluster, SeedOptions{})
}

// SeedOptions change how nodes are seeded.
type SeedOptions struct {
	// KWOK makes the nodes kwok's (Options.RunPods): annotated with KWOKNodeAnnotation, phase Running
	// (kwok heartbeats only running nodes), and with DefaultKWOKPods pods when the description gives no
	// pod capacity.
	KWOK bool
}

// SeedNodesWith is SeedNodes with options.
func SeedNodesWith(ctx context.Context, config *rest.Config, cluster fleetspec.Cluster, opts SeedOptions) error {
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("seed cluster %s: %w", cluster.Name, err)
	}
	nodes := cluster.AllNodes()
	for _, node := range nodes {
		if err := applyNode(ctx, client, node, opts); err != nil {
			return fmt.Errorf("seed cluster %s: node %s: %w", cluster.Name, node.Name, err)
		}
	}
	namespaceReady := false
	for _, node := range nodes {
		if len(node.Requested) == 0 {
			if err := deleteSeedPod(ctx, client, node.Name); err != nil {
				return fmt.Errorf("seed cluster %s: node %s: %w", cluster.Name, node.Name, err)
			}
			continue
		}
		if !namespaceReady {
			if err := applyNamespace(ctx, client, SeedNamespace, nil); err != nil {
				return fmt.Errorf("seed cluster %s: %w", cluster.Name, err)
			}
			namespaceReady = true
		}
		if err := applySeedPod(ctx, client, node); err != nil {
			return fmt.Errorf("seed cluster %s: node %s: %w", cluster.Name, node.Name, err)
		}
	}
	return nil
}

// SeedNamespaces creates the fleet description's namespaces with their labels, for the control plane.
func SeedNamespaces(ctx context.Context, config *rest.Config, namespaces map[string]fleetspec.Namespace) error {
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("seed namespaces: %w", err)
	}
	for name, ns := range namespaces {
		if err := applyNamespace(ctx, client, name, ns.Labels); err != nil {
			return fmt.Errorf("seed namespaces: %w", err)
		}
	}
	return nil
}

// Seed seeds a running fleet from a fleet description: namespaces into the control plane, and each
// described cluster's nodes into the workload cluster of the same name; KWOK nodes if the fleet runs pods.
func Seed(ctx context.Context, fleet *Fleet, spec *fleetspec.Fleet) error {
	for _, cluster := range spec.Clusters {
		target, ok := fleet.Cluster(cluster.Name)
		if !ok || target == fleet.ControlPlane {
			return fmt.Errorf("seed: fleet description names cluster %q, which is not a workload cluster of the fleet in %s", cluster.Name, fleet.Dir)
		}
	}
	if len(spec.Namespaces) > 0 {
		if err := SeedNamespaces(ctx, fleet.ControlPlane.RESTConfig(), spec.Namespaces); err != nil {
			return err
		}
	}
	for _, cluster := range spec.Clusters {
		target, _ := fleet.Cluster(cluster.Name)
		if err := SeedNodesWith(ctx, target.RESTConfig(), cluster, SeedOptions{KWOK: fleet.RunsPods()}); err != nil {
			return err
		}
	}
	return nil
}

var applyOptions = metav1.ApplyOptions{FieldManager: SeedFieldManager, Force: true}

func applyNamespace(ctx context.Context, client kubernetes.Interface, name string, labels map[string]string) error {
	ns := corev1ac.Namespace(name)
	if len(labels) > 0 {
		ns.WithLabels(labels)
	}
	if _, err := client.CoreV1().Namespaces().Apply(ctx, ns, applyOptions); err != nil {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	return nil
}

func applyNode(ctx context.Context, client kubernetes.Interface, node fleetspec.Node, opts SeedOptions) error {
	spec := corev1ac.NodeSpec()
	if node.Unschedulable {
		spec.WithUnschedulable(true)
	}
	for _, taint := range node.Taints {
		spec.WithTaints(corev1ac.Taint().WithKey(taint.Key).WithValue(taint.Value).WithEffect(taint.Effect))
	}
	desired := corev1ac.Node(node.Name).WithSpec(spec)
	if len(node.Labels) > 0 {
		desired.WithLabels(node.Labels)
	}
	if opts.KWOK {
		// With the node's creation: kwok v0.8.0 takes on a node only when it first sees it with the
		// annotation, not when an update adds it.
		desired.WithAnnotations(map[string]string{KWOKNodeAnnotation: KWOKNodeAnnotationValue})
	}
	applied, err := client.CoreV1().Nodes().Apply(ctx, desired, applyOptions)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}

	// Keep the times of a Ready condition that is already true: new times on every call would make
	// seeding rewrite every node each time.
	since := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	heartbeat := since
	for _, condition := range applied.Status.Conditions {
		if condition.Type == corev1.NodeReady && condition.Status == corev1.ConditionTrue {
			since, heartbeat = condition.LastTransitionTime, condition.LastHeartbeatTime
		}
	}
	allocatable := node.Allocatable
	if _, ok := allocatable[corev1.ResourcePods]; opts.KWOK && !ok {
		allocatable = allocatable.DeepCopy()
		if allocatable == nil {
			allocatable = corev1.ResourceList{}
		}
		allocatable[corev1.ResourcePods] = *resource.NewQuantity(DefaultKWOKPods, resource.DecimalSI)
	}
	status := corev1ac.NodeStatus().
		WithCapacity(allocatable).
		WithAllocatable(allocatable).
		WithConditions(corev1ac.NodeCondition().
			WithType(corev1.NodeReady).
			WithStatus(corev1.ConditionTrue).
			WithReason(SeedReadyReason).
			WithMessage("seeded by fleetflow; no kubelet runs on this node").
			WithLastHeartbeatTime(heartbeat).
			WithLastTransitionTime(since))
	if opts.KWOK {
		status.WithPhase(corev1.NodeRunning)
	}
	if _, err := client.CoreV1().Nodes().ApplyStatus(ctx, corev1ac.Node(node.Name).WithStatus(status), applyOptions); err != nil {
		return fmt.Errorf("apply status: %w", err)
	}
	return nil
}

func applySeedPod(ctx context.Context, client kubernetes.Interface, node fleetspec.Node) error {
	// The apiserver insists on limits equal to requests for extended resources such as GPUs; cpu and
	// memory stay request-only like most real workloads.
	limits := corev1.ResourceList{}
	for name, quantity := range node.Requested {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage {
			limits[name] = quantity
		}
	}
	resources := corev1ac.ResourceRequirements().WithRequests(node.Requested)
	if len(limits) > 0 {
		resources.WithLimits(limits)
	}
	pod := corev1ac.Pod(SeedPodName(node.Name), SeedNamespace).
		WithLabels(map[string]string{SeedPodLabel: node.Name}).
		WithSpec(corev1ac.PodSpec().
			WithNodeName(node.Name).
			WithContainers(corev1ac.Container().
				WithName("requested").
				WithImage(seedPodImage).
				WithResources(resources)))
	pods := client.CoreV1().Pods(SeedNamespace)
	_, err := pods.Apply(ctx, pod, applyOptions)
	if apierrors.IsInvalid(err) {
		// Requests of a running pod are immutable: replace the pod when the description changed them.
		if err := deleteSeedPod(ctx, client, node.Name); err != nil {
			return err
		}
		_, err = pods.Apply(ctx, pod, applyOptions)
	}
	if err != nil {
		return fmt.Errorf("apply pod %s/%s: %w", SeedNamespace, SeedPodName(node.Name), err)
	}
	status := corev1ac.Pod(SeedPodName(node.Name), SeedNamespace).
		WithStatus(corev1ac.PodStatus().WithPhase(corev1.PodRunning))
	if _, err := pods.ApplyStatus(ctx, status, applyOptions); err != nil {
		return fmt.Errorf("apply status of pod %s/%s: %w", SeedNamespace, SeedPodName(node.Name), err)
	}
	return nil
}

// deleteSeedPod removes a node's seed pod at once; without a kubelet a graceful delete would never finish.
func deleteSeedPod(ctx context.Context, client kubernetes.Interface, nodeName string) error {
	zero := int64(0)
	err := client.CoreV1().Pods(SeedNamespace).Delete(ctx, SeedPodName(nodeName), metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s/%s: %w", SeedNamespace, SeedPodName(nodeName), err)
	}
	return nil
}
