package app_test

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/consumers/replay"
	"github.com/fleetflow/fleetflow/internal/natsauth"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// TestUIReadsTheHistoryAsItsUser: on a bus whose embedded server has users, the fleet view's connection (As
// the UI) replays the history the placer's connection (As the placer) published.
func TestUIReadsTheHistoryAsItsUser(t *testing.T) {
	users, err := natsauth.Generate([]string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	b, err := app.OpenBus(t.Context(), app.BusOptions{DataDir: t.TempDir(), Streams: streams.DefaultOptions(), Users: users}, t.Name(), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	placer, release, err := b.As(natsauth.Placer, "", log)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if placer == b {
		t.Fatal("the placer got the admin's connection")
	}
	app.PublishEvent(t, placer, schemas.TypePlacerTick, schemas.SubjectPlacerTick, "tick/1", &schemas.PlacerTick{Time: time.Now().UTC()})
	ui, releaseUI, err := b.As(natsauth.UI, "", log)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseUI()
	history, err := replay.ReadStreams(t.Context(), ui.JetStream, replay.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = history.Close() }()
	read := 0
	for {
		_, err := history.Next(t.Context())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		read++
	}
	if read != 1 {
		t.Errorf("the UI read %d events, want the placer's tick", read)
	}
}
