package server

import (
	"context"
	"net/http"
	"time"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/mcpclient"
	"github.com/jean2/jean2/store"
)

// resourceRef names a resource of an imported MCP server attached to a message: the
// server's name in mcp.json, the workspace whose .jean2/mcp.json names it ("" for
// $JEAN2_HOME/mcp.json; else it must be the session's), and the resource's URI.
type resourceRef struct {
	Server      string `json:"server"`
	WorkspaceID string `json:"workspaceId"`
	URI         string `json:"uri"`
}

// resourceReadWait bounds the reading of one attached resource; the person waits for it.
const resourceReadWait = 30 * time.Second

// readResources reads the resources a message attaches through jean2's MCP client, now,
// so the message keeps them as they were when sent. Each content of a read becomes one
// resource (a read of a folder may give several). Nothing is read past the first ref that
// fails, and the error names it: a server that is not configured (400), not connected
// (409), a read that failed (502), or contents over store.MaxResourceBytes (413).
func (s *Server) readResources(ctx context.Context, ses store.Session, refs []resourceRef) ([]harness.Resource, error) {
	if len(refs) > harness.MaxResources {
		return nil, badRequest("the message attaches %d resources; attach at most %d", len(refs), harness.MaxResources)
	}
	if len(refs) == 0 {
		return nil, nil
	}
	servers, wsOf := s.mcpClientServers()
	var out []harness.Resource
	for i, ref := range refs {
		if ref.Server == "" || ref.URI == "" {
			return nil, badRequest("resources[%d] must name the MCP server and the resource's uri ({\"server\",\"uri\"})", i)
		}
		if ref.WorkspaceID != "" && ref.WorkspaceID != ses.WorkspaceID {
			return nil, badRequest("resources[%d]: MCP server %s of workspace %s is not one this session (of workspace %s) can read", i, ref.Server, ref.WorkspaceID, ses.WorkspaceID)
		}
		var ms *mcpclient.Server
		for _, cand := range servers {
			if cand.Config().Name == ref.Server && wsOf[cand] == ref.WorkspaceID {
				ms = cand
			}
		}
		if ms == nil {
			where := "$JEAN2_HOME/mcp.json"
			if ref.WorkspaceID != "" {
				where = "workspace " + ref.WorkspaceID + "'s trusted .jean2/mcp.json"
			}
			return nil, badRequest("resources[%d]: no MCP server %q in %s, so %s cannot be read; was it removed? Pick the resource again from a listed server", i, ref.Server, where, ref.URI)
		}
		if state, _ := ms.Status(); state != mcpclient.StateConnected {
			return nil, errorf(http.StatusConflict, codeConflict, "resources[%d]: MCP server %s is %s, so %s cannot be read: connect it first, or send the message without it", i, ref.Server, state, ref.URI)
		}
		rctx, cancel := context.WithTimeout(ctx, resourceReadWait)
		res, err := ms.ReadResource(rctx, ref.URI)
		cancel()
		if err != nil {
			return nil, errorf(http.StatusBadGateway, codeUnavailable, "resources[%d]: %v; your message was not sent", i, err)
		}
		if len(res.Contents) == 0 {
			return nil, errorf(http.StatusBadGateway, codeUnavailable, "resources[%d]: MCP server %s gave no contents for %s; your message was not sent", i, ref.Server, ref.URI)
		}
		for _, c := range res.Contents {
			r := harness.Resource{ResourceInfo: store.ResourceInfo{Server: ref.Server, WorkspaceID: ref.WorkspaceID, URI: c.URI}, MimeType: c.MIMEType}
			if r.URI == "" {
				r.URI = ref.URI
			}
			size := len(c.Text)
			if c.Blob != nil {
				r.Blob, size = c.Blob, len(c.Blob)
			} else {
				r.Text = c.Text
			}
			if size > store.MaxResourceBytes {
				return nil, errorf(http.StatusRequestEntityTooLarge, codeTooLarge,
					"resources[%d]: %s of MCP server %s is %d bytes, more than the %d (%d MiB) a message may carry; attach a smaller resource",
					i, r.URI, ref.Server, size, store.MaxResourceBytes, store.MaxResourceBytes>>20)
			}
			out = append(out, r)
		}
	}
	if len(out) > harness.MaxResources {
		return nil, badRequest("the resources attached hold %d contents in all; attach at most %d", len(out), harness.MaxResources)
	}
	return out, nil
}
