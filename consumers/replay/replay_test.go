package replay_test

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/consumers/replay"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/placement/lifecycle"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
)

// busyDay records a day with a policy, three clusters, workloads that fill them, a policy change and a
// cluster gone silent past its heartbeat timeout.
func busyDay(t *testing.T) *recording {
	cfg := placer.PlacerConfig{HeartbeatTimeout: 10 * time.Second}
	r := newRecording(t, cfg)
	r.policy("fill", "east", "west", "north")
	for _, c := range []string{"east", "west", "north"} {
		r.cluster(c, "8")
	}
	r.tick(cfg)
	for i, cpu := range []string{"3", "3", "3", "3", "5", "2", "8"} {
		r.workload("job-"+string(rune('a'+i)), cpu)
	}
	r.policy("fill", "west", "east", "north")
	for range 12 {
		r.now = r.now.Add(time.Second)
		r.heartbeat("west")
		r.heartbeat("north")
		r.tick(cfg)
	}
	return r
}

func TestReplayReproducesARecordedHistory(t *testing.T) {
	r := busyDay(t)
	res, err := replay.NewSession(replay.Options{}).Run(t.Context(), r.exported())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Divergences) != 0 {
		t.Fatalf("divergences: %+v", res.Divergences)
	}
	if res.Recorded == 0 || res.Reproduced != res.Recorded {
		t.Fatalf("reproduced %d of %d recorded outputs", res.Reproduced, res.Recorded)
	}
	if got := res.Settings.HeartbeatTimeout.Duration; got != 10*time.Second {
		t.Errorf("heartbeat timeout %s, want the recorded 10s", got)
	}
}

func TestReplayReportsWhatItDoesNotReproduce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(r *recording)
		want   string
	}{
		{"a recorded decision dropped", func(r *recording) { r.records = dropFirst(r.records, schemas.StreamDecisions) },
			replay.Extra},
		{"a decision recorded that the placer never made", func(r *recording) {
			r.records = append(r.records, renamed(firstOf(r.records, schemas.StreamDecisions), r.last(schemas.StreamDecisions)+1))
		}, replay.Missing},
		{"another heartbeat timeout", func(r *recording) {}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := busyDay(t)
			tc.change(r)
			opts := replay.Options{}
			if tc.want == "" {
				// Deciding with a longer timeout than recorded, the silent cluster's workloads stay.
				opts.Placer.HeartbeatTimeout = time.Hour
			}
			res, err := replay.NewSession(opts).Run(t.Context(), r.exported())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Divergences) == 0 {
				t.Fatal("no divergence reported")
			}
			if tc.want != "" && res.Divergences[0].Kind != tc.want {
				t.Errorf("divergence %+v, want kind %s", res.Divergences[0], tc.want)
			}
		})
	}
}

func TestReplayStopsAtThePlacersFloor(t *testing.T) {
	r := busyDay(t)
	var floor uint64
	for _, rec := range r.records {
		if rec.Stream == schemas.StreamEvents && rec.Event.Type() == schemas.TypePolicyChanged {
			floor = rec.Sequence // the second policy version: the failover after it is not answered yet
		}
	}
	// Recorded outputs answering later events stay out, as they would when read while a placer runs.
	res, err := replay.NewSession(replay.Options{Through: floor}).Run(t.Context(), r.exported())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Divergences) != 0 {
		t.Fatalf("divergences: %+v", res.Divergences)
	}
	if res.Last != floor {
		t.Errorf("replayed through sequence %d, want the floor %d", res.Last, floor)
	}
	if len(res.Notes) == 0 {
		t.Error("no note says the later events are not replayed")
	}
}

