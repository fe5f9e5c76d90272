package natsauth

import (
	"fmt"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// JetStream's API subjects, as the permissions name them.
const (
	jsAPI      = "$JS.API."
	streamInfo = jsAPI + "STREAM.INFO."
	create     = jsAPI + "CONSUMER.CREATE."
	info       = jsAPI + "CONSUMER.INFO."
	next       = jsAPI + "CONSUMER.MSG.NEXT."
	remove     = jsAPI + "CONSUMER.DELETE."
	directGet  = jsAPI + "DIRECT.GET."
	msgGet     = jsAPI + "STREAM.MSG.GET."
	ack        = "$JS.ACK."
	leaseKV    = "KV_" + schemas.LeaseBucket
)

// fleetStreams are fleetflow's streams, whose configuration every part reads when it connects.
var fleetStreams = []string{schemas.StreamEvents, schemas.StreamDecisions, schemas.StreamState, schemas.StreamDead}

// durableNames are the durable consumers of the parts that are not a cluster's: no reader may take their
// deliveries or change them.
var durableNames = []string{schemas.ConsumerPlacer, schemas.ConsumerStatus, schemas.ConsumerStatusDecisions}

// rights collects what a user may publish and subscribe to.
type rights struct{ pub, sub, denyPub []string }

func (r *rights) publish(subjects ...string)   { r.pub = append(r.pub, subjects...) }
func (r *rights) deny(subjects ...string)      { r.denyPub = append(r.denyPub, subjects...) }
func (r *rights) subscribe(subjects ...string) { r.sub = append(r.sub, subjects...) }

// durable lets the user consume its durable consumer named consumer on stream: create it (with filter in the
// request's subject, which the server checks against the consumer's, when filter is not ""), read its
// information, pull from it and acknowledge what it delivers; and store the messages it gives up on.
func (r *rights) durable(stream, consumer, filter string) {
	if filter == "" {
		r.publish(create + stream + "." + consumer)
	} else {
		r.publish(create + stream + "." + consumer + "." + filter)
	}
	r.publish(info+stream+"."+consumer, next+stream+"."+consumer, ack+stream+"."+consumer+".>",
		schemas.DeadLetterSubject(consumer))
}

// ordered lets the user read stream with ordered (ephemeral) consumers of one filter each, or of any filters
// when filter is ">".
func (r *rights) ordered(stream, filter string) {
	r.publish(create+stream+".*."+filter, info+stream+".*", next+stream+".*", remove+stream+".*")
	if filter == ">" {
		r.publish(create + stream + ".*") // several filters: the request's subject names none
	}
}

// Permissions are what the user of role (for cluster, when the role is a cluster's) may do, public being its
// NKey, which names its inbox; clusters are every workload cluster, whose appliers' consumers readers may not
// take from. Admin has no limits: nil.
func Permissions(role Role, cluster, public string, clusters []string) (*server.Permissions, error) {
	var r rights
	r.subscribe(bus.InboxPrefix(public) + ".>")
	r.publish(jsAPI + "INFO")
	for _, s := range fleetStreams {
		r.publish(streamInfo + s)
	}
	events := schemas.SubjectEventsPrefix
	c := schemas.Token(cluster)
	switch role {
	case Admin:
		return nil, nil
	case Placer:
		r.publish(schemas.SubjectAllDecisions, events+".verdict.>", events+".analysis.>", events+".placer.>")
		stream, cfg := streams.PlacerConsumer()
		r.durable(stream, cfg.Durable, "")
		for _, s := range fleetStreams[:3] { // it rebuilds its view from the streams, all but the dead letters
			r.ordered(s, ">")
		}
		r.publish(directGet+">", msgGet+"*", jsAPI+"STREAM.PURGE."+schemas.StreamState)
		// The placer provisions the streams and its lease bucket when it finds them missing or changed.
		for _, s := range append(fleetStreams, leaseKV) {
			r.publish(jsAPI+"STREAM.CREATE."+s, jsAPI+"STREAM.UPDATE."+s)
		}
		r.publish(streamInfo+leaseKV, "$KV."+schemas.LeaseBucket+".>")
	case Status:
		stream, cfg := streams.StatusConsumer()
		r.durable(stream, cfg.Durable, "")
		stream, cfg = streams.StatusDecisionsConsumer()
		r.durable(stream, cfg.Durable, cfg.FilterSubject)
		for _, s := range fleetStreams[:3] {
			r.ordered(s, ">")
		}
		r.publish(directGet+">", msgGet+"*")
	case Producer:
		r.publish(events+".workload.>", events+".policy.>", events+".resourceinterface.>", events+".namespace.>",
			events+".cluster.*.spec")
		r.ordered(schemas.StreamState, ">")
		r.publish(directGet + schemas.StreamEvents + ".>")
	case ClusterProducer:
		if cluster == "" {
			return nil, fmt.Errorf("nats user %s: name its cluster", role)
		}
		own := []string{events + ".node." + c + ".*", events + ".status." + c + ".>",
			events + ".cluster." + c + ".heartbeat", events + ".cluster." + c + ".apis"}
		r.publish(own...)
		for _, filter := range append(own[:2:2], events+".resourceinterface.>", events+".policy.>") {
			r.ordered(schemas.StreamState, filter)
		}
		// The last event stored on its own subjects, and on its Cluster's (whether it is still registered).
		for _, subject := range append(own[:2:2], schemas.ClusterAspectsFilter(cluster)) {
			r.publish(directGet + schemas.StreamEvents + "." + subject)
		}
	case Applier:
		if cluster == "" {
			return nil, fmt.Errorf("nats user %s: name its cluster", role)
		}
		r.publish(events + ".placement." + c + ".>")
		stream, cfg := streams.ApplierConsumer(cluster)
		r.durable(stream, cfg.Durable, cfg.FilterSubject)
		r.publish(directGet + stream + "." + cfg.FilterSubject)
	case Audit, UI:
		// Readers: any stream, with consumers of their own, but none of the parts' durables, whose deliveries
		// they would take away; nothing to publish.
		for _, s := range append(fleetStreams, leaseKV) {
			r.ordered(s, ">")
			r.publish(streamInfo+s, msgGet+s)
		}
		r.publish(directGet+">", jsAPI+"STREAM.NAMES", jsAPI+"STREAM.LIST", jsAPI+"CONSUMER.NAMES.*", jsAPI+"CONSUMER.LIST.*")
		durables := durableNames
		for _, name := range clusters {
			durables = append(durables, schemas.ApplierConsumerName(name))
		}
		for _, d := range durables {
			r.deny(create+"*."+d, create+"*."+d+".>", next+"*."+d, remove+"*."+d, info+"*."+d)
		}
	default:
		return nil, fmt.Errorf("nats user: unknown role %q", role)
	}
	perms := &server.Permissions{Publish: &server.SubjectPermission{Allow: r.pub, Deny: r.denyPub},
		Subscribe: &server.SubjectPermission{Allow: r.sub}}
	return perms, nil
}
