package install

import (
	"fmt"
	"strings"
)

// Version is a parsed semantic version (semver.org 2.0.0). Numbers are kept as decimal
// strings, so a version with more digits than an int holds still compares correctly.
type Version struct {
	Major, Minor, Patch string
	Pre                 []string // pre-release identifiers: "rc", "1" in 1.0.0-rc.1
	Build               string   // build metadata; ignored by Compare
}

// ParseVersion reads a semantic version; a leading "v" is accepted (v1.2.3).
func ParseVersion(s string) (Version, error) {
	orig := s
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	bad := func(why string) (Version, error) {
		return Version{}, fmt.Errorf("%q is not a semantic version (%s): write one like 1.2.3 or 1.2.3-rc.1", orig, why)
	}
	var v Version
	if core, build, ok := strings.Cut(s, "+"); ok {
		if !validIdents(build, false) {
			return bad("malformed build metadata")
		}
		v.Build, s = build, core
	}
	if core, pre, ok := strings.Cut(s, "-"); ok {
		if !validIdents(pre, true) {
			return bad("malformed pre-release")
		}
		v.Pre, s = strings.Split(pre, "."), core
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return bad("needs major.minor.patch")
	}
	for _, p := range parts {
		if !isNumeric(p) || (len(p) > 1 && p[0] == '0') {
			return bad("major, minor and patch are numbers without leading zeros")
		}
	}
	v.Major, v.Minor, v.Patch = parts[0], parts[1], parts[2]
	return v, nil
}

// String writes the version back in canonical form (no "v").
func (v Version) String() string {
	s := v.Major + "." + v.Minor + "." + v.Patch
	if len(v.Pre) > 0 {
		s += "-" + strings.Join(v.Pre, ".")
	}
	if v.Build != "" {
		s += "+" + v.Build
	}
	return s
}

// Compare orders versions by semver precedence: -1 when v < o, 0 when equal, +1 when
// v > o. Build metadata does not count; a pre-release comes before its release.
func (v Version) Compare(o Version) int {
	for _, pair := range [3][2]string{{v.Major, o.Major}, {v.Minor, o.Minor}, {v.Patch, o.Patch}} {
		if c := compareNumeric(pair[0], pair[1]); c != 0 {
			return c
		}
	}
	switch {
	case len(v.Pre) == 0 && len(o.Pre) == 0:
		return 0
	case len(v.Pre) == 0:
		return 1
	case len(o.Pre) == 0:
		return -1
	}
	for i := 0; i < len(v.Pre) && i < len(o.Pre); i++ {
		if c := compareIdent(v.Pre[i], o.Pre[i]); c != 0 {
			return c
		}
	}
	return compareInt(len(v.Pre), len(o.Pre))
}

// CompareVersions parses and compares two version strings.
func CompareVersions(a, b string) (int, error) {
	va, err := ParseVersion(a)
	if err != nil {
		return 0, err
	}
	vb, err := ParseVersion(b)
	if err != nil {
		return 0, err
	}
	return va.Compare(vb), nil
}

// compareIdent compares pre-release identifiers: numeric ones numerically, others in
// ASCII order, and a numeric one before an alphanumeric one.
func compareIdent(a, b string) int {
	an, bn := isNumeric(a), isNumeric(b)
	switch {
	case an && bn:
		return compareNumeric(a, b)
	case an:
		return -1
	case bn:
		return 1
	}
	return strings.Compare(a, b)
}

// compareNumeric compares decimal strings without leading zeros.
func compareNumeric(a, b string) int {
	if c := compareInt(len(a), len(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func compareInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func isNumeric(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// validIdents checks dot-separated identifiers of [0-9A-Za-z-]; numeric pre-release
// identifiers may not have leading zeros.
func validIdents(s string, pre bool) bool {
	if s == "" {
		return false
	}
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		for i := 0; i < len(id); i++ {
			c := id[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return false
			}
		}
		if pre && isNumeric(id) && len(id) > 1 && id[0] == '0' {
			return false
		}
	}
	return true
}
