package harness

import "github.com/jean2/jean2/store"

// KeptTranscript is the transcript kept in memory for the session's next turn; nil when
// none is kept.
func (h *Harness) KeptTranscript(sessionID string) []store.Message {
	h.hist.mu.Lock()
	defer h.hist.mu.Unlock()
	if e := h.hist.entries[sessionID]; e != nil {
		return e.msgs
	}
	return nil
}

// ForgetTranscripts drops the kept transcripts, as a restart does: the next turns read
// theirs from the store.
func (h *Harness) ForgetTranscripts() {
	h.hist.mu.Lock()
	defer h.hist.mu.Unlock()
	h.hist.entries, h.hist.size = nil, 0
}
