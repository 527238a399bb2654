package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Error is a provider's failure: an HTTP error status, an error the server sent inside
// the stream, or a broken connection.
type Error struct {
	Provider string // the configured provider's name
	Status   int    // the HTTP status; 0 for an error inside the stream or a connection error
	Type     string // the server's error type, e.g. rate_limit_error, overloaded_error, server_error
	Message  string // the server's message, or what went wrong with the connection
	// RetryAfter is how long the server asked to wait before trying again, if it said.
	RetryAfter time.Duration
	// Partial is set when part of the answer had been delivered before the error: the
	// request was not retried, and the caller holds an incomplete answer.
	Partial  bool
	Attempts int // how many times the request was sent
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider %s: ", e.Provider)
	if e.Status != 0 {
		fmt.Fprintf(&b, "HTTP %d", e.Status)
		if e.Type != "" || e.Message != "" {
			b.WriteString(": ")
		}
	}
	if e.Type != "" {
		b.WriteString(e.Type)
		if e.Message != "" {
			b.WriteString(": ")
		}
	}
	b.WriteString(e.Message)
	if e.Partial {
		b.WriteString(" (in the middle of the answer; not retried)")
	} else if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	if e.RetryAfter > 0 && !e.Partial {
		fmt.Fprintf(&b, "; the server asks to retry after %s", e.RetryAfter)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Temporary reports whether the same request may succeed later: rate limits, overloads,
// server errors and broken connections.
func (e *Error) Temporary() bool {
	if e.Status != 0 {
		return retryableStatus(e.Status)
	}
	if e.Type != "" {
		return retryableType(e.Type)
	}
	return isConnectionError(e.Err)
}

func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// retryableType reports whether an error type sent inside a stream means "try again".
func retryableType(t string) bool {
	t = strings.ToLower(t)
	for _, w := range []string{"overloaded", "rate_limit", "server_error", "api_error", "timeout", "unavailable"} {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

func isConnectionError(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, errEndedEarly) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// errEndedEarly is a stream that ended cleanly before the model finished its answer.
var errEndedEarly = errors.New("the stream ended before the model finished its answer")

// Retry says how a request is retried when it fails before any output.
type Retry struct {
	// MaxAttempts is how many times a request is sent at most, the first one included
	// (default 4; 1 turns retries off).
	MaxAttempts int
	// BaseDelay is the wait before the first retry; each further retry waits twice as long,
	// up to MaxDelay, with random jitter (defaults 500ms and 20s).
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter is the longest Retry-After the server may ask for and still be waited
	// for (default 60s); a longer one ends the retries and is reported in Error.RetryAfter.
	MaxRetryAfter time.Duration
	// OnRetry, when set, hears of each retry before its wait: attempt is the number of the
	// attempt that failed.
	OnRetry func(attempt int, wait time.Duration, err error)

	// idle is the provider's idle timeout (see Options.IdleTimeout) and provider its name,
	// set by the provider that uses the policy.
	idle     time.Duration
	provider string
}

// DefaultIdleTimeout is how long a model may send nothing — no response headers, or no
// byte of an answer that started — before the request is abandoned.
const DefaultIdleTimeout = 2 * time.Minute

// stallError is the cause an attempt's context is cancelled with when the server sent
// nothing for the idle timeout.
type stallError struct {
	idle    time.Duration
	headers bool // no response headers came; else the answer stopped in the middle
}

func (e *stallError) Error() string {
	what := "the answer stopped in the middle"
	if e.headers {
		what = "no response came (not even headers)"
	}
	return fmt.Sprintf("the model sent nothing for %s (the idle timeout): %s; the request was abandoned. Try again; if this model is slow to start, raise idleTimeoutSeconds for the provider in providers.json",
		e.idle, what)
}

// IsStall reports whether err is a request abandoned because the model sent nothing for
// the idle timeout.
func IsStall(err error) bool {
	var se *stallError
	return errors.As(err, &se)
}

func (r Retry) withDefaults() Retry {
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = 4
	}
	if r.BaseDelay <= 0 {
		r.BaseDelay = 500 * time.Millisecond
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = 20 * time.Second
	}
	if r.MaxRetryAfter <= 0 {
		r.MaxRetryAfter = 60 * time.Second
	}
	return r
}

// wait returns how long to wait before attempt+1 after err, or false to give up.
func (r Retry) wait(attempt int, err *Error) (time.Duration, bool) {
	if attempt >= r.MaxAttempts || !err.Temporary() {
		return 0, false
	}
	if err.RetryAfter > 0 {
		if err.RetryAfter > r.MaxRetryAfter {
			return 0, false
		}
		return err.RetryAfter, true
	}
	d := r.BaseDelay << (attempt - 1)
	if d > r.MaxDelay || d <= 0 {
		d = r.MaxDelay
	}
	// Equal jitter: half fixed, half random, so clients that failed together spread out.
	return d/2 + rand.N(d/2+1), true
}

// parseRetryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or an HTTP date).
func parseRetryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e6 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// opener sends the request once and returns the answer's events, or a *Error.
type opener func(ctx context.Context) (Stream, *Error)

// retrying is the Stream every provider returns: it sends the request again, after a
// wait, when it fails before any event reached the caller, and never after.
type retrying struct {
	ctx       context.Context
	open      opener
	policy    Retry
	cur       Stream
	attempts  int
	delivered bool
	done      bool

	// The current attempt's context is cancelled with a *stallError by timer when the
	// server sends nothing for policy.idle: before the headers (while open waits), and
	// during each Next.
	cancel context.CancelCauseFunc
	timer  *time.Timer
	stall  *stallError
	actx   context.Context
}

// startStream opens the first stream, retrying as policy allows.
func startStream(ctx context.Context, policy Retry, open opener) (Stream, error) {
	r := &retrying{ctx: ctx, open: open, policy: policy.withDefaults()}
	if err := r.connect(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *retrying) connect() error {
	for {
		r.attempts++
		s, err := r.openOnce()
		if err == nil {
			r.cur = s
			return nil
		}
		if !r.backoff(err) {
			err.Attempts = r.attempts
			return err
		}
	}
}

// openOnce sends the request once under a context of its own, which the idle timer
// cancels when no headers come in time.
func (r *retrying) openOnce() (Stream, *Error) {
	r.release()
	r.actx, r.cancel = context.WithCancelCause(r.ctx)
	if r.policy.idle > 0 {
		st := &stallError{idle: r.policy.idle, headers: true}
		cancel := r.cancel
		r.timer = time.AfterFunc(r.policy.idle, func() { cancel(st) })
	}
	s, err := r.open(r.actx)
	if r.timer != nil {
		r.timer.Stop()
	}
	if err != nil {
		if se := r.stalled(); se != nil {
			err = r.stallErr(se)
		}
		r.release()
		return nil, err
	}
	if r.policy.idle > 0 {
		// From here on the timer runs only while Next waits.
		r.stall = &stallError{idle: r.policy.idle}
		st, cancel := r.stall, r.cancel
		r.timer = time.AfterFunc(time.Hour, func() { cancel(st) })
		r.timer.Stop()
	}
	return s, nil
}

// stalled returns the stall that cancelled the current attempt, if one did.
func (r *retrying) stalled() *stallError {
	if r.actx == nil {
		return nil
	}
	var se *stallError
	if errors.As(context.Cause(r.actx), &se) {
		return se
	}
	return nil
}

func (r *retrying) stallErr(se *stallError) *Error {
	return &Error{Provider: r.policy.provider, Type: "stalled", Message: se.Error(), Err: se}
}

// release ends the current attempt's context and timer.
func (r *retrying) release() {
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	if r.cancel != nil {
		r.cancel(nil)
		r.cancel = nil
	}
}

// backoff waits before another attempt when err and the policy allow one.
func (r *retrying) backoff(err *Error) bool {
	d, ok := r.policy.wait(r.attempts, err)
	if !ok || r.ctx.Err() != nil {
		return false
	}
	if r.policy.OnRetry != nil {
		r.policy.OnRetry(r.attempts, d, err)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (r *retrying) Next() (Event, error) {
	if r.done {
		return Event{}, io.EOF
	}
	for {
		if r.timer != nil {
			r.timer.Reset(r.policy.idle)
		}
		ev, err := r.cur.Next()
		if r.timer != nil {
			r.timer.Stop()
		}
		if se := r.stalled(); se != nil && err != nil && !errors.Is(err, io.EOF) {
			// Not retried: the wait was long already, and part of the answer may be out.
			r.done = true
			pe := r.stallErr(se)
			pe.Partial, pe.Attempts = r.delivered, r.attempts
			r.cur.Close()
			r.release()
			return Event{}, pe
		}
		if err == nil {
			r.delivered = true
			return ev, nil
		}
		if errors.Is(err, io.EOF) {
			r.done = true
			return Event{}, io.EOF
		}
		var pe *Error
		if !errors.As(err, &pe) {
			pe = &Error{Message: err.Error(), Err: err}
		}
		if r.delivered || !r.backoff(pe) {
			r.done = true
			pe.Partial, pe.Attempts = r.delivered, r.attempts
			r.cur.Close()
			return Event{}, pe
		}
		r.cur.Close()
		if err := r.connect(); err != nil {
			r.done = true
			return Event{}, err
		}
	}
}

func (r *retrying) Close() error {
	r.done = true
	err := r.cur.Close()
	r.release()
	return err
}

// queue is the events one server chunk produced and the stream has yet to hand out.
type queue struct{ evs []Event }

func (q *queue) push(evs ...Event) { q.evs = append(q.evs, evs...) }

func (q *queue) pop() (Event, bool) {
	if len(q.evs) == 0 {
		return Event{}, false
	}
	ev := q.evs[0]
	q.evs = q.evs[1:]
	return ev, true
}
