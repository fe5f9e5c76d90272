package localfleet

import (
	"os"
	"strings"
	"testing"
)

func TestSchedulerConfigArgs(t *testing.T) {
	tests := []struct {
		name     string
		scoring  string
		wantArgs int
		wantFile []string
		wantErr  bool
	}{
		{"default profile", ScoringDefault, 0, nil, false},
		{"bin-packing", ScoringMostAllocated, 1, []string{"type: MostAllocated", "nvidia.com/gpu", "kubeconfig: /k/sched.kubeconfig",
			"leaderElect: false"}, false},
		{"unknown", "LeastRequested", 0, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, err := schedulerConfigArgs(t.TempDir(), "/k/sched.kubeconfig", tt.scoring)
			if (err != nil) != tt.wantErr || len(args) != tt.wantArgs {
				t.Fatalf("args %v, error %v; want %d args, error %t", args, err, tt.wantArgs, tt.wantErr)
			}
			if len(args) == 0 {
				return
			}
			data, err := os.ReadFile(strings.TrimPrefix(args[0], "--config="))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.wantFile {
				if !strings.Contains(string(data), want) {
					t.Errorf("config lacks %q:\n%s", want, data)
				}
			}
		})
	}
}
