//go:build windows

package desktop

// New: jean2 has no Windows desktop notifier; Windows Terminal shows the chat's OSC 9.
func New(func(string) string) (Notifier, string) {
	return nil, "no desktop notifier on Windows (Windows Terminal shows the terminal's own)"
}
