//go:build darwin

package desktop

import (
	"context"
	"fmt"
	"os/exec"
)

// New returns macOS's notifier (osascript), or nil and why there is none.
func New(getenv func(string) string) (Notifier, string) {
	if remote(getenv) {
		return nil, "an SSH session: the desktop is not this screen"
	}
	path, err := exec.LookPath("osascript")
	if err != nil {
		return nil, "osascript is not on PATH"
	}
	return scriptNotifier{path: path}, ""
}

type scriptNotifier struct{ path string }

// Notify hands the title and body to the script as arguments, never as script text, so
// nothing in them is run as AppleScript.
func (s scriptNotifier) Notify(ctx context.Context, title, body string) error {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, s.path,
		"-e", "on run argv", "-e", "display notification (item 2 of argv) with title (item 1 of argv)", "-e", "end run",
		title, body).CombinedOutput()
	if err != nil {
		return fmt.Errorf("desktop notification: osascript: %w: %s", err, out)
	}
	return nil
}

func (scriptNotifier) Close() error { return nil }
