package mcpserver

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/jean2/jean2/host"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Overflowing results as resources. A result too long for the model is written whole to the
// session's temporary folder (host.Overflow) and the call's answer carries a preview and
// the path, which an MCP client on another machine cannot open. So each file is offered as
// a resource, jean2://tool-result/<file name>, that any client of this server can list and
// read back (resources/list, resources/read; notifications/resources/list_changed when one
// is added). The name has a random part, so a URI is not guessed from another.
//
// The temporary folder is the worker's to write: the file is read without following any
// link from the temporary root on (readBeneath), so a link a tool planted in its place
// reads nothing of the machine.

// OverflowScheme starts the URI of an overflowing result's file.
const OverflowScheme = "jean2://tool-result/"

// maxOverflowResources is how many files are offered at most; the oldest go first.
const maxOverflowResources = 1000

// maxOverflowRead bounds one resources/read of such a file.
const maxOverflowRead = 64 << 20

// overflowReadLimit is what the file of a result of chars characters may hold: the host
// wrote the text there, at most 4 bytes a character in UTF-8. The worker may write the
// file afterwards; swelled (a sparse file is free to make) it was sent whole, and a file of
// NUL bytes, each sent as \u0000, allocated 3.2 GiB for 48 MiB
// (TestResourceAttackOverflowSwelled).
func overflowReadLimit(chars int) int64 {
	return min(int64(chars)*utf8.UTFMax, maxOverflowRead)
}

// layoutHost is a host that says where its folders are (host.Host does); without it no
// overflow is offered.
type layoutHost interface{ Layout() host.Layout }

// overflowResources is the URIs offered, oldest first.
type overflowResources struct {
	mu   sync.Mutex
	uris []string
}

// offerOverflow offers an outcome's overflow file as a resource.
func (s *Server) offerOverflow(out host.Outcome) {
	lh, ok := s.h.(layoutHost)
	if out.Overflow == nil || !ok {
		return
	}
	root := lh.Layout().Temp
	rel, err := filepath.Rel(root, out.Overflow.Path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		s.log.Warn("an overflowing result outside the temporary folder is not offered", "path", out.Overflow.Path)
		return
	}
	name := filepath.Base(rel)
	uri := OverflowScheme + name
	limit := overflowReadLimit(out.Overflow.Chars)
	mime := "application/json"
	if strings.HasSuffix(name, ".txt") {
		mime = "text/plain"
	}
	s.mcp.AddResource(&mcp.Resource{
		URI: uri, Name: name, MIMEType: mime,
		Title:       fmt.Sprintf("Whole result of %s", out.Tool),
		Description: fmt.Sprintf("The whole result of a call of %s (%d characters); the call's answer held its first %d.", out.Tool, out.Overflow.Chars, host.OverflowPreview),
	}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		data, err := readBeneath(root, rel, limit)
		if err != nil {
			s.log.Info("an overflowing result could not be read back", "uri", uri, "err", err)
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: string(data)}}}, nil
	})
	s.overflows.mu.Lock()
	s.overflows.uris = append(s.overflows.uris, uri)
	var gone []string
	if n := len(s.overflows.uris) - maxOverflowResources; n > 0 {
		gone = append(gone, s.overflows.uris[:n]...)
		s.overflows.uris = append([]string(nil), s.overflows.uris[n:]...)
	}
	s.overflows.mu.Unlock()
	if len(gone) > 0 {
		s.mcp.RemoveResources(gone...)
	}
}
