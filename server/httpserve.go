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
	// MaxBodies caps the requests whose bodies are being received at once (0: half of
	// MaxConns): slow bodies cannot hold every connection.
	MaxBodies int
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
	if l.MaxBodies <= 0 || l.MaxBodies > l.MaxConns {
		l.MaxBodies = max(l.MaxConns/2, 1)
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
		Handler:           bodyDeadline(s.Handler(), lim.BodyTimeout, lim.MaxBodies),
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
//
// At most maxBodies requests with a body are served at once; past that one is refused at
// once (503, connection closed), so slow bodies can hold at most that many connections and
// the rest of the cap stays for everyone else. A body the handler left unread (a request
// refused on its headers: a wrong token, a wrong route) is not waited for: the connection
// is closed after the answer instead of reading the rest (found by a fault-injection pass:
// a wrong token with a partial 1 MB body got no 401 for over 5 s).
func bodyDeadline(next http.Handler, d time.Duration, maxBodies int) http.Handler {
	slots := make(chan struct{}, maxBodies)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 || isUpgrade(r) {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		default:
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": errorf(http.StatusServiceUnavailable, codeUnavailable,
				"the server is receiving %d request bodies at once, its limit; send this again in a moment", maxBodies)})
			// Nor is the body read after the answer (net/http would, up to 256 KB).
			_ = rc.SetReadDeadline(time.Now())
			return
		}
		if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil {
			next.ServeHTTP(w, r)
			return
		}
		body := &deadlineBody{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		// The handler gets a copy: net/http looks at the original request's own body type
		// after the handler, to see how much of it is left unread.
		r2 := r.WithContext(r.Context())
		r2.Body = body
		next.ServeHTTP(w, r2)
		if body.ended {
			return
		}
		if bodyAtEOF(r) {
			// net/http read it to its end itself, when the answer's headers went out,
			// and now watches the connection for the client going away: a deadline in
			// the past would end that watch as if the client had, cancelling the
			// connection's context and with it every later request on it (found by the
			// soak: GETs carrying `null` answered 500 "context canceled").
			_ = rc.SetReadDeadline(time.Time{})
			return
		}
		// net/http would read up to 256 KB of what is left before answering; told to
		// close (when the answer has not begun) it does not, and with the deadline passed
		// it gives up at once and closes the connection instead.
		w.Header().Set("Connection", "close")
		_ = rc.SetReadDeadline(time.Now())
	})
}

// bodyAtEOF reports whether r's body has been read to its end or closed (net/http closes
// it once its own read reached the end; a body closed before its end makes net/http close
// the connection after the answer, so its deadline no longer matters), without reading: an
// empty read of a body of known length returns io.EOF or ErrBodyReadAfterClose then, and
// nothing otherwise. A chunked body (which an empty read could make read a chunk's header)
// or one awaiting "100 Continue" (which an empty read would send) counts as not read.
func bodyAtEOF(r *http.Request) bool {
	if r.ContentLength <= 0 || r.Header.Get("Expect") != "" {
		return false
	}
	_, err := r.Body.Read(nil)
	return err == io.EOF || errors.Is(err, http.ErrBodyReadAfterClose)
}

// deadlineBody lifts the body's read deadline once the body has ended (or failed).
type deadlineBody struct {
	io.ReadCloser
	lift   func()
	lifted bool
	ended  bool // read to its end
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.lifted {
		b.lifted = true
		b.ended = err == io.EOF
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
