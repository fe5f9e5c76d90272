package lifecycle

import (
	"fmt"

	"github.com/fleetflow/fleetflow/schemas"
)

// apply folds one event into the fleet view and runs the cycles it calls for. With rebuilding set it
// only updates the view: decisions are reconciled once the whole state has been read.
func (p *Controller) apply(eventType string, payload schemas.Payload, rebuilding bool) (*touchedSet, error) {
	touched := newTouched()
	var err error
	switch eventType {
	case schemas.TypeWorkloadChanged:
		err = p.onWorkloadChanged(payload.(*schemas.ObjectChanged), touched, rebuilding)
	case schemas.TypeWorkloadDeleted:
		err = p.onWorkloadDeleted(payload.(*schemas.ObjectDeleted), touched)
	case schemas.TypePolicyChanged:
		err = p.onPolicyChanged(payload.(*schemas.ObjectChanged), touched, rebuilding)
	case schemas.TypePolicyDeleted:
		err = p.onPolicyDeleted(payload.(*schemas.ObjectDeleted), touched, rebuilding)
	case schemas.TypeResourceInterfaceChanged:
		err = p.onResourceInterfaceChanged(payload.(*schemas.ObjectChanged), touched, rebuilding)
	case schemas.TypeResourceInterfaceDeleted:
		err = p.onResourceInterfaceDeleted(payload.(*schemas.ObjectDeleted), touched, rebuilding)
	case schemas.TypeNamespaceChanged, schemas.TypeNamespaceDeleted:
		err = p.onNamespace(eventType, payload, touched, rebuilding)
	case schemas.TypeClusterChanged:
		err = p.onClusterChanged(payload.(*schemas.ObjectChanged), touched, rebuilding)
	case schemas.TypeClusterDeleted:
		err = p.onClusterDeleted(payload.(*schemas.ObjectDeleted), touched, rebuilding)
	case schemas.TypeClusterHeartbeat:
		err = p.onHeartbeat(payload.(*schemas.ClusterHeartbeat), touched, rebuilding)
	case schemas.TypeClusterAPIs:
		err = p.onAPIs(payload.(*schemas.ClusterAPIs), touched, rebuilding)
	case schemas.TypeNodeChanged:
		err = p.onNode(payload.(*schemas.NodeState), touched, rebuilding)
	case schemas.TypeNodeDeleted:
		err = p.onNodeDeleted(payload.(*schemas.NodeDeleted), touched, rebuilding)
	case schemas.TypeWorkloadStatus:
		err = p.onStatus(payload.(*schemas.WorkloadStatus), touched, rebuilding)
	case schemas.TypePlacementApplied:
		p.onApplied(payload.(*schemas.PlacementApplied), touched)
	case schemas.TypePlacementFailed:
		err = p.onFailed(payload.(*schemas.PlacementFailed), touched, rebuilding)
	case schemas.TypePlacerTick:
		if !rebuilding {
			err = p.onTick(payload.(*schemas.PlacerTick), touched)
		}
	case schemas.TypePlacementDecided:
		p.onDecided(payload.(*schemas.PlacementDecided))
	case schemas.TypePlacementVerdict:
		p.onVerdict(payload.(*schemas.PlacementVerdict))
	}
	if err != nil {
		return nil, fmt.Errorf("lifecycle: %s at sequence %d: %w", eventType, p.at.seq, err)
	}
	return touched, nil
}
