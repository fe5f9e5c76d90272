package app_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// TestOpenBusRefusesExternalSettingsForTheEmbeddedServer: settings that only an external server can honour
// are refused for the embedded one, saying which flag is missing, instead of being silently ignored.
func TestOpenBusRefusesExternalSettingsForTheEmbeddedServer(t *testing.T) {
	replicated := streams.DefaultOptions()
	replicated.Replicas = 3
	tests := []struct {
		name string
		opts app.BusOptions
		want string
	}{
		{"credentials", app.BusOptions{Streams: streams.DefaultOptions(), Auth: bus.ClientAuth{CredsFile: "user.creds"}},
			"apply to an external server: give --nats-url too"},
		{"stream replicas", app.BusOptions{Streams: replicated}, "stream replicas 3 need an external JetStream cluster (--nats-url)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.DataDir = t.TempDir()
			b, err := app.OpenBus(t.Context(), tt.opts, t.Name(), slog.New(slog.DiscardHandler))
			if err == nil {
				b.Close()
				t.Fatal("OpenBus succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}
