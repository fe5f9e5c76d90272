package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/lifecycle"
	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// Options tunes a replay.
type Options struct {
	// Since and Until bound what is reported: the outputs answering events stored in [Since, Until]. No event
	// stored after Until is fed. Zero: unbounded.
	Since, Until time.Time
	// Through, when not 0, is the last sequence of the events stream fed: the recorded placer's acknowledgement
	// floor, when the history is read while it runs, so the events it has not answered yet are not taken for
	// decisions it failed to make.
	Through uint64
	// Placer overrides, field by field, the settings the recorded ticks carry; with none recorded, the
	// lifecycle's defaults fill the rest.
	Placer lifecycle.Config
	// Log receives the lifecycle controller's log; nil discards it.
	Log *slog.Logger
}

// Result is what a replay found.
type Result struct {
	// Events counts the events fed to the controller; First and Last are the first and last of their sequences.
	Events      int    `json:"events"`
	First       uint64 `json:"firstSequence"`
	Last        uint64 `json:"lastSequence"`
	Undecodable int    `json:"undecodable"`
	// Refused counts the node reports over their cluster's budget, which the placer refuses unread
	// (lifecycle.ReportBudget at its defaults).
	Refused int `json:"refused,omitempty"`
	// Recorded counts the recorded verdicts and decisions compared (those in the window); Reproduced, those
	// the replay produced alike.
	Recorded    int                     `json:"recorded"`
	Reproduced  int                     `json:"reproduced"`
	Divergences []Divergence            `json:"divergences"`
	Settings    *schemas.PlacerSettings `json:"settings"`
	Epoch       string                  `json:"epoch,omitempty"`
	Notes       []string                `json:"notes,omitempty"`
}

// Session is one replay: the placement lifecycle fed the recorded inputs, its effects compared with the
// recorded outputs.
type Session struct {
	opts Options
	ctrl *lifecycle.Controller
	cmp  *comparison
	// outcomes and recordedOutcomes are the last verdict per workload, produced and recorded.
	outcomes, recordedOutcomes map[string]Outcome
	result                     Result
	// offset is added to every recorded sequence, to make room for events fed before the history.
	offset uint64
	// keep, when set, says which recorded inputs are fed.
	keep func(Record, schemas.Payload) bool
	// sinceSeq is the first fed sequence stored at or after Since, 0 until one is fed; stopped is set once
	// an input stored after Until came.
	sinceSeq   uint64
	stopped    bool
	lastSeq    uint64
	lastStored time.Time
	injected   int
	// unanswered counts the inputs after Through.
	unanswered int
	// prelude is fed before the history's first event, which comes len(prelude) sequences later.
	prelude []injection
	// nodeReports is the placer's bound on each cluster's node reports, at its defaults.
	nodeReports lifecycle.ReportBudget
	// Follow names a workload (KIND/NAMESPACE/NAME) whose recorded decisions and applier reports Steps lists.
	Follow string
	steps  []Step
	// term names the leadership of the placer whose tick came last (schemas.PlacerTick.Placer).
	term string
	// tickSettings are the settings the last tick carried.
	tickSettings *schemas.PlacerSettings
	// epochUnknown is set while no recorded output has named the streams' epoch: the first may come past
	// what peek reads ahead (a fleet of 100,000 nodes registers before any workload). Until it comes, what
	// the controller produces is held, to be stamped with the epoch then.
	epochUnknown bool
	held         []lifecycle.Effect
}

func settingsString(st *schemas.PlacerSettings) string {
	return fmt.Sprintf("heartbeatTimeout %s, pendingTimeout %s, reservationTTL %s, failedApplyRetry %s",
		st.HeartbeatTimeout.Duration, st.PendingTimeout.Duration, st.ReservationTTL.Duration, st.FailedApplyRetry.Duration)
}

// NewSession returns a replay that has read nothing yet.
func NewSession(opts Options) *Session {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Session{opts: opts, outcomes: map[string]Outcome{}, recordedOutcomes: map[string]Outcome{},
		nodeReports: lifecycle.ReportBudget{Rate: lifecycle.DefaultNodeReportRate, Burst: lifecycle.DefaultNodeReportBurst}}
	s.cmp = newComparison(func(cause uint64) bool {
		return s.sinceSeq != 0 && cause >= s.sinceSeq && cause <= s.lastSeq
	})
	return s
}

// peekLimit bounds the records read ahead for the placer's settings and the streams' epoch (a variable for
// tests).
var peekLimit = 100_000

