package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jean2/jean2/chat"
)

// JEAN2_CHAT_NOTIFY chooses how jean2 chat notifies: unset takes the desktop when there is
// a session bus and the chat is not over SSH; "desktop" without one says why and uses the
// terminal; "terminal" never uses the desktop; "off" nothing; another word is refused.
func TestChatNotificationSetting(t *testing.T) {
	try := func(vars map[string]string) (chat.Options, string, error) {
		var errOut bytes.Buffer
		e := env{stdout: &bytes.Buffer{}, stderr: &errOut, getenv: func(k string) string { return vars[k] }}
		var o chat.Options
		closeFn, err := chatNotifications(e, &o)
		if closeFn != nil {
			closeFn()
		}
		return o, errOut.String(), err
	}
	bus := "unix:path=/nonexistent/bus" // nothing connects until the first notification
	if o, _, err := try(map[string]string{"DBUS_SESSION_BUS_ADDRESS": bus}); err != nil || o.Desktop == nil {
		t.Errorf("unset, with a session bus: desktop %v, %v", o.Desktop, err)
	}
	if o, _, _ := try(map[string]string{"DBUS_SESSION_BUS_ADDRESS": bus, "SSH_TTY": "/dev/pts/1"}); o.Desktop != nil {
		t.Error("over SSH the desktop was used")
	}
	if o, said, _ := try(map[string]string{"JEAN2_CHAT_NOTIFY": "desktop"}); o.Desktop != nil || !strings.Contains(said, "no session D-Bus") {
		t.Errorf("desktop without a bus: %v, said %q", o.Desktop, said)
	}
	for _, mode := range []string{"terminal", "off"} {
		if o, _, err := try(map[string]string{"JEAN2_CHAT_NOTIFY": mode, "DBUS_SESSION_BUS_ADDRESS": bus}); err != nil || o.Desktop != nil {
			t.Errorf("%s: desktop %v, %v", mode, o.Desktop, err)
		}
	}
	if _, _, err := try(map[string]string{"JEAN2_CHAT_NOTIFY": "loud"}); err == nil || !strings.Contains(err.Error(), "terminal, desktop or off") {
		t.Errorf("a wrong word: %v", err)
	}
}
