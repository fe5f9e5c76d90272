package schemas

import (
	"errors"
	"time"
)

// Fencing: a placer that lost its lease (paused past it, cut off) must not get anything stored once another
// took over. Each stream the placer publishes to has a fence subject; a placer taking the lease appends a
// PlacerLeader record there, and every batch it publishes afterwards is stored only if that record is still
// the last on the fence subject (JetStream's expected last sequence for a subject, checked by the stream
// leader as it stores the batch). The next leader's record fences out every later batch of the one before.

// Fence subjects, one per stream the placer publishes to. Neither matches a cluster's decisions
// (decisions.<cluster>.>) nor a workload's events.
const (
	SubjectFenceEvents    = SubjectEventsPrefix + ".placer.leader"
	SubjectFenceDecisions = SubjectDecisionsRoot + "._leader"
)

// FenceSubject is the fence subject of stream, "" for a stream the placer does not publish to.
func FenceSubject(stream string) string {
	switch stream {
	case StreamEvents:
		return SubjectFenceEvents
	case StreamDecisions:
		return SubjectFenceDecisions
	default:
		return ""
	}
}

// HeaderPlacer names, on every message a placer stores, the leadership that published it (PlacerLeader.Placer):
// an auditor tells which placer decided what, and that none stored anything after the next one took over.
const HeaderPlacer = "Fleetflow-Placer"

// PlacerLeader is a placer's leadership: the name its ticks carry (PlacerTick.Placer) and when it took the lease.
type PlacerLeader struct {
	Placer string    `json:"placer"`
	Since  time.Time `json:"since"`
}

// Validate implements Payload.
func (p *PlacerLeader) Validate() error {
	var errs []error
	if p.Placer == "" {
		errs = append(errs, errors.New("placer: required"))
	}
	if p.Since.IsZero() {
		errs = append(errs, errors.New("since: required"))
	}
	return errors.Join(errs...)
}
