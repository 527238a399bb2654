package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jean2/jean2/store"
)

// serveLimited serves the fixture's server on loopback under lim, as jean2 serve does.
func (f *fixture) serveLimited(lim HTTPLimits) string {
	f.t.Helper()
	hs := f.srv.HTTPServer(lim)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.t.Fatal(err)
	}
	go func() { _ = hs.Serve(LimitListener(ln, lim)) }()
	f.t.Cleanup(func() { _ = hs.Close() })
	return ln.Addr().String()
}

// Found by a fault-injection pass: a POST announcing 1,000,000 bytes that sent only part of
// them, with a wrong token, got no 401 for over 5 s (a GET with the same token: 3 ms).
// The token is checked on the headers, and the answer comes back before the body is sent.
func TestWrongTokenIsRefusedBeforeTheBody(t *testing.T) {
	f := newFixture(t)
	f.start()
	addr := f.serveLimited(HTTPLimits{MaxConns: 64, BodyTimeout: 20 * time.Second})
	for _, length := range []int{1000000, 1000} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		fmt.Fprintf(c, "POST /api/workspaces HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer jean2_wrongwrongwrongwrongwrongwrongwrongwrong\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"path\":", addr, length)
		_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		took := time.Since(start)
		c.Close()
		if err != nil {
			t.Fatalf("Content-Length %d, partial body, wrong token: no answer after %v: %v", length, took.Round(time.Millisecond), err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || took > 2*time.Second {
			t.Errorf("Content-Length %d, partial body, wrong token: %d after %v, want 401 at once", length, resp.StatusCode, took.Round(time.Millisecond))
		}
		t.Logf("Content-Length %d, partial body, wrong token: %d after %v", length, resp.StatusCode, took.Round(time.Millisecond))
	}
}

// Found by a fault-injection pass: 20,600 connections trickling bodies made /api/health
// and a turn time out. Slow bodies with the right token hold at most MaxBodies
// connections (the rest are refused at once), those with a wrong one are refused on their
// headers, so health and an authenticated call are still answered while they go on.
// Bounded: 3× the connection cap of clients on loopback, for at most 10 s.
func TestSlowBodiesCannotStarveTheServer(t *testing.T) {
	f := newFixture(t)
	f.start()
	lim := HTTPLimits{MaxConns: 16, BodyTimeout: 30 * time.Second}
	addr := f.serveLimited(lim)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(stop); wg.Wait() })
	var held atomic.Int32
	trickle := func(token string) {
		defer wg.Done()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				continue
			}
			held.Add(1)
			fmt.Fprintf(c, "POST /api/workspaces HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n", addr, token)
			for time.Now().Before(deadline) {
				if _, err := c.Write([]byte(" ")); err != nil {
					break // refused and closed: connect again
				}
				select {
				case <-stop:
					deadline = time.Now()
				case <-time.After(100 * time.Millisecond):
				}
			}
			held.Add(-1)
			c.Close()
		}
	}
	for i := range 3 * lim.MaxConns {
		wg.Add(1)
		tok := f.token
		if i%2 == 1 {
			tok = "jean2_wrongwrongwrongwrongwrongwrongwrongwrong"
		}
		go trickle(tok)
	}
	time.Sleep(time.Second)
	client := &http.Client{Timeout: 3 * time.Second}
	for _, path := range []string{"/api/health", "/api/workspaces"} {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+f.token)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s while %d slow-body clients trickle: %v", path, 3*lim.MaxConns, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s while slow bodies trickle: %d", path, resp.StatusCode)
		}
		t.Logf("GET %s: %d in %v with %d slow-body connections open", path, resp.StatusCode, time.Since(start).Round(time.Millisecond), held.Load())
	}
}

// Found by the soak (issue 29): a GET carrying a small body its handler does not read
// (`null`, as a client marshalling a nil body sends) left its keep-alive connection with a
// cancelled context, so the next request on it failed 500 "context canceled". net/http
// reads such a body to its end once the answer's headers are written and then watches the
// connection for the client going away; the deadline set to end the body's wait ended
// that watch, which cancels the connection. Every request of a kept-alive connection
// that sends bodies nobody reads is answered.
func TestUnreadBodiesKeepTheConnectionUsable(t *testing.T) {
	f := newFixture(t)
	f.start()
	addr := f.serveLimited(HTTPLimits{MaxConns: 64, BodyTimeout: 20 * time.Second})
	// A session of 4 MB, whose listing takes a while to write (the soak's was 8 MB).
	_, ses := f.session()
	for i := range 8 {
		if _, err := f.srv.Store().AppendMessage(context.Background(), store.Message{SessionID: ses.ID, Role: store.RoleUser,
			Status: store.StatusComplete, Content: strings.Repeat(fmt.Sprintf("message %d ", i), 50000)}); err != nil {
			t.Fatal(err)
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	// The listing's headers go out while its handler runs (net/http then reads the
	// body to its end), /api/health's after it.
	for i := range 40 {
		path := []string{"/api/sessions/" + ses.ID + "/messages", "/api/health"}[i%2]
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, strings.NewReader("null"))
		req.Header.Set("Authorization", "Bearer "+f.token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d, GET %s with an unread body: %v", i, path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d, GET %s with an unread body: %d %s", i, path, resp.StatusCode, b)
		}
	}
}