// Run feeds the whole history h to the session's controller, comparing its effects with what was recorded.
func (s *Session) Run(ctx context.Context, h History) (*Result, error) {
	h = Checked(h)
	ahead, settings, epoch, err := peek(ctx, h)
	if err != nil {
		return nil, err
	}
	if err := s.start(settings, epoch); err != nil {
		return nil, err
	}
	s.epochUnknown = epoch == ""
	if len(ahead) > 0 {
		s.lastStored = ahead[0].Stored
	}
	for _, in := range s.prelude {
		if err := s.Inject(in.eventType, in.subject, in.payload); err != nil {
			return nil, err
		}
	}
	for _, r := range ahead {
		if err := s.take(ctx, r); err != nil {
			return nil, err
		}
	}
	for {
		r, err := h.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if err := s.take(ctx, r); err != nil {
			return nil, err
		}
	}
	if s.unanswered > 0 {
		s.note("the placer had answered the events up to sequence %d; the %d placer inputs after it are not replayed",
			s.opts.Through, s.unanswered)
	}
	if s.epochUnknown {
		if err := s.learnEpoch(""); err != nil {
			return nil, err
		}
	}
	s.result.Divergences = s.cmp.finish()
	s.result.Reproduced = s.cmp.reproduced
	s.result.Recorded = s.cmp.reproduced
	for _, d := range s.result.Divergences {
		if d.Kind != Extra {
			s.result.Recorded++
		}
	}
	res := s.result
	return &res, nil
}

// peek reads ahead until the first tick that carries the placer's settings and the first output that names
// the streams' epoch, and returns what it read.
func peek(ctx context.Context, h History) (ahead []Record, settings *schemas.PlacerSettings, epoch string, err error) {
	for len(ahead) < peekLimit && (settings == nil || epoch == "") {
		r, err := h.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, "", err
		}
		ahead = append(ahead, r)
		switch r.Event.Type() {
		case schemas.TypePlacerTick:
			if p, err := codec.DecodePayload(r.Event); err == nil && settings == nil {
				settings = p.(*schemas.PlacerTick).Settings
			}
		case schemas.TypePlacementDecided, schemas.TypePlacementVerdict:
			if epoch != "" {
				continue
			}
			if p, err := codec.DecodePayload(r.Event); err == nil {
				switch o := p.(type) {
				case *schemas.PlacementDecided:
					epoch = o.Epoch
				case *schemas.PlacementVerdict:
					epoch = o.Epoch
				}
			}
		}
	}
	return ahead, settings, epoch, nil
}

// start makes the controller, deciding with the recorded settings under the options' overrides.
func (s *Session) start(recorded *schemas.PlacerSettings, epoch string) error {
	cfg := lifecycle.Config{}
	if recorded != nil {
		cfg = cfg.WithSettings(recorded)
	} else {
		s.note("no recorded tick carries the placer's settings (a placer older than the replay): the defaults and flags decide")
	}
	o := s.opts.Placer
	for _, f := range []struct {
		dst *time.Duration
		src time.Duration
	}{{&cfg.HeartbeatTimeout, o.HeartbeatTimeout}, {&cfg.PendingTimeout, o.PendingTimeout},
		{&cfg.ReservationTTL, o.ReservationTTL}, {&cfg.FailedApplyRetry, o.FailedApplyRetry}} {
		if f.src > 0 {
			*f.dst = f.src
		}
	}
	builtins, err := karta.Builtins()
	if err != nil {
		return fmt.Errorf("built-in resource interfaces: %w", err)
	}
	ctrl, err := lifecycle.New(karta.NewRegistry(builtins...), cfg, s.opts.Log)
	if err != nil {
		return err
	}
	ctrl.SetEpoch(epoch)
	s.ctrl, s.result.Settings, s.result.Epoch = ctrl, cfg.Settings(), epoch
	return nil
}

func (s *Session) note(format string, args ...any) {
	s.result.Notes = append(s.result.Notes, fmt.Sprintf(format, args...))
}

