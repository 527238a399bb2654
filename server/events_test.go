package server

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/jean2/jean2/store"
)

// A client that falls behind the live events by more than the subscriber buffer is closed
// with 4008; what it got is a gap-free prefix of the log, and reconnecting with after= the
// last seq it saw brings the rest, each event once.
func TestSlowSubscriberClosedWith4008(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.cfg.SubscriberBuffer = 4
	f.start()
	_, ses := f.session()

	// The client's receive buffer is small and fixed, so the server's writes block soon
	// after the client stops reading.
	dialer := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10) })
		return errors.Join(err, serr)
	}}
	httpc := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, f.wsURL("/api/sessions/"+ses.ID+"/ws?after=0"), &websocket.DialOptions{HTTPClient: httpc, HTTPHeader: f.authHeader()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	if _, data, err := c.Read(ctx); err != nil || !strings.Contains(string(data), `"hello"`) {
		t.Fatalf("hello: %s %v", data, err)
	}

	// 300 events of 32 KiB, one at a time, while the client reads nothing: 9.6 MB, over
	// the 4 MB a loopback socket buffers at most plus the hub's hand-off and the subscriber
	// buffer. (One at a time: a burst larger than the buffer would drop even a client that
	// reads.)
	payload, _ := json.Marshal(map[string]string{"fill": strings.Repeat("x", 32<<10)})
	const total = 300
	for range total {
		if _, err := f.srv.hub.Publish(ctx, ses.ID, store.NewEvent{Type: "test.fill", Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}

	// Now it reads: a prefix of the log, then the close.
	var last int64
	var closeErr error
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			closeErr = err
			break
		}
		var ev store.Event
		mustJSON(t, data, &ev)
		if ev.Seq != last+1 {
			t.Fatalf("event seq %d after %d", ev.Seq, last)
		}
		last = ev.Seq
	}
	if got := websocket.CloseStatus(closeErr); got != CloseSlowSubscriber {
		t.Fatalf("closed with %v (status %d) after seq %d; want %d", closeErr, got, last, CloseSlowSubscriber)
	}
	// What was under way to it, not all: on a loaded machine the hub may drop the client
	// before the socket's writer took a first event, so none is a prefix too.
	if last >= total {
		t.Fatalf("the slow client got all %d events before it was closed; want what was under way to it, not all", total)
	}
	t.Logf("closed with 4008 after %d of %d events", last, total)

	// Reconnecting after the last seq seen brings the rest.
	sock := f.dial("/api/sessions/"+ses.ID+"/ws?after="+itoa(last), nil)
	sock.lastSeq = last
	for sock.lastSeq < total {
		sock.next(30 * time.Second)
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
