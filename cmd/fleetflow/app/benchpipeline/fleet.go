package benchpipeline

import (
	"encoding/json"
	"fmt"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/internal/placementbench"
	"github.com/fleetflow/fleetflow/producers"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// outgoing is one event ready to publish, the way a producer would.
type outgoing struct {
	subject string
	event   cloudevents.Event
}

func newOutgoing(eventType, source, subject, id string, payload schemas.Payload) (outgoing, error) {
	e, err := codec.NewEvent(eventType, source, subject, id, payload)
	if err != nil {
		return outgoing{}, err
	}
	return outgoing{subject: subject, event: e}, nil
}

func clusterName(c int) string { return fmt.Sprintf("cluster-%03d", c) }

func clusterLabels(c int) map[string]string {
	provider := "onprem"
	if c%2 == 1 {
		provider = "cloud"
	}
	return map[string]string{"provider": provider, "topology.kubernetes.io/region": fmt.Sprintf("region-%d", c%4)}
}

// policyEvent is the one SchedulePolicy of the run: fill the on-prem clusters first, spill to the cloud.
func policyEvent() (outgoing, error) {
	sp := &v1alpha1.SchedulePolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SchedulePolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "fill-onprem-then-cloud", UID: "00000000-0000-4000-9000-000000000001", ResourceVersion: "1", Generation: 1},
		Spec: v1alpha1.SchedulePolicySpec{
			OrderedClusterSelector: &v1alpha1.OrderedClusterSelector{Tiers: []metav1.LabelSelector{
				{MatchLabels: map[string]string{"provider": "onprem"}}, {MatchLabels: map[string]string{"provider": "cloud"}}}},
		},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(sp)
	if err != nil {
		return outgoing{}, fmt.Errorf("SchedulePolicy %s: %w", sp.Name, err)
	}
	payload := &schemas.ObjectChanged{Object: obj}
	ref := payload.Ref()
	return newOutgoing(schemas.TypePolicyChanged, schemas.SourceControlPlaneProducer, schemas.PolicySubject(ref),
		schemas.ObjectChangedID("policy", ref, sp.ResourceVersion), payload)
}

func namespaceEvents() ([]outgoing, error) {
	var out []outgoing
	for i, team := range teams {
		obj := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{
			"name": team, "uid": fmt.Sprintf("00000000-0000-4000-a000-%012d", i), "resourceVersion": "1",
			"labels": map[string]any{"kubernetes.io/metadata.name": team}}}
		payload := &schemas.ObjectChanged{Object: obj}
		ref := payload.Ref()
		o, err := newOutgoing(schemas.TypeNamespaceChanged, schemas.SourceControlPlaneProducer, schemas.NamespaceSubject(team),
			schemas.ObjectChangedID("namespace", ref, "1"), payload)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// clusterEvents registers cluster c, labelled labels, the way the control-plane producer and the cluster's own producer do:
// the Cluster object, the installed APIs, and a first heartbeat.
func clusterEvents(c int, labels map[string]string, apis []string, now time.Time) ([]outgoing, error) {
	name := clusterName(c)
	cl := &v1alpha1.Cluster{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Cluster"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(fmt.Sprintf("00000000-0000-4000-b000-%012d", c)), ResourceVersion: "1",
			Generation: 1, Labels: labels},
		Spec: v1alpha1.ClusterSpec{KubeconfigSecretRef: v1alpha1.SecretKeyRef{Name: name + "-kubeconfig", Namespace: "fleetflow-system", Key: "kubeconfig"}},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cl)
	if err != nil {
		return nil, fmt.Errorf("cluster object %s: %w", name, err)
	}
	changed := &schemas.ObjectChanged{Object: obj}
	ref := changed.Ref()
	spec, err := newOutgoing(schemas.TypeClusterChanged, schemas.SourceControlPlaneProducer, schemas.ClusterSpecSubject(name),
		schemas.ObjectChangedID("cluster", ref, "1"), changed)
	if err != nil {
		return nil, err
	}
	apisPayload := &schemas.ClusterAPIs{Cluster: name, APIs: apis}
	apiEvent, err := stateEvent(schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject(name), "apis", name, schemas.SourceClusterProducer(name), apisPayload)
	if err != nil {
		return nil, err
	}
	hb, err := heartbeatEvent(c, now)
	if err != nil {
		return nil, err
	}
	return []outgoing{spec, apiEvent, hb}, nil
}