// take handles one record of the history.
func (s *Session) take(ctx context.Context, r Record) error {
	switch {
	case r.Event.Type() == TypeUndecodable:
		s.result.Undecodable++
	case r.Event.Type() == schemas.TypePlacerLeader:
		// A placer's leadership fences its publishes; it decides nothing.
	case placerOutput(r.Stream, r.Subject):
		o := s.cmp.producedAs(r.Subject, r.Event.ID(), r.Event.Data())
		if o == nil {
			var err error
			if o, err = decodeOutput(r.Subject, r.Event); err != nil {
				s.note("%s: recorded output not read: %v", r.where(), err)
				return nil
			}
		}
		if s.epochUnknown {
			if err := s.learnEpoch(o.epoch); err != nil {
				return err
			}
		}
		if o.outcome != nil {
			s.recordedOutcomes[o.workload] = *o.outcome
		}
		if o.workload == s.Follow && s.Follow != "" {
			s.steps = append(s.steps, Step{Stored: r.Stored, Sequence: r.Sequence, Stream: r.Stream, What: "decided: " + o.summary})
		}
		s.cmp.add(o, true)
	case r.Stream == schemas.StreamEvents && schemas.IsPlacerInput(r.Subject):
		if s.opts.Through > 0 && r.Sequence > s.opts.Through {
			s.unanswered++
			return nil
		}
		if s.stopped || (!s.opts.Until.IsZero() && r.Stored.After(s.opts.Until)) {
			s.stopped = true
			return nil
		}
		if cluster, ok := schemas.ClusterOfNodeSubject(r.Subject); ok && s.nodeReports.Take(cluster, r.Stored).Refused {
			s.result.Refused++ // as the placer's consumer refuses it, unread
			return nil
		}
		payload, err := codec.DecodePayload(r.Event)
		if err != nil {
			s.result.Undecodable++ // the placer's consumer terminates such a message unread
			return nil
		}
		if s.keep != nil && !s.keep(r, payload) {
			return nil
		}
		if s.Follow != "" {
			s.follow(r, payload)
		}
		if s.sinceSeq == 0 && !r.Stored.Before(s.opts.Since) {
			s.sinceSeq = r.Sequence + s.offset
		}
		if tick, ok := payload.(*schemas.PlacerTick); ok {
			s.noteTick(r, tick)
		}
		return s.feed(lifecycle.Event{Subject: r.Subject, Sequence: r.Sequence + s.offset, Type: r.Event.Type(),
			Payload: payload, Time: r.Event.Time(), Stored: r.Stored})
	}
	return nil
}

// noteTick notes where the recorded placer changed: another leadership, or other settings.
func (s *Session) noteTick(r Record, tick *schemas.PlacerTick) {
	if tick.Placer != "" {
		if s.term != "" && tick.Placer != s.term {
			s.note("%s: another placer took over (a restart or a failover) and rebuilt its view from %s; the replay "+
				"runs one placer throughout, so divergences after this may come from what the rebuild restored",
				r.where(), schemas.StreamState)
		}
		s.term = tick.Placer
	}
	if tick.Settings != nil {
		if s.tickSettings != nil && *tick.Settings != *s.tickSettings {
			s.note("%s: the placer's settings changed (a placer started with other flags); the replay keeps deciding with %s",
				r.where(), settingsString(s.result.Settings))
		}
		s.tickSettings = tick.Settings
	}
}

// feed hands one input event to the placement lifecycle and takes in its effects. An event it fails on is
// handed again, as the placer's consumer redelivers it, up to schemas.MaxDeliver times.
func (s *Session) feed(ev lifecycle.Event) error {
	if s.result.Events == 0 {
		s.result.First = ev.Sequence
	}
	s.result.Events++
	s.result.Last, s.lastSeq, s.lastStored = ev.Sequence, ev.Sequence, ev.Stored
	var effects []lifecycle.Effect
	var err error
	for range schemas.MaxDeliver {
		if effects, err = s.ctrl.Handle(ev); err == nil || errors.Is(err, lifecycle.ErrPermanent) {
			break // the placer's consumer gives up on a permanent failure at once
		}
	}
	if err != nil {
		s.note("%s sequence %d (%s): the placer gave up on it: %v", schemas.StreamEvents, ev.Sequence, ev.Subject, err)
		s.ctrl.ForgetThrough(ev.Sequence) // it is not handled again
	}
	for _, e := range effects {
		if s.epochUnknown {
			s.held = append(s.held, e)
			continue
		}
		if err := s.produced(e, ev.Sequence); err != nil {
			return err
		}
	}
	s.ctrl.Commit()
	s.ctrl.TakeGone()
	s.ctrl.TakeGoneFleet()
	if del, ok := ev.Payload.(*schemas.ObjectDeleted); ok && ev.Type == schemas.TypeWorkloadDeleted {
		delete(s.outcomes, workloadName(del.Workload))
		delete(s.recordedOutcomes, workloadName(del.Workload))
	}
	return nil
}

