package install

import (
	"strings"
	"testing"
)

func TestCompareVersions(t *testing.T) {
	// Each row: a, b, sign of Compare(a, b).
	cases := []struct {
		a, b string
		want int
	}{
		{"1.0.0", "1.0.0", 0},
		{"1.0.0", "2.0.0", -1},
		{"2.0.0", "2.1.0", -1},
		{"2.1.0", "2.1.1", -1},
		{"1.10.0", "1.9.0", 1}, // numeric, not lexical
		{"v1.2.3", "1.2.3", 0},
		{"1.0.0+build.1", "1.0.0+build.2", 0}, // build metadata does not count
		{"1.0.0-alpha", "1.0.0", -1},          // a pre-release comes before its release
		{"1.0.0", "1.0.0-rc.1", 1},
		// The ordering example of semver.org §11.
		{"1.0.0-alpha", "1.0.0-alpha.1", -1},
		{"1.0.0-alpha.1", "1.0.0-alpha.beta", -1},
		{"1.0.0-alpha.beta", "1.0.0-beta", -1},
		{"1.0.0-beta", "1.0.0-beta.2", -1},
		{"1.0.0-beta.2", "1.0.0-beta.11", -1},
		{"1.0.0-beta.11", "1.0.0-rc.1", -1},
		{"1.0.0-rc.1", "1.0.0", -1},
		{"1.0.0-1", "1.0.0-alpha", -1}, // numeric before alphanumeric
		{"1.0.0-rc.1", "1.0.0-rc.1", 0},
		{"1.0.0-RC.1", "1.0.0-rc.1", -1}, // ASCII order
		{"99999999999999999999999.0.0", "99999999999999999999998.0.0", 1},
		{"0.0.1", "0.0.0", 1},
	}
	for _, c := range cases {
		got, err := CompareVersions(c.a, c.b)
		if err != nil || got != c.want {
			t.Errorf("Compare(%s, %s) = %d, %v; want %d", c.a, c.b, got, err, c.want)
		}
		back, err := CompareVersions(c.b, c.a)
		if err != nil || back != -c.want {
			t.Errorf("Compare(%s, %s) = %d; want %d (antisymmetry)", c.b, c.a, back, -c.want)
		}
	}
}

func TestParseVersionRefusesMalformed(t *testing.T) {
	for _, s := range []string{"", "1", "1.2", "1.2.3.4", "01.2.3", "1.02.3", "1.2.3-", "1.2.3-01", "1.2.3-a..b", "1.2.3+", "1.2.3-a_b", "x.y.z", "latest", "1.2.-3"} {
		if _, err := ParseVersion(s); err == nil || !strings.Contains(err.Error(), "not a semantic version") {
			t.Errorf("ParseVersion(%q) = %v; want an error", s, err)
		}
	}
	v, err := ParseVersion("v1.2.3-rc.1+sha.abc")
	if err != nil || v.String() != "1.2.3-rc.1+sha.abc" {
		t.Fatalf("%v %v", v, err)
	}
}
