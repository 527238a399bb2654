package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/tool"
)

// A tool written for a host without a sandbox declares nothing. Its refusals say how a
// person grants the power; a grant holds at the tool's next call, is reported with the
// tool's permissions, reaches only that power, and is taken back with --revoke.
func TestGrantUndeclaredPowers(t *testing.T) {
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	outside := filepath.Join(t.TempDir(), "notes.txt")
	write(t, outside, "outside the workspace")

	r, out := sf.try(t, map[string]any{"op": "spawn", "path": "/bin/echo", "args": []string{"hi"}})
	denied(t, "spawn before a grant", r, out, "EACCES", "EPERM")
	if !strings.Contains(r.Message, "jean2 tools approve hostile --grant childProcess") {
		t.Fatalf("the refusal does not say how to grant it: %s", r.Message)
	}
	// What the web client's Allow button and the chat's /grant offer from it.
	if g := sandbox.GrantHints(r.Message, "hostile"); !slices.Equal(g, []string{"childProcess"}) {
		t.Fatalf("GrantHints of the refusal = %q; want childProcess (%s)", g, r.Message)
	}
	r, out = sf.try(t, map[string]any{"op": "read", "path": outside})
	denied(t, "read outside before a grant", r, out, "EACCES")
	if !strings.Contains(r.Message, "--grant read="+outside) {
		t.Fatalf("the refusal does not say how to grant the read: %s", r.Message)
	}
	if g := sandbox.GrantHints(r.Message, "hostile"); !slices.Equal(g, []string{"read=" + outside}) {
		t.Fatalf("GrantHints of the read's refusal = %q (%s)", g, r.Message)
	}

	all, err := sf.h.GrantPermissions("hostile", tool.Permissions{ChildProcess: true})
	if err != nil || !all.ChildProcess {
		t.Fatalf("grant: %+v %v", all, err)
	}
	if r, out = sf.try(t, map[string]any{"op": "spawn", "path": "/bin/echo", "args": []string{"hi"}}); !r.OK || !strings.Contains(string(r.Value), "hi") {
		t.Fatalf("spawn after the grant: %+v %s", r, out.Result.Error)
	}
	// The grant is that power only: the file outside stays closed.
	r, out = sf.try(t, map[string]any{"op": "read", "path": outside})
	denied(t, "read outside with only childProcess granted", r, out, "EACCES")

	if _, err := sf.h.GrantPermissions("hostile", tool.Permissions{Read: []string{outside}}); err != nil {
		t.Fatal(err)
	}
	if r, out = sf.try(t, map[string]any{"op": "read", "path": outside}); !r.OK || !strings.Contains(string(r.Value), "outside the workspace") {
		t.Fatalf("read after the grant: %+v %s", r, out.Result.Error)
	}
	st, _ := sf.h.Permissions("hostile")
	if st.Granted == nil || !st.Granted.ChildProcess || len(st.Granted.Read) != 1 || !st.Approved || st.NeedsApproval() {
		t.Fatalf("permissions after the grants: %+v", st)
	}
	// Protected places stay closed whatever is granted.
	if _, err := sf.h.GrantPermissions("hostile", tool.Permissions{Read: []string{sf.secretFile}}); err != nil {
		t.Fatal(err)
	}
	r, out = sf.try(t, map[string]any{"op": "read", "path": sf.secretFile})
	denied(t, "read of $JEAN2_HOME/.env granted", r, out, "EACCES")

	if err := sf.h.RevokePermissions("hostile"); err != nil {
		t.Fatal(err)
	}
	r, out = sf.try(t, map[string]any{"op": "spawn", "path": "/bin/echo", "args": []string{"hi"}})
	denied(t, "spawn after the revocation", r, out, "EACCES", "EPERM")
	if st, _ := sf.h.Permissions("hostile"); st.Granted != nil {
		t.Fatalf("grants after the revocation: %+v", st.Granted)
	}
}

// A grant holds for the version it was given to: an edited tool runs without it.
func TestGrantIsPerVersion(t *testing.T) {
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	if _, err := sf.h.GrantPermissions("hostile", tool.Permissions{ChildProcess: true}); err != nil {
		t.Fatal(err)
	}
	if r, out := sf.try(t, map[string]any{"op": "spawn", "path": "/bin/echo", "args": []string{"hi"}}); !r.OK {
		t.Fatalf("spawn with the grant: %+v %s", r, out.Result.Error)
	}
	src := filepath.Join(sf.layout.Tools, "hostile", "tool.js")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, append(data, []byte("\n// edited\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sf.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, out := sf.try(t, map[string]any{"op": "spawn", "path": "/bin/echo", "args": []string{"hi"}})
	denied(t, "spawn by the edited version", r, out, "EACCES", "EPERM")
}

func TestGrantRefusesWhatCannotBeGranted(t *testing.T) {
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	for _, c := range []struct {
		p    tool.Permissions
		want string
	}{
		{tool.Permissions{}, "nothing to grant"},
		{tool.Permissions{MemoryMB: 4096}, "memory cap is not granted"},
		{tool.Permissions{Network: []string{"http://bad host/"}}, "network"},
		{tool.Permissions{Read: []string{""}}, "not valid"},
	} {
		if _, err := sf.h.GrantPermissions("hostile", c.p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("grant %+v: %v; want %q", c.p, err, c.want)
		}
	}
	if _, err := sf.h.GrantPermissions("read-file", tool.Permissions{ChildProcess: true}); err == nil {
		t.Errorf("a grant to a built-in was accepted")
	}
}

// A network grant opens the host at the egress proxy at once (the proxy reads the grant at
// each connection), and that host only.
func TestGrantNetworkHost(t *testing.T) {
	nf := newNetFixture(t, sandbox.ModeLandlock)
	nf.addTool("netnone", map[string]string{"package.json": pkgJSON, "tool.js": netToolSource("netnone", "")})
	if err := nf.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := nf.try(t, "netnone", map[string]any{"op": "fetch", "url": nf.target.URL + "/"})
	noNetwork(t, "fetch before a grant", r)
	_, port := hostPort(t, nf.target)
	if want := "jean2 tools approve netnone --grant network=127.0.0.1"; !strings.Contains(r.Message, want) {
		t.Fatalf("the refusal does not say how to grant the host (%q): %s", want, r.Message)
	}
	if _, err := nf.h.GrantPermissions("netnone", tool.Permissions{Network: []string{fmt.Sprintf("127.0.0.1:%d", port)}}); err != nil {
		t.Fatal(err)
	}
	if r := nf.try(t, "netnone", map[string]any{"op": "fetch", "url": nf.target.URL + "/"}); !r.OK || !strings.Contains(string(r.Value), targetBody) {
		t.Fatalf("fetch after the grant: %+v", r)
	}
	noNetwork(t, "fetch of another port after the grant", nf.try(t, "netnone", map[string]any{"op": "fetch", "url": nf.api.URL + "/"}))
}
