package server

import (
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// minGzip is the smallest answer worth compressing: below it gzip's header and footer cost
// about what they save.
const minGzip = 1024

// jsonGzip compresses the API's JSON answers for clients that accept gzip (a conversation's
// messages are about a quarter of their size gzipped). The web client's assets are
// compressed ahead of time by package web and carry their own Content-Encoding, so they pass
// through, as do WebSocket upgrades and anything that is not JSON.
type jsonGzip struct {
	next    http.Handler
	writers sync.Pool // *gzip.Writer, reused: each holds a few hundred kB of state
}

func newJSONGzip(next http.Handler) *jsonGzip { return &jsonGzip{next: next} }

func (c *jsonGzip) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Upgrade") != "" || !acceptsGzip(r.Header.Get("Accept-Encoding")) {
		c.next.ServeHTTP(w, r)
		return
	}
	gw := &gzipResponse{ResponseWriter: w, c: c}
	defer gw.finish()
	c.next.ServeHTTP(gw, r)
}

// acceptsGzip reports whether an Accept-Encoding header takes gzip (and does not refuse it
// with q=0).
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q, found := strings.CutPrefix(strings.TrimSpace(params), "q=")
		if !found {
			return true
		}
		v, err := strconv.ParseFloat(q, 64)
		return err == nil && v > 0
	}
	return false
}

// gzipResponse holds the status back until the first write, when the answer's type and the
// size of its first piece decide whether it is compressed.
type gzipResponse struct {
	http.ResponseWriter
	c       *jsonGzip
	status  int  // held back until decided; 0 when none was given yet
	decided bool // the header went out
	gz      *gzip.Writer
}

func (g *gzipResponse) WriteHeader(code int) {
	if g.decided || g.status != 0 {
		return
	}
	if code < 200 { // 1xx answers go out as they come
		g.ResponseWriter.WriteHeader(code)
		return
	}
	g.status = code
}

func (g *gzipResponse) Write(p []byte) (int, error) {
	if !g.decided {
		g.decide(len(p))
	}
	if g.gz != nil {
		return g.gz.Write(p)
	}
	return g.ResponseWriter.Write(p)
}

// decide sends the header, compressing when the answer is JSON of at least minGzip bytes
// (first is the size of its first write) and no one encoded it already.
func (g *gzipResponse) decide(first int) {
	g.decided = true
	if g.status == 0 {
		g.status = http.StatusOK
	}
	h := g.Header()
	if first >= minGzip && g.status != http.StatusNoContent && g.status != http.StatusNotModified &&
		h.Get("Content-Encoding") == "" && strings.HasPrefix(h.Get(headerContentType), contentTypeJSON) {
		h.Set("Content-Encoding", "gzip")
		h.Del("Content-Length")
		h.Add("Vary", "Accept-Encoding")
		if zw, ok := g.c.writers.Get().(*gzip.Writer); ok {
			zw.Reset(g.ResponseWriter)
			g.gz = zw
		} else {
			g.gz = gzip.NewWriter(g.ResponseWriter)
		}
	}
	g.ResponseWriter.WriteHeader(g.status)
}

// Flush sends what is compressed so far (a streamed answer is not held back).
func (g *gzipResponse) Flush() {
	if !g.decided {
		g.decide(0)
	}
	if g.gz != nil {
		_ = g.gz.Flush()
	}
	_ = http.NewResponseController(g.ResponseWriter).Flush()
}

// finish ends the gzip stream, or sends a header a handler set without writing a body.
func (g *gzipResponse) finish() {
	if !g.decided && g.status != 0 {
		g.decide(0)
	}
	if g.gz != nil {
		_ = g.gz.Close()
		g.gz.Reset(nil)
		g.c.writers.Put(g.gz)
		g.gz = nil
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (g *gzipResponse) Unwrap() http.ResponseWriter { return g.ResponseWriter }
