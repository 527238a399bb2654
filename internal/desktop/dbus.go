//go:build !darwin && !windows

package desktop

import (
	"context"
	"errors"
	"fmt"
	"html"
	"sync"

	"github.com/godbus/dbus/v5"
)

// The freedesktop Desktop Notifications service (specification 1.2).
const (
	notificationsName = "org.freedesktop.Notifications"
	notificationsPath = "/org/freedesktop/Notifications"
)

// New returns the desktop's notifier, or nil and why there is none: no session bus named
// by DBUS_SESSION_BUS_ADDRESS, or a session from elsewhere (SSH). Nothing is connected
// until the first notification.
func New(getenv func(string) string) (Notifier, string) {
	addr := getenv("DBUS_SESSION_BUS_ADDRESS")
	switch {
	case remote(getenv):
		return nil, "an SSH session: the desktop is not this screen"
	case addr == "":
		return nil, "no session D-Bus (DBUS_SESSION_BUS_ADDRESS is not set)"
	}
	return &busNotifier{addr: addr}, ""
}

// busNotifier sends Notify calls on the session bus at addr, connecting when first needed
// and again after a failure.
type busNotifier struct {
	addr string
	mu   sync.Mutex
	conn *dbus.Conn
}

func (b *busNotifier) Notify(ctx context.Context, title, body string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if b.conn == nil {
		// Not dbus.WithContext(ctx): that would close the connection when this call ends.
		conn, err := dbus.Connect(b.addr)
		if err != nil {
			return fmt.Errorf("desktop notification: connect to the session bus %s: %w", b.addr, err)
		}
		b.conn = conn
	}
	// Notify(app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout).
	// The body may be read as markup (<b>, <a href>…): a session's title in it is escaped.
	call := b.conn.Object(notificationsName, notificationsPath).CallWithContext(ctx, notificationsName+".Notify", 0,
		"jean2", uint32(0), "", title, html.EscapeString(body), []string{}, map[string]dbus.Variant{}, int32(-1))
	if call.Err != nil {
		_ = b.conn.Close()
		b.conn = nil
		var de dbus.Error
		if errors.As(call.Err, &de) && de.Name == "org.freedesktop.DBus.Error.ServiceUnknown" {
			return fmt.Errorf("desktop notification: no notification service on the session bus (%s)", notificationsName)
		}
		return fmt.Errorf("desktop notification: %w", call.Err)
	}
	return nil
}

func (b *busNotifier) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn == nil {
		return nil
	}
	err := b.conn.Close()
	b.conn = nil
	return err
}
