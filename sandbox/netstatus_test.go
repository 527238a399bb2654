package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/jean2/jean2/tool"
)

// TestChooseRequire: the require mode runs workers only with Landlock and the network
// isolation both.
func TestChooseRequire(t *testing.T) {
	if m, err := ParseMode("require"); m != ModeRequire || err != nil {
		t.Fatalf("%q %v", m, err)
	}
	cases := []struct {
		abi      int
		launcher string
		netns    bool
		want     Mechanism
		err      string
	}{
		{7, "/jean2", true, Landlock, ""},
		{7, "/jean2", false, "", "cannot be isolated from the network: unshare: EPERM"},
		{0, "/jean2", true, "", "Landlock is not available"},
		{7, "", true, "", "no launcher"},
	}
	for _, c := range cases {
		st := Status{Mode: ModeRequire, LandlockABI: c.abi, Launcher: c.launcher, NetNS: c.netns}
		if !c.netns {
			st.NetNSError = "unshare: EPERM"
		}
		for _, kind := range []string{"node", "bun", "go"} {
			got, err := st.Choose(kind)
			if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Errorf("%+v %s: got %q %v, want %q %q", st, kind, got, err, c.want, c.err)
			}
		}
	}
	// Auto runs without the isolation and says so.
	st := Status{Mode: ModeAuto, LandlockABI: 7, Launcher: "/jean2", NetNSError: "unshare: EPERM"}
	if m, err := st.Choose("node"); m != Landlock || err != nil || !strings.Contains(st.Summary(), "network not isolated (unshare: EPERM)") {
		t.Fatalf("auto without network isolation: %q %v %q", m, err, st.Summary())
	}
}

// TestNetworkDigest: network entries are part of the approval key, in any order; a
// declaration without them keeps the digest it had before they existed.
func TestNetworkDigest(t *testing.T) {
	// What the digest was before network entries existed: of the JSON of read, write and
	// childProcess alone.
	sum := sha256.Sum256([]byte(`{"read":["/a"],"childProcess":true}`))
	if got := PermissionsDigest(tool.Permissions{Read: []string{"/a"}, ChildProcess: true}); got != hex.EncodeToString(sum[:16]) {
		t.Fatalf("the digest of a declaration without network changed: %s", got)
	}
	a := tool.Permissions{Network: []string{"api.github.com", "*.example.com:443"}}
	b := tool.Permissions{Network: []string{"*.example.com:443", "api.github.com"}}
	c := tool.Permissions{Network: []string{"api.github.com", "*.example.com:443", "127.0.0.1:8080"}}
	if PermissionsDigest(a) != PermissionsDigest(b) {
		t.Fatal("the order of network entries changed the digest")
	}
	if PermissionsDigest(a) == PermissionsDigest(c) {
		t.Fatal("a widened network list kept the digest")
	}
	if !Declares(&a) || !strings.Contains(DescribePermissions(&a), "connect to api.github.com, *.example.com:443") {
		t.Fatalf("declaration of network: %v %q", Declares(&a), DescribePermissions(&a))
	}
}
