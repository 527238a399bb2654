package mcpserver

import (
	"fmt"
	"sort"
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