// produced compares an effect of the event at seq.
func (s *Session) produced(e lifecycle.Effect, seq uint64) error {
	o, err := effectOutput(e)
	if err != nil {
		return fmt.Errorf("replay: the placer published what it cannot read back, answering sequence %d: %w", seq, err)
	}
	if o.outcome != nil {
		s.outcomes[o.workload] = *o.outcome
	}
	s.cmp.add(o, false)
	return nil
}

// learnEpoch has the lifecycle stamp its effects with the epoch the first recorded output names, and stamps
// and compares those it had before. Effects are not modified once made, so a held one is stamped on a copy.
func (s *Session) learnEpoch(epoch string) error {
	s.epochUnknown = false
	held := s.held
	s.held = nil
	if epoch != "" {
		s.ctrl.SetEpoch(epoch)
		s.result.Epoch = epoch
	}
	for _, e := range held {
		if epoch != "" {
			switch p := e.Payload.(type) {
			case *schemas.PlacementDecided:
				stamped := *p
				stamped.Epoch = epoch
				if p.Verdict != nil {
					v := *p.Verdict
					v.Epoch = epoch
					stamped.Verdict = &v
				}
				e.Payload = &stamped
			case *schemas.PlacementVerdict:
				stamped := *p
				stamped.Epoch = epoch
				e.Payload = &stamped
			}
		}
		o, err := effectOutput(e)
		if err != nil {
			return fmt.Errorf("replay: the placer published what it cannot read back: %w", err)
		}
		if o.outcome != nil {
			s.outcomes[o.workload] = *o.outcome
		}
		s.cmp.add(o, false)
	}
	return nil
}

// Inject feeds the controller one more event after the history, stored when the last one was.
func (s *Session) Inject(eventType, subject string, payload schemas.Payload) error {
	if err := payload.Validate(); err != nil {
		return fmt.Errorf("replay: injected %s on %s: %w", eventType, subject, err)
	}
	s.injected++
	return s.feed(lifecycle.Event{Subject: subject, Sequence: s.lastSeq + 1, Type: eventType, Payload: payload,
		Time: s.lastStored, Stored: s.lastStored})
}

// Step is a recorded moment of the followed workload's placement.
type Step struct {
	Stored   time.Time `json:"stored"`
	Stream   string    `json:"stream"`
	Sequence uint64    `json:"sequence"`
	What     string    `json:"what"`
}

// Steps are the followed workload's recorded decisions and applier reports, in the order they were stored.
func (s *Session) Steps() []Step { return s.steps }

func (s *Session) follow(r Record, payload schemas.Payload) {
	var what string
	switch p := payload.(type) {
	case *schemas.PlacementApplied:
		if workloadName(p.Workload) == s.Follow {
			what = fmt.Sprintf("carried out on %s: %s of decision %d", p.Cluster, p.Action, p.Sequence)
		}
	case *schemas.PlacementFailed:
		if workloadName(p.Workload) == s.Follow {
			what = fmt.Sprintf("failed on %s: %s of decision %d: %s", p.Cluster, p.Action, p.Sequence, oneLine(p.Error))
		}
	case *schemas.ObjectChanged:
		if r.Event.Type() == schemas.TypeWorkloadChanged && workloadName(p.Ref()) == s.Follow {
			what = "submitted or changed on the control plane"
		}
	case *schemas.ObjectDeleted:
		if r.Event.Type() == schemas.TypeWorkloadDeleted && workloadName(p.Workload) == s.Follow {
			what = "deleted on the control plane"
		}
	}
	if what != "" {
		s.steps = append(s.steps, Step{Stored: r.Stored, Sequence: r.Sequence, Stream: r.Stream, What: what})
	}
}

// Snapshot is the fleet view as the replay left it.
func (s *Session) Snapshot() *state.Snapshot { return s.ctrl.Snapshot() }

// Controller is the session's placement lifecycle, for what-if checks of the policies it refused.
func (s *Session) Controller() *lifecycle.Controller { return s.ctrl }

// Outcome is where a workload's last verdict put it.
type Outcome struct {
	Status   schemas.VerdictStatus `json:"status"`
	Clusters []string              `json:"clusters,omitempty"`
	Policy   string                `json:"policy,omitempty"`
	Reasons  map[string]string     `json:"reasons,omitempty"`
	Message  string                `json:"message,omitempty"`
}

// Outcomes is the last verdict the replay produced per live workload (KIND/NAMESPACE/NAME).
func (s *Session) Outcomes() map[string]Outcome { return s.outcomes }

// RecordedOutcomes is the last recorded verdict per live workload.
func (s *Session) RecordedOutcomes() map[string]Outcome { return s.recordedOutcomes }
