package localfleet_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
)

// TestRunPods starts a fleet whose workload cluster runs kube-scheduler, kube-controller-manager and kwok
// (Options.RunPods) and checks that it behaves like a cluster: the controllers create the pods of a
// Deployment and a Job, kube-scheduler binds them to seeded KWOK nodes that fit, kwok runs them, the Job's
// pod completes after the delay its annotation asks for, and a pod that fits no node stays Pending.
func TestRunPods(t *testing.T) {
	binDir := localfleettest.RequireRunPods(t)
	unlock, err := localfleettest.Lock(func(path string) { t.Logf("waiting for another fleet to finish (%s)", path) })
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	spec := readFleetSpec(t, filepath.Join("testdata", "runpods.yaml"))

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	started := time.Now()
	fleet, err := localfleet.Start(ctx, localfleet.Options{
		Dir:      t.TempDir(),
		Clusters: []string{"east"},
		BinDir:   binDir,
		Logger:   slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo})),
		RunPods:  true,
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("fleet with scheduler, controller manager and kwok ready in %s", time.Since(started).Round(100*time.Millisecond))
	stopped := false
	defer func() {
		if !stopped {
			_ = fleet.Stop(context.Background())
		}
	}()
	if err := localfleet.Seed(ctx, fleet, spec); err != nil {
		t.Fatalf("Seed: %v", err)
	}
	east, _ := fleet.Cluster("east")
	client := kubernetes.NewForConfigOrDie(east.RESTConfig())
	failIfExited := func(t *testing.T) {
		t.Helper()
		if err := fleet.ExitErr(); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("components", func(t *testing.T) {
		var names []string
		for _, c := range east.Components {
			names = append(names, c.Name)
			if !localfleet.ProcessAlive(c.PID) {
				t.Errorf("%s: pid %d not alive", c.Name, c.PID)
			}
		}
		if got := strings.Join(names, ","); got != "kube-scheduler,kube-controller-manager,kwok" {
			t.Errorf("components of east: %s", got)
		}
		state, err := localfleet.ReadState(fleet.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(state.Clusters[1].Components); n != 3 {
			t.Errorf("state of east: %d components, want 3", n)
		}
		if n := len(state.Clusters[0].Components); n != 0 {
			t.Errorf("state of the control plane: %d components, want none", n)
		}
	})

	t.Run("nodes are kwok's", func(t *testing.T) {
		for _, name := range []string{"gpu-0", "gpu-1", "cordoned"} {
			// kwok holds a node's lease once it manages the node, as a kubelet does.
			eventually(t, time.Minute, func() bool {
				lease, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
				return err == nil && lease.Spec.HolderIdentity != nil
			}, name+": node lease held by kwok")
			node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if node.Annotations[localfleet.KWOKNodeAnnotation] != localfleet.KWOKNodeAnnotationValue {
				t.Errorf("%s annotations: %v", name, node.Annotations)
			}
			assertReady(t, *node)
		}
		node, err := client.CoreV1().Nodes().Get(ctx, "gpu-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The described capacity, not kwok's default, and the default pod capacity.
		assertResources(t, "gpu-0 allocatable", node.Status.Allocatable, corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
			"nvidia.com/gpu": resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110"),
		})
	})

	t.Run("deployment runs on seeded nodes", func(t *testing.T) {
		// Two pods of 4 GPUs on two nodes with 6 of 8 free each (the seed pods request 2): one pod fits
		// per node, so the scheduler must count the seeded requests to bind them right.
		labels := map[string]string{"app": "trainer"}
		replicas := int32(2)
		deployment := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: "default"},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       podSpec("4", corev1.RestartPolicyAlways),
				},
			},
		}
		if _, err := client.AppsV1().Deployments("default").Create(ctx, deployment, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var pods []corev1.Pod
		eventually(t, 2*time.Minute, func() bool {
			failIfExited(t)
			list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=trainer"})
			if err != nil {
				return false
			}
			pods = list.Items
			running := 0
			for _, pod := range pods {
				if pod.Status.Phase == corev1.PodRunning && isPodReady(pod) {
					running++
				}
			}
			return running == 2 && len(pods) == 2
		}, "2 trainer pods Running and Ready")
		nodes := map[string]bool{}
		for _, pod := range pods {
			nodes[pod.Spec.NodeName] = true
			if pod.Status.PodIP == "" {
				t.Errorf("pod %s: no pod IP from kwok", pod.Name)
			}
		}
		// 4 GPUs each and 6 free per node (2 of 8 requested by the seed pods): one pod per gpu node.
		if !nodes["gpu-0"] || !nodes["gpu-1"] {
			t.Errorf("trainer pods bound to %v, want one on gpu-0 and one on gpu-1", nodes)
		}
		eventually(t, time.Minute, func() bool {
			d, err := client.AppsV1().Deployments("default").Get(ctx, "trainer", metav1.GetOptions{})
			return err == nil && d.Status.AvailableReplicas == 2
		}, "deployment trainer with 2 available replicas")
	})

	t.Run("pod that fits no node stays pending", func(t *testing.T) {
		// Both gpu nodes have 2 GPUs left now: a pod asking for 3 fits nowhere.
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "too-big", Namespace: "default"},
			Spec:       podSpec("3", corev1.RestartPolicyAlways),
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var reason, message string
		eventually(t, time.Minute, func() bool {
			got, err := client.CoreV1().Pods("default").Get(ctx, "too-big", metav1.GetOptions{})
			if err != nil {
				return false
			}
			for _, c := range got.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
					reason, message = c.Reason, c.Message
					return got.Spec.NodeName == "" && got.Status.Phase == corev1.PodPending
				}
			}
			return false
		}, "pod too-big marked unschedulable")
		if reason != corev1.PodReasonUnschedulable || !strings.Contains(message, "Insufficient nvidia.com/gpu") {
			t.Errorf("too-big: PodScheduled=False %s: %s; want Unschedulable for insufficient nvidia.com/gpu", reason, message)
		}
		zero := int64(0)
		if err := client.CoreV1().Pods("default").Delete(ctx, "too-big", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("job completes", func(t *testing.T) {
		if err := client.AppsV1().Deployments("default").Delete(ctx, "trainer", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		const delay = 3 * time.Second
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "finetune", Namespace: "default"},
			Spec: batchv1.JobSpec{
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
						localfleet.KWOKCompleteDelayAnnotation: delay.String(),
					}},
					Spec: podSpec("6", corev1.RestartPolicyNever),
				},
			},
		}
		created := time.Now()
		if _, err := client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var runningSeen time.Time
		eventually(t, 2*time.Minute, func() bool {
			failIfExited(t)
			got, err := client.BatchV1().Jobs("default").Get(ctx, "finetune", metav1.GetOptions{})
			if err != nil {
				return false
			}
			if runningSeen.IsZero() && got.Status.Active+got.Status.Succeeded > 0 {
				runningSeen = time.Now()
			}
			for _, c := range got.Status.Conditions {
				if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
					return got.Status.Succeeded == 1
				}
			}
			return false
		}, "job finetune Complete with 1 succeeded pod (after the trainer pods are gone, 6 GPUs fit)")
		elapsed := time.Since(created)
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=finetune"})
		if err != nil || len(pods.Items) != 1 {
			t.Fatalf("job pods: %d, %v; want 1", len(pods.Items), err)
		}
		pod := pods.Items[0]
		if pod.Status.Phase != corev1.PodSucceeded || !strings.HasPrefix(pod.Spec.NodeName, "gpu-") {
			t.Errorf("job pod %s: phase %s on %q, want Succeeded on a gpu node", pod.Name, pod.Status.Phase, pod.Spec.NodeName)
		}
		if elapsed < delay {
			t.Errorf("job completed %s after creation, before the %s its pod annotation asks for", elapsed, delay)
		}
		t.Logf("job completed %s after creation (pod completion delay %s)", elapsed.Round(100*time.Millisecond), delay)
	})

	t.Run("a crashed component is reported", func(t *testing.T) {
		scheduler := east.Components[0]
		if err := syscall.Kill(scheduler.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		select {
		case <-fleet.Exited():
		case <-time.After(30 * time.Second):
			t.Fatal("Exited not closed 30s after kube-scheduler was killed")
		}
		if err := fleet.ExitErr(); err == nil || !strings.Contains(err.Error(), "kube-scheduler east") {
			t.Errorf("ExitErr: got %v, want kube-scheduler east named", err)
		}
	})

	t.Run("stop", func(t *testing.T) {
		pids := fleet.PIDs()
		if len(pids) != 1+2+3 {
			t.Errorf("fleet pids: %v, want etcd, 2 apiservers and 3 components", pids)
		}
		if err := fleet.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		stopped = true
		for _, pid := range pids {
			if localfleet.ProcessAlive(pid) {
				t.Errorf("pid %d still alive after Stop", pid)
			}
		}
	})
}

// podSpec is one pause container requesting gpus GPUs and a little cpu and memory.
func podSpec(gpus string, restart corev1.RestartPolicy) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy: restart,
		Containers: []corev1.Container{{
			Name:  "main",
			Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
					"nvidia.com/gpu": resource.MustParse(gpus),
				},
				Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus)},
			},
		}},
	}
}

func isPodReady(pod corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
