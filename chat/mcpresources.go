package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/jean2/jean2/internal/termtext"
	"github.com/jean2/jean2/store"
)

// attachment is a resource of an imported MCP server attached to the next message
// (/attach): the server reads it when the message is sent.
type attachment struct {
	Server      string `json:"server"`
	WorkspaceID string `json:"workspaceId,omitempty"`
	URI         string `json:"uri"`
}

// mcpServer is a server of GET /api/mcp/servers, as far as /attach needs it.
type mcpServer struct {
	Name        string `json:"name"`
	WorkspaceID string `json:"workspaceId"`
	State       string `json:"state"`
}

// attachable lists the MCP servers this session can read: $JEAN2_HOME/mcp.json's and its
// own workspace's.
func (u *chatUI) attachable(ctx context.Context) ([]mcpServer, error) {
	var res struct {
		Servers []mcpServer `json:"servers"`
	}
	if err := u.api.Call(ctx, http.MethodGet, "/api/mcp/servers", nil, &res); err != nil {
		return nil, err
	}
	var out []mcpServer
	for _, s := range res.Servers {
		if s.WorkspaceID == "" || s.WorkspaceID == u.ws.ID {
			out = append(out, s)
		}
	}
	return out, nil
}

// attach runs /attach: with SERVER URI it attaches that resource to the next message;
// alone it lists the connected servers' resources and what is attached.
func (u *chatUI) attach(ctx context.Context, arg string) {
	fields := strings.Fields(arg)
	servers, err := u.attachable(ctx)
	if err != nil {
		u.println(u.st.red("Could not list the MCP servers: " + err.Error()))
		return
	}
	if len(fields) == 0 {
		u.listResources(ctx, servers)
		return
	}
	if len(fields) != 2 {
		u.println(u.st.dim("(/attach SERVER URI attaches a resource to your next message; /attach alone lists them)"))
		return
	}
	name, uri := fields[0], fields[1]
	var found *mcpServer
	for i, s := range servers {
		// The workspace's server of that name stands before $JEAN2_HOME's, as its tools do.
		if s.Name == name && (found == nil || s.WorkspaceID != "") {
			found = &servers[i]
		}
	}
	if found == nil {
		u.println(u.st.red(fmt.Sprintf("No MCP server %q for this session: /attach lists the connected ones.", termtext.Line(name))))
		return
	}
	a := attachment{Server: found.Name, WorkspaceID: found.WorkspaceID, URI: uri}
	for _, have := range u.attached {
		if have == a {
			u.println(u.st.dim("(already attached)"))
			return
		}
	}
	u.attached = append(u.attached, a)
	note := ""
	if found.State != "connected" {
		note = fmt.Sprintf("; %s is %s now, and must be connected when you send", found.Name, found.State)
	}
	u.println(u.st.dim(fmt.Sprintf("(attached %s of %s: it is read and sent with your next message%s; /detach drops it)",
		termtext.Line(uri), found.Name, note)))
}

// listResources prints the resources of the connected servers and the attached ones.
func (u *chatUI) listResources(ctx context.Context, servers []mcpServer) {
	shown := 0
	for _, s := range servers {
		if s.State != "connected" {
			u.println(u.st.dim(fmt.Sprintf("  %s: %s", s.Name, s.State)))
			continue
		}
		q := ""
		if s.WorkspaceID != "" {
			q = "?workspaceId=" + url.QueryEscape(s.WorkspaceID)
		}
		var cat struct {
			Resources []struct {
				URI      string `json:"uri"`
				Name     string `json:"name"`
				Title    string `json:"title"`
				MIMEType string `json:"mimeType"`
			} `json:"resources"`
		}
		if err := u.api.Call(ctx, http.MethodGet, "/api/mcp/servers/"+url.PathEscape(s.Name)+"/catalog"+q, nil, &cat); err != nil {
			u.println(u.st.red(fmt.Sprintf("  %s: %v", s.Name, err)))
			continue
		}
		for _, r := range cat.Resources {
			title := r.Title
			if title == "" {
				title = r.Name
			}
			mime := ""
			if r.MIMEType != "" {
				mime = " (" + r.MIMEType + ")"
			}
			u.println(fmt.Sprintf("  /attach %s %s", s.Name, termtext.Line(r.URI)) + u.st.dim("  "+termtext.Line(title)+termtext.Line(mime)))
			shown++
		}
	}
	if shown == 0 {
		u.println(u.st.dim("(no connected MCP server lists a resource; mcp.json names the servers, the web client's Settings shows their state)"))
	}
	for _, a := range u.attached {
		u.println(u.st.dim(fmt.Sprintf("(attached to your next message: %s of %s)", termtext.Line(a.URI), a.Server)))
	}
}

// detach runs /detach: the attached resources are dropped.
func (u *chatUI) detach() {
	if len(u.attached) == 0 {
		u.println(u.st.dim("(nothing is attached)"))
		return
	}
	u.println(u.st.dim(fmt.Sprintf("(dropped %d attached resource(s))", len(u.attached))))
	u.attached = nil
}

// attachmentsNote says what a user's message carries beside its text: images (a terminal
// does not draw them) and MCP resources, by URI and server.
func attachmentsNote(parts []store.Part) string {
	images := 0
	var notes []string
	for _, p := range parts {
		switch p.Kind {
		case store.PartImage:
			images++
		case store.PartResource:
			var info store.ResourceInfo
			_ = json.Unmarshal([]byte(p.Args), &info)
			size := len(p.Text) + len(p.Data)
			if info.Path != "" { // a workspace file mentioned in the web client (@path)
				notes = append(notes, fmt.Sprintf("file @%s, %s", termtext.Line(info.Path), sizeText(size)))
				continue
			}
			notes = append(notes, fmt.Sprintf("resource %s of %s, %s", termtext.Line(info.URI), termtext.Line(info.Server), sizeText(size)))
		}
	}
	switch images {
	case 0:
	case 1:
		notes = append([]string{"1 image"}, notes...)
	default:
		notes = append([]string{fmt.Sprintf("%d images", images)}, notes...)
	}
	if len(notes) == 0 {
		return ""
	}
	return " [" + strings.Join(notes, "; ") + "]"
}

func sizeText(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
