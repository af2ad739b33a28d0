package supervisor

import "time"

// State is where a service is in its life cycle. The values and their
// order match Talos, whose API reports them by name.
type State int

// Service states.
const (
	Initialized State = iota
	Preparing
	Waiting
	Running
	Stopping
	Finished
	Failed
	Skipped
	Starting
)

var stateNames = [...]string{
	Initialized: "Initialized",
	Preparing:   "Preparing",
	Waiting:     "Waiting",
	Running:     "Running",
	Stopping:    "Stopping",
	Finished:    "Finished",
	Failed:      "Failed",
	Skipped:     "Skipped",
	Starting:    "Starting",
}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}

	return "Unknown"
}

// Health is the result of a service's health checks. Unknown is set until
// the first check of the current run has finished, and always for services
// without a health check.
type Health struct {
	Unknown     bool
	Healthy     bool
	LastMessage string
	LastChange  time.Time
}

var unknownHealth = Health{Unknown: true}

// Event is one entry of a service's history, as `talosctl service ID`
// shows it.
type Event struct {
	Message   string
	State     State
	Health    Health
	Timestamp time.Time
}

// Status is a snapshot of one service.
type Status struct {
	ID     string
	State  State
	Health Health
	// Events are the most recent events, oldest first.
	Events []Event
}

// MaxEvents is how many events each service remembers, as in Talos.
const MaxEvents = 64

// eventRing keeps the last MaxEvents events without reallocating.
type eventRing struct {
	buf  [MaxEvents]Event
	next int // where the next event goes
	n    int
}

func (r *eventRing) push(ev Event) {
	r.buf[r.next] = ev
	r.next = (r.next + 1) % MaxEvents
	r.n = min(r.n+1, MaxEvents)
}

// last returns up to k of the newest events, oldest first.
func (r *eventRing) last(k int) []Event {
	k = min(k, r.n)
	out := make([]Event, k)

	for i := range k {
		out[i] = r.buf[(r.next-k+i+MaxEvents)%MaxEvents]
	}

	return out
}
