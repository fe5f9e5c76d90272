package bus_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestRefusedMessagesAreSettledUnread: a message Refuse refuses is never handled and holds back none behind
// it; the one it asks a dead letter for is stored with reason refused and its reason, the others only
// acknowledged; Refuse sees every message in order, with the time the stream stored it.
func TestRefusedMessagesAreSettledUnread(t *testing.T) {
	for _, batched := range []bool{false, true} {
		name := "one at a time"
		if batched {
			name = "batched"
		}
		t.Run(name, func(t *testing.T) {
			_, js := startJetStream(t)
			ctx := t.Context()
			log, _ := testLogger(t)
			consumer, _, _ := placerConsumer(t, js, log)
			handled := &handledNames{}
			var mu sync.Mutex // Refuse runs on the loop's reader goroutine
			var asked []string
			refusals := 0
			loop := &bus.ConsumeLoop{Consumer: consumer, Log: log, DeadLetters: js, Handle: handled.handle,
				Refuse: func(subject string, stored time.Time) (string, bool) {
					mu.Lock()
					defer mu.Unlock()
					if stored.IsZero() {
						t.Errorf("%s: no stream time", subject)
					}
					asked = append(asked, subject[strings.LastIndex(subject, ".")+1:])
					if !strings.Contains(subject, "flood") {
						return "", false
					}
					refusals++
					return "over budget " + subject, refusals == 1
				}}
			if batched {
				loop.Flush = func(context.Context) error { return nil }
			}
			before := counterValue(t, "fleetflow_dead_letters_total", map[string]string{"consumer": schemas.ConsumerPlacer, "reason": schemas.DeadRefused})
			runLoop(t, ctx, loop)
			publishWorkloads(t, bus.NewPublisher(js), "first", "flood-1", "flood-2", "flood-3", "after")

			eventually(t, "the events around the refused ones handled", func() bool { return len(handled.names()) == 2 })
			eventually(t, "every message settled", func() bool {
				info, err := consumer.Info(ctx)
				return err == nil && info.NumPending == 0 && info.NumAckPending == 0
			})
			if got := handled.names(); !slices.Equal(got, []string{"first", "after"}) {
				t.Errorf("handled %v, want first and after", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if want := []string{"first", "flood-1", "flood-2", "flood-3", "after"}; !slices.Equal(asked, want) {
				t.Errorf("Refuse asked about %v, want %v in order", asked, want)
			}
			dead, err := js.Stream(ctx, schemas.StreamDead)
			if err != nil {
				t.Fatal(err)
			}
			info, err := dead.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			letter, err := dead.GetLastMsgForSubject(ctx, schemas.DeadLetterSubject(schemas.ConsumerPlacer))
			if err != nil {
				t.Fatal(err)
			}
			if info.State.Msgs != 1 || letter.Header.Get(schemas.HeaderDeadReason) != schemas.DeadRefused ||
				!strings.HasPrefix(letter.Header.Get(schemas.HeaderDeadError), "over budget") ||
				!strings.HasSuffix(letter.Header.Get(schemas.HeaderDeadSubject), "flood-1") {
				t.Errorf("%d dead letters, the last of %s with reason %q (%q); want one, of flood-1, refused over budget", info.State.Msgs,
					letter.Header.Get(schemas.HeaderDeadSubject), letter.Header.Get(schemas.HeaderDeadReason), letter.Header.Get(schemas.HeaderDeadError))
			}
			after := counterValue(t, "fleetflow_dead_letters_total", map[string]string{"consumer": schemas.ConsumerPlacer, "reason": schemas.DeadRefused})
			if after-before != 1 {
				t.Errorf("dead letters counted %v, want 1", after-before)
			}
		})
	}
}
