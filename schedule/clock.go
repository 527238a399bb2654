package schedule

import "time"

// Clock is the scheduler's time: the system's in jean2 serve, a fake one in tests, so
// that no test waits for a real minute.
type Clock interface {
	Now() time.Time
	// At returns a channel that receives once the clock reaches t (at once when it has),
	// and a function that releases it when it is no longer wanted.
	At(t time.Time) (c <-chan time.Time, stop func())
}

// SystemClock is the real time.
type SystemClock struct{}

var _ Clock = SystemClock{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// At is a timer for t.
func (SystemClock) At(t time.Time) (<-chan time.Time, func()) {
	tm := time.NewTimer(time.Until(t))
	return tm.C, func() { tm.Stop() }
}
