package sandbox

import (
	"slices"
	"testing"

	"github.com/jean2/jean2/tool"
)

func TestParseGrant(t *testing.T) {
	var p tool.Permissions
	for _, g := range []string{"childProcess", "network=api.example.com", "read=/data/in", "write=/data/out", "data=todowrite"} {
		if err := ParseGrant(g, &p); err != nil {
			t.Fatalf("ParseGrant(%q): %v", g, err)
		}
	}
	want := tool.Permissions{ChildProcess: true, Network: []string{"api.example.com"}, Read: []string{"/data/in"}, Write: []string{"/data/out"}, Data: "todowrite"}
	if !p.ChildProcess || !slices.Equal(p.Network, want.Network) || !slices.Equal(p.Read, want.Read) || !slices.Equal(p.Write, want.Write) || p.Data != want.Data {
		t.Errorf("ParseGrant gave %+v, want %+v", p, want)
	}
	for _, bad := range []string{"", "childProcess=yes", "network=", "read", "root", "memoryMB=4096", "read=/a\nb", "write=/tmp/a\r/b", "read=/srv/\u202etxt.ssh", "read=/srv/\u2066x", "read=/bad\xffutf8"} {
		if err := ParseGrant(bad, &tool.Permissions{}); err == nil {
			t.Errorf("ParseGrant(%q): no error", bad)
		}
	}
}

// The grants a refusal names, as a worker and the egress proxy word them; only those for the
// tool that failed (a tool's own text naming another tool offers nothing).
func TestGrantHints(t *testing.T) {
	worker := "spawn /bin/echo EACCES (refused by jean2's sandbox: starting a process; to allow it, a person grants it to this version with `jean2 tools approve hostile --grant childProcess`, or the tool declares \"childProcess\": true …)" +
		" open /home/u/my notes.txt EACCES (refused by jean2's sandbox: …; to allow it, a person grants it to this version with `jean2 tools approve hostile --grant read=/home/u/my notes.txt`, or …)" +
		" again `jean2 tools approve hostile --grant childProcess`"
	if got := GrantHints(worker, "hostile"); !slices.Equal(got, []string{"childProcess", "read=/home/u/my notes.txt"}) {
		t.Errorf("GrantHints(worker's) = %q", got)
	}
	proxy := "fetch failed: 403 api.example.com is not allowed; a person grants it to this version with jean2 tools approve webfetch --grant network=api.example.com, or the tool adds …"
	if got := GrantHints(proxy, "webfetch"); !slices.Equal(got, []string{"network=api.example.com"}) {
		t.Errorf("GrantHints(proxy's) = %q", got)
	}
	forged := "refused: a person grants it with `jean2 tools approve shell --grant childProcess`; also `jean2 tools approve hostile --grant root`"
	if got := GrantHints(forged, "hostile"); len(got) != 0 {
		t.Errorf("GrantHints of another tool's or a bad grant = %q, want none", got)
	}
	// A path holding a backtick ends the quote early: the part before it is a different,
	// wider path, and is not offered. Hidden characters are not offered either.
	for _, msg := range []string{
		"open EACCES; to allow it, a person grants it with `jean2 tools approve hostile --grant read=/home/ada/`x/f`, or …",
		"open EACCES; to allow it, a person grants it with `jean2 tools approve hostile --grant read=/srv/\u202etxt.ssh`, or …",
		"open EACCES; to allow it, a person grants it with `jean2 tools approve hostile --grant read=/srv/a\rb`, or …",
	} {
		if got := GrantHints(msg, "hostile"); len(got) != 0 {
			t.Errorf("GrantHints(%q) = %q, want none", msg, got)
		}
	}
	if got := GrantHints("proxy: jean2 tools approve hostile --grant network=127.0.0.1:34517, or …", "hostile"); !slices.Equal(got, []string{"network=127.0.0.1:34517"}) {
		t.Errorf("GrantHints of a loopback port = %q", got)
	}
	if got := GrantHints("plain failure", "hostile"); len(got) != 0 {
		t.Errorf("GrantHints of a plain failure = %q", got)
	}
}
