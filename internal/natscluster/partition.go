package natscluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// PublishVia publishes data on subject, with msgID as its Nats-Msg-Id, through a connection to node i alone
// that does not fail over: what a client on node i's side of a partition can store. With hosts (WithHosts) the
// connection starts inside node i's namespace, so it reaches the node while the node is cut off. It returns the
// publish's error: a node cut off from a majority of a stream's replicas cannot have the publish stored, and
// answers with an error or not at all (ctx ends).
func (c *Cluster) PublishVia(ctx context.Context, i int, subject string, data []byte, msgID string) error {
	nd := c.nodes[i]
	opts := []nats.Option{nats.Name("natscluster-probe"), nats.NoReconnect()}
	if nd.host != nil {
		opts = append(opts, nats.SetCustomDialer(nd.host))
	}
	if nd.cfg.TLS != nil {
		opts = append(opts, nats.RootCAs(nd.cfg.TLS.CAFile))
	}
	nc, err := nats.Connect(c.LocalURL(i), opts...)
	if err != nil {
		return fmt.Errorf("natscluster: connect to node %s: %w", nd.cfg.Name, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("natscluster: %w", err)
	}
	if _, err := js.Publish(ctx, subject, data, jetstream.WithMsgID(msgID)); err != nil {
		return fmt.Errorf("natscluster: publish %s through node %s: %w", subject, nd.cfg.Name, err)
	}
	return nil
}

// MoveStreamLeader has stream's leader step down in favour of node to, and waits until to leads: how a test puts
// the leadership where it wants the fault (on the node its client is connected to, say). Nothing happens when
// to leads already.
func (c *Cluster) MoveStreamLeader(ctx context.Context, js jetstream.JetStream, stream string, to int) error {
	req, err := json.Marshal(map[string]any{"placement": map[string]string{"preferred": c.NodeName(to)}})
	if err != nil {
		return fmt.Errorf("natscluster: %w", err)
	}
	return Poll(ctx, fmt.Sprintf("%s leading stream %s", c.NodeName(to), stream), func() error {
		leader, err := c.StreamLeader(ctx, js, stream)
		if err != nil || leader == to {
			return err
		}
		// Asked again while another node leads: an election may have picked another one than preferred.
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		msg, err := js.Conn().RequestWithContext(attempt, "$JS.API.STREAM.LEADER.STEPDOWN."+stream, req)
		if err != nil {
			return fmt.Errorf("step down: %w", err)
		}
		var resp struct {
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &resp); err != nil {
			return fmt.Errorf("step down: %w", err)
		}
		if resp.Error != nil {
			return fmt.Errorf("step down: %s", resp.Error.Description)
		}
		return fmt.Errorf("%s led stream %s; asked it to step down", c.NodeName(leader), stream)
	})
}
