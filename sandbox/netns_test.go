//go:build linux

package sandbox

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func needNetNS(t testing.TB) {
	t.Helper()
	if err := NetNSAvailable(); err != nil {
		t.Skipf("network namespaces are not available here: %v", err)
	}
}

// TestNetNSHoldsTheProgram: a program launched into a worker namespace reaches neither a
// server on the host's loopback nor anything else, only the namespace's own listener.
func TestNetNSHoldsTheProgram(t *testing.T) {
	needNetNS(t)
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl")
	}
	outside, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()
	go serveLine(outside, "outside")

	// Without the namespace the program reaches the host's loopback (what a worker could do).
	url := "http://" + outside.Addr().String() + "/"
	if out, _, code := launch(t, Spec{}, curl, "-s", "--max-time", "5", "--http0.9", url); code != 0 || !strings.Contains(out, "outside") {
		t.Fatalf("without a namespace: exit %d, %q", code, out)
	}

	ns, err := NewNetNS(ProxyPort)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	go serveLine(ns.Listener, "inside")
	out, errOut, code := launch(t, Spec{NetNS: ns.Path()}, curl, "-sS", "--max-time", "5", "--http0.9", url)
	if code == 0 || strings.Contains(out, "outside") {
		t.Fatalf("in the namespace the host's loopback answered: exit %d, %q", code, out)
	}
	t.Logf("host loopback from the namespace: exit %d %s", code, strings.TrimSpace(errOut))
	out, errOut, code = launch(t, Spec{NetNS: ns.Path()}, curl, "-sS", "--max-time", "5", "--http0.9", fmt.Sprintf("http://127.0.0.1:%d/", ProxyPort))
	if code != 0 || !strings.Contains(out, "inside") {
		t.Fatalf("the namespace's own listener: exit %d, %q %s", code, out, errOut)
	}
}

func serveLine(l net.Listener, line string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			buf := make([]byte, 1024)
			_, _ = c.Read(buf)
			_, _ = io.WriteString(c, line+"\n")
		}()
	}
}

func BenchmarkNewNetNS(b *testing.B) {
	needNetNS(b)
	for b.Loop() {
		ns, err := NewNetNS(ProxyPort)
		if err != nil {
			b.Fatal(err)
		}
		ns.Close()
	}
}

// BenchmarkLaunchNetNS is BenchmarkLaunch's landlock case with the worker moved into a
// network namespace (made once, as a pool does) and refused UNIX sockets: what isolation
// from the network adds to each worker start.
//
//	go test ./sandbox -run XXX -bench 'Launch' -benchtime 100x
func BenchmarkLaunchNetNS(b *testing.B) {
	needNetNS(b)
	needLandlock(b)
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("no node")
	}
	truePath, _ := exec.LookPath("true")
	dir := b.TempDir()
	ns, err := NewNetNS(ProxyPort)
	if err != nil {
		b.Fatal(err)
	}
	defer ns.Close()
	for _, prog := range []struct {
		name string
		path string
		args []string
	}{{"true", truePath, nil}, {"node", node, []string{"-e", "0"}}} {
		plan := Plan{Program: prog.path, RuntimeRoot: RuntimeRoot(prog.path, ""), ReadOnly: []string{dir}, ReadWrite: []string{dir}}
		for _, netns := range []string{"", ns.Path()} {
			name := prog.name + "/landlock"
			if netns != "" {
				name += "+netns"
			}
			b.Run(name, func(b *testing.B) {
				path, args, err := Command(os.Args[0], Spec{Landlock: true, Rules: plan.Rules(), DataMB: 512, NetNS: netns}, prog.path, prog.args)
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					cmd := exec.Command(path, args...)
					cmd.Env = []string{"PATH=/usr/bin:/bin"}
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("%v: %s", err, out)
					}
				}
			})
		}
	}
}
