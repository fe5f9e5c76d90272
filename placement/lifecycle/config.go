package lifecycle

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/schemas"
)

// Config tunes the lifecycle's time-based rules. Its durations are measured on the events' times.
type Config struct {
	// HeartbeatTimeout is how long a cluster may stay silent before it is NotReady and its workloads fail
	// over (default 30s).
	HeartbeatTimeout time.Duration
	// PendingTimeout is how long a placed workload's pods may stay Pending before it moves to another
	// cluster that fits (default 5m).
	PendingTimeout time.Duration
	// ReservationTTL is how long a decision's reservations hold capacity without the cluster showing the
	// pods (default 5m).
	ReservationTTL time.Duration
	// FailedApplyRetry is how long after an applier gave up on an Apply (forbidden, invalid, an old CRD) it is
	// sent again when nothing else changed (default 5m): what was refused may be fixed in the cluster.
	FailedApplyRetry time.Duration
	// Fit is how the scheduler decides that a gang fits a cluster (default scheduler.FitNodes).
	// scheduler.FitSummed is a comparison mode, Karmada's general estimator's way; the ticks do not carry it,
	// so a replay decides with the fit mode it is given.
	Fit scheduler.FitMode
}

// WithDefaults is c with every unset duration at its default.
func (c Config) WithDefaults() Config {
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = 30 * time.Second
	}
	if c.PendingTimeout <= 0 {
		c.PendingTimeout = 5 * time.Minute
	}
	if c.ReservationTTL <= 0 {
		c.ReservationTTL = state.DefaultReservationTTL
	}
	if c.FailedApplyRetry <= 0 {
		c.FailedApplyRetry = 5 * time.Minute
	}
	if c.Fit == "" {
		c.Fit = scheduler.FitNodes
	}
	return c
}

// Settings is what the placer's ticks carry of c (its defaults filled in), for a replay to decide as it did.
func (c Config) Settings() *schemas.PlacerSettings {
	c = c.WithDefaults()
	return &schemas.PlacerSettings{HeartbeatTimeout: metav1.Duration{Duration: c.HeartbeatTimeout},
		PendingTimeout: metav1.Duration{Duration: c.PendingTimeout}, ReservationTTL: metav1.Duration{Duration: c.ReservationTTL},
		FailedApplyRetry: metav1.Duration{Duration: c.FailedApplyRetry}}
}

// WithSettings is c deciding with the settings a tick carried.
func (c Config) WithSettings(s *schemas.PlacerSettings) Config {
	c.HeartbeatTimeout, c.PendingTimeout = s.HeartbeatTimeout.Duration, s.PendingTimeout.Duration
	c.ReservationTTL, c.FailedApplyRetry = s.ReservationTTL.Duration, s.FailedApplyRetry.Duration
	return c
}
