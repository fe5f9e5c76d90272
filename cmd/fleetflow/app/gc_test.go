package app

import (
	"io"
	"log/slog"
	"runtime/debug"
	"testing"
)

func TestTuneGCForPlacer(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	original := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(original) })

	cases := []struct {
		name, env          string
		percent            int
		wantReturn, wantGC int
	}{
		{name: "the placer's default", percent: PlacerGCPercent, wantReturn: PlacerGCPercent, wantGC: PlacerGCPercent},
		{name: "zero keeps Go's default", percent: 0, wantReturn: 100, wantGC: 100},
		{name: "GOGC in the environment wins", env: "150", percent: PlacerGCPercent, wantReturn: -1, wantGC: 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			t.Setenv("GOGC", tc.env)
			if got := TuneGCForPlacer(tc.percent, log); got != tc.wantReturn {
				t.Errorf("returned %d, want %d", got, tc.wantReturn)
			}
			// SetGCPercent returns the setting it replaces, which is how the target in effect is read.
			if got := debug.SetGCPercent(100); got != tc.wantGC {
				t.Errorf("GC target %d, want %d", got, tc.wantGC)
			}
		})
	}
}