// heartbeatInterval is how often the synthetic cluster producers beat; the placer's default timeout is 30 s.
const heartbeatInterval = 5 * time.Second

func heartbeatEvent(c int, now time.Time) (outgoing, error) {
	name := clusterName(c)
	return newOutgoing(schemas.TypeClusterHeartbeat, schemas.SourceClusterProducer(name), schemas.ClusterHeartbeatSubject(name),
		producers.HeartbeatID(name, now, heartbeatInterval), &schemas.ClusterHeartbeat{Cluster: name, Time: now.UTC()})
}

// stateEvent builds a cluster producer's state event, whose id is derived from its content.
func stateEvent(eventType, subject, kind, identity, source string, payload schemas.Payload) (outgoing, error) {
	content, err := json.Marshal(payload)
	if err != nil {
		return outgoing{}, fmt.Errorf("encode %s for %s: %w", eventType, subject, err)
	}
	return newOutgoing(eventType, source, subject, schemas.ContentID(kind, identity, content), payload)
}

// nodeEvent is node n of cluster c as its cluster producer reports it: GPU nodes (tainted, 8 H100s) first,
// then CPU nodes, each with the labels real nodes carry and the DaemonSets' requests.
func nodeEvent(c, n, gpuNodes int) (outgoing, error) {
	state := nodeState(c, n, gpuNodes)
	return stateEvent(schemas.TypeNodeChanged, schemas.NodeSubject(state.Cluster, state.Name), "node", state.Cluster+"/"+state.Name,
		schemas.SourceClusterProducer(state.Cluster), state)
}

// nodeState is what nodeEvent reports.
func nodeState(c, n, gpuNodes int) *schemas.NodeState {
	cluster := clusterName(c)
	node := fmt.Sprintf("%s-node-%04d", cluster, n)
	zone := fmt.Sprintf("region-%d-%c", c%4, 'a'+n%3)
	state := &schemas.NodeState{Cluster: cluster, Name: node, UID: fmt.Sprintf("node-%03d-%06d", c, n), Ready: true,
		Requested: placementbench.SystemRequested, Pods: 4}
	if n < gpuNodes {
		state.Labels = map[string]string{"kubernetes.io/hostname": node, "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
			"topology.kubernetes.io/zone": zone, "node.kubernetes.io/instance-type": "p5.48xlarge", "kubernetes.io/arch": "amd64"}
		state.Taints = placementbench.GPUNodeTaints
		state.Allocatable = placementbench.GPUNodeAllocatable
	} else {
		state.Labels = map[string]string{"kubernetes.io/hostname": node, "topology.kubernetes.io/zone": zone,
			"node.kubernetes.io/instance-type": "m7i.16xlarge", "kubernetes.io/arch": "amd64"}
		state.Allocatable = placementbench.CPUNodeAllocatable
	}
	return state
}

// servedAPIs is what every synthetic cluster's discovery reports: core kinds and every built-in RI's kind.
func servedAPIs() ([]string, error) {
	kinds, err := app.BuiltinKinds()
	if err != nil {
		return nil, err
	}
	apis := []string{"v1/Pod", "v1/Service", "v1/ConfigMap", "v1/Secret", "v1/Namespace", "batch/v1/Job"}
	for _, gvk := range kinds {
		apis = append(apis, producers.APIString(gvk))
	}
	return apis, nil
}