func TestReplayRefusesABrokenHistory(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(r *recording)
		want   []string
		is     error
	}{
		{"a gap", func(r *recording) { r.records = slices.Delete(r.records, 3, 4) },
			[]string{"FLEETFLOW_EVENTS sequence 5", "expected sequence 4"}, replay.ErrGap},
		{"a later schema", func(r *recording) { r.records[2].Event.SetType("io.fleetflow.node.changed.v2") },
			[]string{"sequence 3", `"io.fleetflow.node.changed.v2"`}, replay.ErrSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := busyDay(t)
			tc.change(r)
			_, err := replay.NewSession(replay.Options{}).Run(t.Context(), r.exported())
			if !errors.Is(err, tc.is) {
				t.Fatalf("error %v, want %v", err, tc.is)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
	t.Run("a line that is no CloudEvent", func(t *testing.T) {
		h := replay.ReadFile(io.NopCloser(strings.NewReader("{\"specversion\":\"1.0\"}\nnot json\n")), "history.jsonl")
		_, err := replay.NewSession(replay.Options{}).Run(t.Context(), h)
		if err == nil || !strings.Contains(err.Error(), "history.jsonl line 1") {
			t.Errorf("error %v, want it to name history.jsonl line 1", err)
		}
	})
}

// TestReplayLearnsTheEpochPastPeek: on a large fleet the first recorded output comes after every node has
// registered, past what a replay reads ahead; the replay still stamps its outputs with the recorded epoch.
func TestReplayLearnsTheEpochPastPeek(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
	}{{"epoch within the peek", 0}, {"epoch past the peek", 14}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.limit > 0 {
				// busyDay's 14th record is its first tick, with the settings; its first output comes later.
				defer replay.SetPeekLimit(tc.limit)()
			}
			res, err := replay.NewSession(replay.Options{}).Run(t.Context(), busyDay(t).exported())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Divergences) != 0 || res.Recorded == 0 {
				t.Fatalf("%d recorded, divergences: %+v", res.Recorded, res.Divergences)
			}
			if res.Epoch != epoch {
				t.Errorf("epoch %q, want the recorded %q", res.Epoch, epoch)
			}
		})
	}
}

func TestReplaySaysWhereAnotherPlacerTookOver(t *testing.T) {
	for _, tc := range []struct {
		name  string
		terms []string
		notes int
	}{
		{"one placer throughout", []string{"a", "a", "a"}, 0},
		{"a placer took over", []string{"a", "a", "b"}, 1},
		{"ticks of placers that name none", []string{"", "", ""}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := placer.PlacerConfig{}
			r := newRecording(t, cfg)
			r.cluster("east", "8")
			for _, term := range tc.terms {
				r.tickOf(cfg, term)
			}
			res, err := replay.NewSession(replay.Options{}).Run(t.Context(), r.exported())
			if err != nil {
				t.Fatal(err)
			}
			took := 0
			for _, n := range res.Notes {
				if strings.Contains(n, "another placer took over") {
					took++
				}
			}
			if took != tc.notes {
				t.Errorf("%d notes of a takeover, want %d: %q", took, tc.notes, res.Notes)
			}
		})
	}
}

// TestReplayRefusesTheNodeReportsThePlacerRefused: node reports over their cluster's budget, which the live
// placer's consume loop refused unread, are refused by the replay too; fed to the controller, the last ones
// here would leave east too small for the workload the placer placed there.
func TestReplayRefusesTheNodeReportsThePlacerRefused(t *testing.T) {
	cfg := placer.PlacerConfig{}
	r := newRecording(t, cfg)
	r.policy("fill", "east")
	r.cluster("east", "8")
	r.tick(cfg)
	r.now = r.now.Add(time.Hour) // a full budget
	const refused = 10
	for i := range lifecycle.DefaultNodeReportBurst + refused {
		cpus := "8"
		if i >= lifecycle.DefaultNodeReportBurst {
			cpus = "1" // over the budget: stored, refused by the live placer
		}
		subject := schemas.NodeSubject("east", "n1")
		payload := eventtest.Node("east", "n1", cpus)
		e, err := codec.NewEvent(schemas.TypeNodeChanged, "/test", subject, fmt.Sprintf("n1/%d", i), payload)
		if err != nil {
			t.Fatal(err)
		}
		e.SetTime(r.now)
		seq := r.store(schemas.StreamEvents, subject, e)
		if i < lifecycle.DefaultNodeReportBurst {
			if err := r.placer.Handle(t.Context(), bus.Delivery{Event: e, Payload: payload, Subject: subject, StreamSequence: seq,
				Attempt: 1, Stored: r.now}); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.workload("web", "4")
	res, err := replay.NewSession(replay.Options{}).Run(t.Context(), r.exported())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Divergences) != 0 || res.Recorded == 0 || res.Reproduced != res.Recorded {
		t.Errorf("reproduced %d of %d recorded outputs, divergences %+v", res.Reproduced, res.Recorded, res.Divergences)
	}
	if res.Refused != refused {
		t.Errorf("refused %d node reports, want the %d over east's budget", res.Refused, refused)
	}
}
