package harness

import "sync"

// learnedWindows holds, for the harness's life, the context windows that providers'
// refusals taught it (provider and model → tokens, in the harness's estimate). A model
// whose window is not configured refuses every request past it; without this each
// refusal only compacted that session, which then grew back to the refusal a few turns
// later, and every such turn paid a refused request. Knowing the window, later requests
// are compacted before they are sent, as with a configured window.
type learnedWindows struct {
	mu sync.Mutex
	m  map[string]int
}

func windowKey(providerName, model string) string { return providerName + "\x00" + model }

// get is the window learned for the model, 0 when none.
func (l *learnedWindows) get(providerName, model string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[windowKey(providerName, model)]
}

// learn records that the model's window is at most tokens; it returns the window now
// known (it only ever shrinks).
func (l *learnedWindows) learn(providerName, model string, tokens int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]int{}
	}
	k := windowKey(providerName, model)
	if old := l.m[k]; old > 0 && old <= tokens {
		return old
	}
	l.m[k] = tokens
	return tokens
}
