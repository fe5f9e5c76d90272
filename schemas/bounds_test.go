package schemas_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fleetflow/fleetflow/schemas"
)

// TestClusterEventsAreBoundedInSize: what a workload cluster publishes is refused, naming both sizes, once its
// data passes its type's bound, when it is encoded (so a producer learns of it) and when it is decoded (so a
// producer that skips the check is refused by every consumer); a payload within the bound passes both.
func TestClusterEventsAreBoundedInSize(t *testing.T) {
	ref := schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "ml", Name: "train", UID: "u1"}
	status := func(bytes int) schemas.Payload {
		return &schemas.WorkloadStatus{Cluster: "east", Workload: ref,
			Status: map[string]any{"message": strings.Repeat("x", bytes)}}
	}
	tests := []struct {
		name      string
		eventType string
		payload   schemas.Payload
		want      string // "" when the payload passes
	}{
		{"a status of 10 MiB", schemas.TypeWorkloadStatus, status(10 << 20), "data of 10.0 MiB is more than the 2.0 MiB an event of this type may carry"},
		{"a status of 1 MiB", schemas.TypeWorkloadStatus, status(1 << 20), ""},
		{"a heartbeat padded to 32 KiB", schemas.TypeClusterHeartbeat,
			&schemas.ClusterHeartbeat{Cluster: "east" + strings.Repeat("-", 32<<10), Time: time.Unix(1, 0)},
			"more than the 16.0 KiB an event of this type may carry"},
		{"a failure quoting a whole object", schemas.TypePlacementFailed, &schemas.PlacementFailed{DecisionID: "d",
			Workload: ref, Cluster: "east", Sequence: 1, Error: strings.Repeat("e", 300<<10)}, "more than the 256.0 KiB"},
		{"the same failure shortened", schemas.TypePlacementFailed, &schemas.PlacementFailed{DecisionID: "d",
			Workload: ref, Cluster: "east", Sequence: 1, Error: schemas.ShortenError(strings.Repeat("e", 300<<10))}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, encodeErr := schemas.MarshalData(tt.eventType, tt.payload)
			data, err := json.Marshal(tt.payload)
			if err != nil {
				t.Fatal(err)
			}
			_, decodeErr := schemas.DecodeData(tt.eventType, data)
			for _, err := range []error{encodeErr, decodeErr} {
				if tt.want == "" {
					if err != nil {
						t.Fatalf("error = %v, want none", err)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.want)
				}
			}
			if tt.want != "" && !errors.Is(decodeErr, schemas.ErrInvalidPayload) {
				t.Errorf("decode error %v does not wrap ErrInvalidPayload: it would not be dead-lettered as invalid", decodeErr)
			}
		})
	}
}

// TestControlPlaneEventsAreNotBoundedByType: the control plane's own events (objects up to etcd's limit, and
// CRDs larger still) are bounded by the server's max payload only.
func TestControlPlaneEventsAreNotBoundedByType(t *testing.T) {
	for _, eventType := range []string{schemas.TypeWorkloadChanged, schemas.TypePlacementDecided, schemas.TypePolicyChanged} {
		if n := schemas.MaxDataBytes(eventType); n != 0 {
			t.Errorf("MaxDataBytes(%s) = %d, want 0", eventType, n)
		}
	}
}

func TestShortenErrorKeepsWholeCharacters(t *testing.T) {
	for _, tt := range []struct {
		name string
		msg  string
	}{
		{"short", "conflict"},
		{"ascii", strings.Repeat("a", 100<<10)},
		{"multibyte", strings.Repeat("ü€", 40<<10)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := schemas.ShortenError(tt.msg)
			if len(got) > schemas.MaxFailureError || !utf8.ValidString(got) {
				t.Fatalf("ShortenError = %d bytes (valid UTF-8: %t), want at most %d valid", len(got), utf8.ValidString(got), schemas.MaxFailureError)
			}
			if len(tt.msg) <= schemas.MaxFailureError {
				if got != tt.msg {
					t.Fatalf("ShortenError changed a short message: %q", got)
				}
				return
			}
			if !strings.HasSuffix(got, "more bytes)") {
				t.Fatalf("ShortenError = …%q, want it to say what it left out", got[len(got)-40:])
			}
		})
	}
}
