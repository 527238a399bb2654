package rawio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"testing"
	"time"
)

func pipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe() // non-blocking and polled on unix
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

func skipWithoutRaw(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no raw I/O on " + runtime.GOOS)
	}
}

// Over a pipe, what the writer writes (more than the pipe holds, so it waits for room) the
// reader reads whole, waiting for data, and then sees EOF.
func TestPipeRoundTrip(t *testing.T) {
	skipWithoutRaw(t)
	r, w := pipe(t)
	rr, ww := Reader(r), Writer(w)
	if _, ok := rr.(*reader); !ok {
		t.Fatalf("a polled pipe is read through %T, want the raw reader", rr)
	}
	if _, ok := ww.(*writer); !ok {
		t.Fatalf("a polled pipe is written through %T, want the raw writer", ww)
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, far above a pipe's 64 KiB
	errc := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond) // the reader waits first
		n, err := ww.Write(want)
		if err == nil && n != len(want) {
			err = io.ErrShortWrite
		}
		errc <- errors.Join(err, w.Close())
	}()
	got, err := io.ReadAll(rr)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want the %d written", len(got), len(want))
	}
	if n, err := rr.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("after the end: %d, %v; want 0, EOF", n, err)
	}
}

// Closing the file ends a read that waits on it, as it does for os.File's own Read.
func TestCloseEndsAWaitingRead(t *testing.T) {
	skipWithoutRaw(t)
	r, _ := pipe(t)
	rr := Reader(r)
	errc := make(chan error, 1)
	go func() {
		_, err := rr.Read(make([]byte, 16))
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("read ended with %v, want os.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("closing the file did not end the read")
	}
}

// TryWrite writes what fits and stops at a full pipe without waiting or failing.
func TestTryWriteStopsWhenFull(t *testing.T) {
	skipWithoutRaw(t)
	r, w := pipe(t)
	rc := Conn(w)
	if rc == nil {
		t.Fatal("no raw connection for a polled pipe")
	}
	big := make([]byte, 4<<20)
	n, err := TryWrite(rc, big)
	if err != nil {
		t.Fatal(err)
	}
	if n <= 0 || n >= len(big) {
		t.Fatalf("wrote %d of %d bytes into a pipe nobody reads; want a part", n, len(big))
	}
	// Once drained, the pipe takes more.
	buf := make([]byte, n)
	if _, err := io.ReadFull(Reader(r), buf); err != nil {
		t.Fatal(err)
	}
	if m, err := TryWrite(rc, []byte("more")); m != 4 || err != nil {
		t.Fatalf("after draining: %d, %v", m, err)
	}
	// A write to a pipe whose reader is gone fails with the error, not silently.
	_ = r.Close()
	if _, err := TryWrite(rc, []byte("x")); err == nil {
		t.Fatal("a write to a pipe with no reader succeeded")
	}
}

// What is not a polled file is handed back as it is: a raw read of a blocking descriptor
// would hold a processor the runtime thinks runs Go code.
func TestNotPolledIsLeftAlone(t *testing.T) {
	var buf bytes.Buffer
	if Reader(&buf) != io.Reader(&buf) || Writer(&buf) != io.Writer(&buf) || Conn(&buf) != nil {
		t.Fatal("a bytes.Buffer was wrapped")
	}
	skipWithoutRaw(t)
	r, w := pipe(t)
	rc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	setBlocking(t, rc)
	if got := Reader(r); got != io.Reader(r) {
		t.Fatalf("a blocking pipe is read through %T", got)
	}
	_ = w
}

// Expect wakes a read parked in the poller and makes it poll until data comes, which it
// returns; once the budget is spent a read parks again, and the deadline Expect used to
// wake it never shows as an error.
func TestExpectPollsForData(t *testing.T) {
	skipWithoutRaw(t)
	r, w := pipe(t)
	rr := Reader(r)
	raw := rr.(*reader)
	type result struct {
		s   string
		err error
	}
	read := func() <-chan result {
		c := make(chan result, 1)
		go func() {
			buf := make([]byte, 64)
			n, err := rr.Read(buf)
			c <- result{string(buf[:n]), err}
		}()
		return c
	}
	expectRead := func(c <-chan result, want string) {
		t.Helper()
		select {
		case got := <-c:
			if got.err != nil || got.s != want {
				t.Fatalf("read %q, %v; want %q", got.s, got.err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no read of %q", want)
		}
	}

	// A read parked before Expect is woken, polls, and gets what is written meanwhile.
	c := read()
	time.Sleep(20 * time.Millisecond) // parked by now
	if !Expect(rr, 10*time.Second) {
		t.Fatal("Expect did not take a raw reader")
	}
	for raw.polls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := w.Write([]byte("answer")); err != nil {
		t.Fatal(err)
	}
	expectRead(c, "answer")
	if raw.pollUntil.Load() != 0 {
		t.Fatal("the reader still polls after what it expected came")
	}

	// A budget spent: the read parks (it stops polling) and still gets data later.
	Expect(rr, 5*time.Millisecond)
	c = read()
	time.Sleep(50 * time.Millisecond)
	before := raw.polls.Load()
	time.Sleep(50 * time.Millisecond)
	if after := raw.polls.Load(); after != before {
		t.Fatalf("the read polled %d times after its budget", after-before)
	}
	if _, err := w.Write([]byte("late")); err != nil {
		t.Fatal(err)
	}
	expectRead(c, "late")

	// Closing the file ends a read that polls, long before its budget.
	Expect(rr, time.Hour)
	c = read()
	for raw.polls.Load() == before {
		time.Sleep(time.Millisecond)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-c:
		if !errors.Is(got.err, os.ErrClosed) {
			t.Fatalf("the polling read ended with %q, %v; want os.ErrClosed", got.s, got.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("closing the file did not end the polling read")
	}

	// Expect on anything but a raw reader does nothing.
	if Expect(bytes.NewReader(nil), time.Second) {
		t.Fatal("Expect took a bytes.Reader")
	}
}

// A reader stops polling when its polls keep running out before the data comes (a peer
// slower than the budget: each poll would hold a CPU for nothing), still polls once in
// pollProbe Expects, and polls again once those probes find the data in time.
func TestExpectStopsPollingWhenItDoesNotPay(t *testing.T) {
	skipWithoutRaw(t)
	r, w := pipe(t)
	rr := Reader(r)
	raw := rr.(*reader)
	buf := make([]byte, 64)
	// One round: Expect, a read, the data after wait; reports whether Expect had the read poll.
	// The late rounds poll 1 ms for data 20 ms away; the quick ones poll 200 ms for data
	// written at once (1 ms was too short for that at load 20: the "quick" data came late).
	round := func(wait time.Duration) bool {
		t.Helper()
		budget := time.Millisecond
		if wait == 0 {
			budget = 200 * time.Millisecond
		}
		Expect(rr, budget)
		polling := raw.pollUntil.Load() != 0
		done := make(chan error, 1)
		go func() { _, err := rr.Read(buf); done <- err }()
		time.Sleep(wait)
		if _, err := w.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return polling
	}
	for i := range 3 { // the data always late: the polls run out
		if !round(20 * time.Millisecond) {
			t.Fatalf("round %d did not poll, though polling had paid so far", i)
		}
	}
	for range 3 {
		round(20 * time.Millisecond)
	}
	polled := 0
	for range pollProbe {
		if round(20 * time.Millisecond) {
			polled++
		}
	}
	if polled != 1 {
		t.Fatalf("after 6 polls that ran out, %d of %d Expects polled, want only the probe", polled, pollProbe)
	}
	// The peer quick again: the probes find the data in time and polling comes back.
	for range pollProbe * pollHitsNeeded {
		round(0)
	}
	for i := range 3 {
		if !round(0) {
			t.Fatalf("polling did not come back for a quick peer (round %d)", i)
		}
	}
}
