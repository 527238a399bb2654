// Package desktop shows a notification on the person's desktop: through the freedesktop
// Notifications service on the session D-Bus (Linux and the BSDs: GNOME, KDE, dunst, mako,
// …) or osascript's "display notification" on macOS. jean2 chat uses it when a long turn
// ends or a question waits; where there is no desktop (an SSH session, a container, no
// session bus) New says so and the chat falls back to the terminal's own sequences.
package desktop

import (
	"context"
	"time"
)

// Notifier shows notifications until it is closed.
type Notifier interface {
	Notify(ctx context.Context, title, body string) error
	Close() error
}

// sendTimeout bounds one notification: a notification service that does not answer must not
// hold up the chat that rings it.
const sendTimeout = 2 * time.Second

// remote reports whether the process runs in a session from elsewhere (SSH), where the
// machine's desktop is not the person's screen.
func remote(getenv func(string) string) bool {
	return getenv("SSH_CONNECTION") != "" || getenv("SSH_TTY") != ""
}
