// Package egress is the host's proxy for the network of tool workers. A worker has no
// network of its own (sandbox.NetNS); HTTP(S)_PROXY leads it here, and the proxy connects
// only to what the tool declares in "permissions": {"network": [...]} and a person approved.
// The decision is made on the address the proxy itself resolves and connects to, so a name
// that resolves to a loopback or private address (DNS rebinding) does not open the machine.
package egress

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Rule is one entry of a network declaration:
//
//	"api.github.com"          that name, any port
//	"api.github.com:443"      that name, port 443
//	"*.example.com[:443]"     every name under example.com (not example.com itself)
//	"*"                       every name (their public addresses only)
//	"127.0.0.1[:8080]"        an address; "[::1]:8080" with a port, "::1" without
//	"10.0.0.0/8[:443]"        a range of addresses
//	"localhost[:8080]"        the loopback addresses, 127.0.0.0/8 and ::1
//
// A name grants the public addresses it resolves to. Loopback, private, link-local and
// unique-local addresses, and this machine's own, are reached only through an address or
// range entry (or localhost) that covers them: a declared name that resolves to 127.0.0.1
// is refused.
type Rule struct {
	Entry  string         // as declared
	Name   string         // lower case, without a leading "*."; "" for an address rule or "*"
	Suffix bool           // "*." form: names beneath Name
	Any    bool           // "*"
	Prefix netip.Prefix   // address rules
	Local  []netip.Prefix // localhost
	Port   int            // 0 for any
}

// ParseRules reads a declaration; the error names the entry and says how to write it.
func ParseRules(entries []string) ([]Rule, error) {
	out := make([]Rule, 0, len(entries))
	for _, e := range entries {
		r, err := ParseRule(e)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// ParseRule reads one entry.
func ParseRule(entry string) (Rule, error) {
	bad := func(why string) (Rule, error) {
		return Rule{}, fmt.Errorf("network entry %q %s: write a host name (api.github.com, *.example.com), an address (127.0.0.1, [::1]:8080) or a range (10.0.0.0/8), each with :port if only one port is meant", entry, why)
	}
	s := strings.TrimSpace(entry)
	if s == "" || strings.ContainsAny(s, " \t?#@\\") {
		return bad("is not valid")
	}
	if strings.Contains(s, "://") {
		return bad("is a URL")
	}
	r := Rule{Entry: entry}
	hostPart := s
	// A port is split off a bracketed IPv6 address, a range, or anything with one colon.
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.Index(s, "]")
		if end < 0 {
			return bad("has no closing ]")
		}
		hostPart = s[1:end]
		if rest := s[end+1:]; rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return bad("is not valid")
			}
			p, err := parsePort(rest[1:])
			if err != nil {
				return bad(err.Error())
			}
			r.Port = p
		}
	case strings.Count(s, ":") == 1 || (strings.Contains(s, "/") && strings.LastIndex(s, ":") > strings.Index(s, "/")):
		i := strings.LastIndex(s, ":")
		p, err := parsePort(s[i+1:])
		if err != nil {
			return bad(err.Error())
		}
		hostPart, r.Port = s[:i], p
	}
	if strings.Contains(hostPart, "/") {
		pfx, err := netip.ParsePrefix(hostPart)
		if err != nil {
			return bad("is not a valid range")
		}
		r.Prefix = pfx.Masked()
		return r, nil
	}
	if a, err := netip.ParseAddr(hostPart); err == nil {
		a = a.Unmap()
		r.Prefix = netip.PrefixFrom(a, a.BitLen())
		return r, nil
	}
	name := strings.TrimSuffix(strings.ToLower(hostPart), ".")
	switch {
	case name == "*" && hostPart == "*":
		r.Any = true
		return r, nil
	case strings.HasPrefix(name, "*."):
		r.Suffix, name = true, name[2:]
	}
	if !validName(name) {
		return bad("is not a host name")
	}
	r.Name = name
	if name == "localhost" && !r.Suffix {
		r.Local = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	}
	return r, nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("has port %q, not a number from 1 to 65535", s)
	}
	return p, nil
}

func validName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

func (r Rule) portOK(port int) bool { return r.Port == 0 || r.Port == port }

// matchesName reports whether the rule grants the name (lower case, no trailing dot).
func (r Rule) matchesName(name string, port int) bool {
	if !r.portOK(port) {
		return false
	}
	switch {
	case r.Any:
		return true
	case r.Suffix:
		return strings.HasSuffix(name, "."+r.Name)
	case r.Name != "":
		return name == r.Name
	}
	return false
}

// coversAddr reports whether the rule grants the address itself (an address or range
// entry, or localhost).
func (r Rule) coversAddr(a netip.Addr, port int) bool {
	if !r.portOK(port) {
		return false
	}
	if r.Prefix.IsValid() && r.Prefix.Contains(a) {
		return true
	}
	for _, p := range r.Local {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// special are the ranges a name never grants: the machine itself and the networks around
// it (and addresses that are no one's).
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("::/128"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64: may embed 127.0.0.1 or a private address
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2002::/16"),      // 6to4: embeds an IPv4 address
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("ff00::/8"),
}

// Special says what an address is when a name never grants it ("a loopback address", "an
// address of this machine" (one of own), "a reserved address" …), "" when it is public: the
// judgement the proxy makes, for those who ask a person about an address.
func Special(a netip.Addr, own []netip.Addr) string { return kind(a, own) }

// kind says why an address is special, "" when it is public.
func kind(a netip.Addr, own []netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsPrivate():
		return "a private address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	}
	for _, o := range own {
		if o == a {
			return "an address of this machine"
		}
	}
	for _, p := range special {
		if p.Contains(a) {
			return "a reserved address"
		}
	}
	return ""
}
