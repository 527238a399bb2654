//go:build !darwin && !windows

package desktop

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// sessionBus starts a private dbus-daemon (as a desktop session has) and returns its address.
func sessionBus(t *testing.T) string {
	t.Helper()
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Skip("dbus-daemon is not installed (scripts/setup installs the dbus-daemon package)")
	}
	cmd := exec.Command(daemon, "--session", "--nofork", "--nopidfile", "--print-address=1", "--address=unix:dir="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dbus-daemon: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	return strings.TrimSpace(addr)
}

// notificationService is a desktop's notification daemon: it records what it is asked to show.
type notificationService struct {
	mu   sync.Mutex
	seen []string // "app|summary|body"
}

func (s *notificationService) Notify(app string, _ uint32, _ string, summary, body string, _ []string, _ map[string]dbus.Variant, _ int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, app+"|"+summary+"|"+body)
	return uint32(len(s.seen)), nil
}

// A notification reaches the desktop's notification service on the session bus with its
// title and body; with no service there, the error names what is missing; over SSH, or
// with no session bus, there is no notifier and New says why.
func TestNotifyThroughTheSessionBus(t *testing.T) {
	addr := sessionBus(t)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	n, why := New(env(map[string]string{"DBUS_SESSION_BUS_ADDRESS": addr}))
	if n == nil {
		t.Fatalf("no notifier: %s", why)
	}
	defer n.Close()
	if err := n.Notify(ctx, "jean2", "nobody listens"); err == nil || !strings.Contains(err.Error(), "no notification service") {
		t.Fatalf("with no notification service: %v", err)
	}

	svc := &notificationService{}
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Export(svc, notificationsPath, notificationsName); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName(notificationsName, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v %v", notificationsName, reply, err)
	}
	for _, body := range []string{"the turn finished (Fix <b>the</b> build)", "a question waits for your answer"} {
		if err := n.Notify(ctx, "jean2", body); err != nil {
			t.Fatalf("notify: %v", err)
		}
	}
	svc.mu.Lock()
	got := strings.Join(svc.seen, "\n")
	svc.mu.Unlock()
	if want := "jean2|jean2|the turn finished (Fix &lt;b&gt;the&lt;/b&gt; build)\njean2|jean2|a question waits for your answer"; got != want {
		t.Fatalf("the service was shown:\n%s\nwant:\n%s", got, want)
	}

	for _, e := range []map[string]string{
		{"DBUS_SESSION_BUS_ADDRESS": addr, "SSH_CONNECTION": "10.0.0.1 5000 10.0.0.2 22"},
		{},
	} {
		if n, why := New(env(e)); n != nil || why == "" {
			t.Errorf("%v: notifier %v, why %q", e, n, why)
		}
	}
}
