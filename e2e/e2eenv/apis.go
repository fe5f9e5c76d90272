package e2eenv

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// ClusterServes reports whether the cluster's latest installed-APIs event, in the stream the placer reads
// before any later workload event, lists gvk: a CR submitted after that is judged with the cluster already
// eligible. No stream or no event yet is false; an event that does not decode is an error.
func (e *Env) ClusterServes(ctx context.Context, cluster string, gvk schema.GroupVersionKind) (bool, error) {
	stream, err := e.Bus.JetStream.Stream(ctx, schemas.StreamEvents)
	if err != nil {
		return false, nil
	}
	msg, err := stream.GetLastMsgForSubject(ctx, schemas.ClusterAPIsSubject(cluster))
	if err != nil {
		return false, nil
	}
	event, err := bus.Decode(msg.Header, msg.Data)
	if err != nil {
		return false, fmt.Errorf("installed-APIs event of %s: %w", cluster, err)
	}
	payload, err := codec.DecodePayload(event)
	if err != nil {
		return false, fmt.Errorf("installed-APIs event of %s: %w", cluster, err)
	}
	apis, ok := payload.(*schemas.ClusterAPIs)
	if !ok {
		return false, fmt.Errorf("installed-APIs event %s of %s is a %T", event.ID(), cluster, payload)
	}
	return slices.Contains(apis.APIs, gvk.GroupVersion().String()+"/"+gvk.Kind), nil
}
