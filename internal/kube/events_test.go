package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
)

func TestLimitEventsDropsPastTheBurst(t *testing.T) {
	tests := []struct {
		name     string
		limits   EventLimits
		emitted  int
		wantKept int
	}{
		{name: "within the burst", limits: EventLimits{QPS: 0.001, Burst: 5}, emitted: 3, wantKept: 3},
		{name: "past the burst", limits: EventLimits{QPS: 0.001, Burst: 5}, emitted: 50, wantKept: 5},
		{name: "default burst", limits: EventLimits{QPS: 0.001}, emitted: 150, wantKept: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := events.NewFakeRecorder(tt.emitted)
			limited := LimitEvents(fake, tt.limits)
			ref := &corev1.ObjectReference{Kind: "PyTorchJob", Namespace: "ns", Name: "job"}
			for range tt.emitted {
				limited.Eventf(ref, nil, corev1.EventTypeNormal, "Scheduled", "Scheduling", "placed")
			}
			if got := len(fake.Events); got != tt.wantKept {
				t.Errorf("%d Events passed on of %d, want %d", got, tt.emitted, tt.wantKept)
			}
		})
	}
}
