package hub

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

// releaseTool asks which environment and then for permission, and reports what it got.
const releaseTool = `import type { ToolDefinition, ToolContext } from '@jean2/sdk';
export const definition: ToolDefinition = {
  name: 'release', description: 'asks before releasing', inputSchema: { type: 'object', properties: {} },
};
export async function execute(input: any, ctx: ToolContext): Promise<any> {
  const env = await ctx.ask({ type: 'single_select', target: 'human', question: 'Release to?',
    options: [{ label: 'Staging', value: 'staging' }, { label: 'Production', value: 'prod' }] });
  const ok = await ctx.ask({ type: 'permission', question: 'Release to ' + env + '?', risk: 'high', resource: 'deploy' });
  return { success: true, result: { env, ok } };
}
`

// A real tool in a real Node worker asks through the hub; a client watching the session sees
// ask.pending, answers from another goroutine, and the tool gets each answer.
func TestAskThroughRealWorker(t *testing.T) {
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		t.Skip("node is not installed at /usr/bin/node")
	}
	f := newFixture(t, Options{})
	root := t.TempDir()
	layout, err := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return filepath.Join(root, "home")
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.Ensure(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(layout.Tools, "release")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"package.json": `{"name":"release","version":"1.0.0","private":true,"type":"module","dependencies":{"@jean2/sdk":"^0.9.0"}}`,
		"tool.ts":      releaseTool,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{
		Layout: layout, NodePath: "/usr/bin/node", RuntimePreference: "node", Logger: slog.New(slog.DiscardHandler),
		ServerEnv: []string{"PATH=/usr/bin:/bin"}, IdleTimeout: time.Minute, KillGrace: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Close(cctx)
	}()

	client := f.attach()
	answered := make(chan error, 1)
	go func() { // the client: answer each ask as it appears
		var err error
		defer func() { answered <- err }()
		for _, answer := range []string{`"prod"`, `{"granted":true,"duration":"session"}`} {
			var p AskPendingPayload
			for p.Ask.ID == "" {
				select {
				case ev, ok := <-client.Events():
					if !ok {
						err = client.Err()
						return
					}
					if ev.Type != EventAskPending {
						continue
					}
					if err = json.Unmarshal(ev.Payload, &p); err != nil {
						return
					}
				case <-time.After(waitLimit):
					err = context.DeadlineExceeded
					return
				}
			}
			if err = f.hub.Answer(ctx, f.sid, p.Ask.ID, json.RawMessage(answer)); err != nil {
				return
			}
		}
	}()

	cctx, cancel := context.WithTimeout(ctx, 2*waitLimit)
	defer cancel()
	out := h.Invoke(cctx, host.Call{
		Tool: "release", Args: json.RawMessage(`{}`), CallID: "call_release_1", SessionID: f.sid,
		Workspace: host.Workspace{ID: "w1", Path: ws}, Asker: f.hub.Asker(f.sid),
	})
	if err := <-answered; err != nil {
		t.Fatalf("the client: %v", err)
	}
	if !out.Result.Success {
		t.Fatalf("the tool failed: %+v", out.Result)
	}
	var got struct {
		Env string `json:"env"`
		OK  bool   `json:"ok"`
	}
	if err := json.Unmarshal(out.Result.Result, &got); err != nil || got.Env != "prod" || !got.OK {
		t.Fatalf("the tool got %s (%v)", out.Result.Result, err)
	}

	// The log holds both asks with the tool and call that made them, and both answers.
	evs, err := f.db.EventsAfter(ctx, f.sid, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range evs {
		switch ev.Type {
		case EventAskPending:
			var p AskPendingPayload
			_ = json.Unmarshal(ev.Payload, &p)
			if p.Ask.Tool != "release" || p.Ask.CallID != "call_release_1" {
				t.Fatalf("pending ask %+v does not name the call", p.Ask)
			}
			kinds = append(kinds, "pending:"+p.Ask.Ask.Type)
		case EventAskResolved:
			var r AskResolvedPayload
			_ = json.Unmarshal(ev.Payload, &r)
			kinds = append(kinds, r.Outcome+":"+string(r.Answer))
		}
	}
	want := []string{"pending:" + tool.AskSingleSelect, `answered:"prod"`, "pending:" + tool.AskPermission, `answered:{"granted":true,"duration":"session"}`}
	if len(kinds) != len(want) {
		t.Fatalf("ask events %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("ask events %v, want %v", kinds, want)
		}
	}
}
