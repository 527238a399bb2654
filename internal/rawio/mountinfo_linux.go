//go:build linux

package rawio

import (
	"bytes"
	"strconv"
	"strings"
)

// Mount is one line of /proc/PID/mountinfo: where a file system is mounted, its type and
// its source.
type Mount struct {
	Point, Type, Source string
}

// ParseMountinfo reads the lines of /proc/PID/mountinfo ("id parent major:minor root
// mountpoint options [optional…] - fstype source superoptions"), undoing the kernel's octal
// escapes (\040 for a space). A line it cannot read is left out.
func ParseMountinfo(data []byte) []Mount {
	var out []Mount
	for line := range bytes.Lines(data) {
		fields := strings.Fields(string(line))
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || len(fields) < sep+3 {
			continue
		}
		out = append(out, Mount{
			Point:  unescapeMountinfo(fields[4]),
			Type:   fields[sep+1],
			Source: unescapeMountinfo(fields[sep+2]),
		})
	}
	return out
}

// unescapeMountinfo undoes mountinfo's octal escapes.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
