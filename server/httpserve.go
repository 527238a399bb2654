package server

import (
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// HTTPLimits bound what one connection may hold of the server. Found under load: bodies
// had no read timeout, and 20,000 connections sending their bodies a byte at a time used
// every file descriptor until the server stopped accepting.
type HTTPLimits struct {
	// MaxConns caps the connections open at once (WebSockets included); past it new ones
	// wait in the listen queue until one closes. 0: DefaultMaxConns, or half the file
	// descriptors the process may open when that is less.
	MaxConns int
	// HeaderTimeout bounds reading a request's headers (0: 10 s).
	HeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body, from its headers on (0: 2 min, an 8 MB
	// body at 0.5 Mbit/s). A WebSocket is not bound by it.
	BodyTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no next request (0: 2 min).
	IdleTimeout time.Duration
}

// DefaultMaxConns is the connection cap when the file descriptor limit allows it.
const DefaultMaxConns = 4096

func (l HTTPLimits) withDefaults() HTTPLimits {
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
		if fds := openFileLimit(); fds > 0 && fds/2 < uint64(l.MaxConns) {
			// The other half is for the database, the workers' pipes and tool folders.
			l.MaxConns = max(int(fds/2), 16)
		}
	}
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = 10 * time.Second
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = 2 * time.Minute
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 2 * time.Minute
	}
	return l
}

// HTTPServer is the http.Server jean2 serve runs the handler in, with lim's timeouts. Serve
// it on LimitListener(ln, lim) so the connection cap holds too. No write timeout: a tool
// run or a WebSocket answers for as long as it lasts.
func (s *Server) HTTPServer(lim HTTPLimits) *http.Server {
	lim = lim.withDefaults()
	return &http.Server{
		Handler:           bodyDeadline(s.Handler(), lim.BodyTimeout),
		ReadHeaderTimeout: lim.HeaderTimeout,
		IdleTimeout:       lim.IdleTimeout,
	}
}

// LimitListener caps the connections ln hands out at once at lim.MaxConns.
func LimitListener(ln net.Listener, lim HTTPLimits) net.Listener {
	return netutil.LimitListener(ln, lim.withDefaults().MaxConns)
}

// bodyDeadline bounds the reading of each request's body, and not WebSockets (their
// connection is hijacked, and http.Server.ReadTimeout's deadline would be set on it). The
// deadline is lifted once the body has been read to its end, so a handler that works on
// longer (a tool run) reads nothing under it.
func bodyDeadline(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 || isUpgrade(r) {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil {
			next.ServeHTTP(w, r)
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the body's read deadline once the body has ended (or failed).
type deadlineBody struct {
	io.ReadCloser
	lift   func()
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.lifted {
		b.lifted = true
		var ne net.Error
		if !(errors.As(err, &ne) && ne.Timeout()) {
			b.lift()
		}
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	if !b.lifted {
		b.lifted = true
		b.lift()
	}
	return b.ReadCloser.Close()
}
