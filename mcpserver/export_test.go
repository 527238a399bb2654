package mcpserver

import (
	"fmt"
	"sort"

	"github.com/jean2/jean2/internal/rawio"
)

// FastCallsRunning lists the request ids of the fast calls running on s's connections, so
// tests can tell that a call took the fast path.
func FastCallsRunning(s *Server) []string {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	var ids []string
	for c := range s.conns {
		c.mu.Lock()
		for id := range c.calls {
			ids = append(ids, fmt.Sprint(id.Raw()))
		}
		c.mu.Unlock()
	}
	sort.Strings(ids)
	return ids
}

// FastCallGoroutines is how many goroutines of s run stdio's fast calls or wait for the
// next one.
func FastCallGoroutines(s *Server) int { return int(s.callGoroutines.Load()) }

// StdioPolls sums the empty reads that polled again (rawio.Polls) on s's stdio connections,
// so tests can tell that a session polled for the client's next message.
func StdioPolls(s *Server) int64 {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	var n int64
	for c := range s.conns {
		if sc, ok := c.inner.(*stdioConn); ok {
			n += rawio.Polls(sc.rr)
		}
	}
	return n
}

// HTTPFastServed counts the tools/calls HTTPHandler answered on its fast path: as JSON,
// and over its own SSE stream (httpfast.go).
func HTTPFastServed(s *Server) (asJSON, overSSE int64) {
	s.httpFast.mu.Lock()
	defer s.httpFast.mu.Unlock()
	return s.httpFast.served[0], s.httpFast.served[1]
}

// HTTPStatelessServed counts the stateless tools/calls HTTPHandler answered on its fast
// path: as JSON, and over SSE (httpstateless.go).
func HTTPStatelessServed(s *Server) (asJSON, overSSE int64) {
	s.httpFast.mu.Lock()
	defer s.httpFast.mu.Unlock()
	return s.httpFast.stateless[0], s.httpFast.stateless[1]
}
